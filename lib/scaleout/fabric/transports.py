"""Transports on a fabric: published RDMA / TCP measurements, and α across a fabric.

:func:`transport_measurements` reads ``data/transports.toml`` (latency and CPU cost of
InfiniBand, RoCE v2, kernel TCP and kernel-bypass stacks, each with its source).
:func:`fabric_alpha` adds a fabric's extra switches and cable to a catalog link's
end-to-end latency, giving the α of the α-β model (:mod:`scaleout.collectives`, which
names its sources), and :func:`collective_latency_term` the latency part of
a collective's time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import catalog, collectives, units
from ..catalog import Entry, cached_entries, entries_where, field_of
from .clos import DEFAULT_SWITCH_LATENCY_NS, ClosDesign
from .planes import MultiPlaneDesign

#: Transports of ``data/transports.toml``.
TRANSPORTS = ("InfiniBand", "RoCE v2", "kernel TCP", "kernel-bypass")
#: Units its figures may be in.
TRANSPORT_UNITS = ("us", "Gb/s per core", "million messages/s per core")


@dataclass(frozen=True)
class TransportMeasurement(Entry):
    """A published measurement of a transport's latency or CPU cost (``data/transports.toml``)."""

    name: str = field_of("", "short name of the measurement")
    transport: str = field_of("", "'InfiniBand', 'RoCE v2', 'kernel TCP' or 'kernel-bypass'",
                        choices=TRANSPORTS)
    metric: str = field_of("", "what was measured, e.g. 'one-way latency'")
    value: float = field_of("", "the figure, in `unit`")
    unit: str = field_of("", "'us', 'Gb/s per core', 'million messages/s per core'",
                   choices=TRANSPORT_UNITS)
    conditions: str = field_of("", "message size, hardware, load: what the figure depends on")
    year: int = field_of("year", "year of publication")
    source: str = field_of("", "where the figure was published")


_transports = cached_entries("transports.toml", "measurement", TransportMeasurement)


def transport_measurements(transport: str | None = None) -> list[TransportMeasurement]:
    """Published RDMA / TCP measurements, optionally of one transport, in file order."""
    return entries_where(_transports(), "transport", transport)


def fabric_alpha(link, design: ClosDesign | MultiPlaneDesign | None = None,
                 switch_latency_ns: float = DEFAULT_SWITCH_LATENCY_NS,
                 lengths_m: Mapping[str, float] | None = None) -> collectives.AlphaBeta:
    """α and B of one step across a fabric: the transport's end-to-end latency (catalog
    ``latency_us``: NIC, software and one switch) plus the fabric's extra switches and cable.

    ``link`` is a catalog link (``"InfiniBand NDR"``, ``"TCP/IP 400GbE"``). With a
    ``design`` the worst-case path adds ``(hops − 1) × switch_latency_ns`` and its
    propagation delay (:meth:`ClosDesign.worst_case_latency_s`).
    """
    spec = catalog.link(link)
    extra = 0.0
    if design is not None:
        path = design.worst_case_latency_s(switch_latency_ns, lengths_m)
        extra = path - units.ns_to_seconds(switch_latency_ns)
    return collectives.AlphaBeta(spec.latency_s + max(extra, 0.0), spec.bandwidth_bytes_s)


def collective_latency_term(op: str, n: int, link,
                            design: ClosDesign | MultiPlaneDesign | None = None,
                            algorithm: str = "ring",
                            switch_latency_ns: float = DEFAULT_SWITCH_LATENCY_NS) -> float:
    """The latency term ``steps × α`` of a collective over ``link`` across ``design``, seconds.

    The α-β time of a zero-byte collective (:func:`scaleout.collectives.collective_time`)
    with α from :func:`fabric_alpha`: a ring all-reduce of n GPUs pays ``2(n−1)·α``.
    """
    return float(collectives.collective_time(
        op, 0.0, n, fabric_alpha(link, design, switch_latency_ns), algorithm))
