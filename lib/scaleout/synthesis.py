"""Synthesis: scale-up against scale-out, and one cluster plan built from every module.

This module adds no formula of its own: it composes the others.

* **Memory against message semantics** (:func:`semantics_table`, :func:`transfer_time_s`).
  Inside a scale-up domain (NVLink, Infinity Fabric, UALink) a GPU reaches another's memory
  with loads, stores and atomics; across the scale-out network it sends messages (RDMA over
  InfiniBand or RoCE v2, or kernel TCP). The per-step latencies are the catalog's
  (``data/links.toml``; measurements behind them in ``data/transports.toml``); the cost of a
  transfer and the latency term of a collective are :mod:`scaleout.collectives`' α-β model.
* **Scale-up domain designs as data** (``data/scaleup_domains.toml``, :class:`ScaleupDomain`):
  boards, racks, chassis super-nodes and a standard, with their accelerators, bandwidth, lane
  rate, electrical or optical links and switch tiers; lanes and fibres per accelerator come
  from :mod:`scaleout.optics`.
* **Domain size against the plan** (:func:`compare_domains`): the planner's best layout and
  step time (:func:`scaleout.plan.search` with ``gpus_per_node``) for each domain size.
* **One cluster plan** (:func:`cluster_plan`): the planner's layout, the scale-out fabric for
  the GPUs' network ports (:func:`scaleout.fabric.size_multiplane`) and its optics bill
  (:func:`scaleout.optics.fabric_bill`), failures, checkpoints and goodput at that size
  (:mod:`scaleout.reliability`), and the wall-clock days they add up to;
  :func:`design_cluster` picks the smallest GPU count that meets a deadline.

Bandwidths are per direction; times in seconds unless a name says otherwise. Taught in
``notebooks/12_scale_up_vs_scale_out.ipynb``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import catalog, collectives, fabric, optics, plan, reliability, units
from . import formatting as fmt
from .catalog import DATA_DIR, GPU, Entry, Link, ModelSpec, field_of, load_entries, lookup
from .checks import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
)
from .collectives import NodeNetwork

__all__ = [
    "DEFAULT_SEMANTICS_LINKS",
    "KINDS",
    "MEDIA",
    "OPENNESS",
    "SEMANTICS",
    "ClusterPlan",
    "DomainComparison",
    "DomainOption",
    "FabricPlan",
    "ReliabilityPlan",
    "ScaleupDomain",
    "TransferRow",
    "cluster_plan",
    "compare_domains",
    "default_storage_gbytes_s",
    "default_switch",
    "design_cluster",
    "domain_lanes",
    "fibre_delay_s",
    "load_domains",
    "reliability_at",
    "report_cluster",
    "report_model",
    "scale_across_alpha",
    "scaleout_fabric",
    "scaleup_domain",
    "scaleup_domain_names",
    "scaleup_domains",
    "scaleup_optics",
    "semantics_of",
    "semantics_table",
    "transfer_time_s",
]

#: How a link moves data: loads and stores, RDMA messages, or kernel TCP messages.
SEMANTICS = ("memory (load/store)", "message (RDMA)", "message (kernel TCP)")
#: The links :func:`semantics_table` compares by default: one of each kind.
DEFAULT_SEMANTICS_LINKS = ("NVLink 5", "InfiniBand NDR", "RoCE v2 400GbE", "TCP/IP 400GbE")
KINDS = ("board", "rack", "super-node", "specification")
MEDIA = ("electrical", "optical")
OPENNESS = ("proprietary", "open standard")
_DOMAINS_FILE = DATA_DIR / "scaleup_domains.toml"


# =========================================================================== memory vs message
def semantics_of(link: str | Link) -> str:
    """How a catalog link moves data, one of :data:`SEMANTICS`.

    Scale-up links (NVLink, Infinity Fabric) and host buses (PCIe) map remote memory into the
    GPU's address space: **memory semantics**, loads and stores. Network ports exchange
    **messages**: RDMA (InfiniBand, RoCE v2: the NIC moves the bytes, no kernel on the path) or
    kernel TCP (every message through the operating system's stack). Read from the link's
    ``scope`` and ``rdma`` fields in ``data/links.toml``.
    """
    spec = catalog.link(link)
    if spec.scope in ("scale-up", "host"):
        return SEMANTICS[0]
    return SEMANTICS[1] if spec.rdma else SEMANTICS[2]


def transfer_time_s(link: str | Link, size_bytes):
    """Seconds to move ``size_bytes`` once from one GPU to another over ``link``: ``α + S/B``.

    The α-β time of a one-step transfer between two GPUs (a broadcast of two,
    :func:`scaleout.collectives.collective_time`), with α the catalog's per-step latency.
    Array-friendly in ``size_bytes``.
    """
    return collectives.collective_time("broadcast", size_bytes, 2, catalog.link(link))


@dataclass(frozen=True)
class TransferRow:
    """One link as :func:`semantics_table` compares it (times in microseconds)."""

    link: str
    technology: str
    semantics: str
    latency_us: float
    gbytes_s: float
    #: one transfer of ``message_bytes``: α + S/B
    transfer_us: float
    #: the latency term (steps × α) of the collective over ``n_gpus``
    alpha_term_us: float
    #: the whole collective of ``message_bytes`` over ``n_gpus``
    collective_us: float
    #: message size at which the collective's latency and bandwidth terms are equal
    crossover_bytes: float
    #: host CPU cores busy at line rate (kernel TCP pays them; RDMA and NVLink do not)
    host_cores: float

    @property
    def alpha_share(self) -> float:
        """Share of the collective's time that is latency: ``alpha_term / collective``."""
        return self.alpha_term_us / self.collective_us if self.collective_us else 0.0


def semantics_table(links: Sequence[str | Link] = DEFAULT_SEMANTICS_LINKS, *,
                    message_bytes: float = 256.0, n_gpus: int = 72, op: str = "all_reduce",
                    algorithm: str = "ring") -> tuple[TransferRow, ...]:
    """Memory against message semantics: latency, one transfer and a collective's α term.

    For each link: its semantics (:func:`semantics_of`), one transfer of ``message_bytes``
    (:func:`transfer_time_s`), the latency term of ``op`` over ``n_gpus``
    (:func:`scaleout.fabric.collective_latency_term`: ``2(n−1)·α`` for a ring all-reduce)
    and the whole collective (:func:`scaleout.collectives.collective_time`), the size at
    which latency and bandwidth terms are equal (:func:`scaleout.collectives.crossover_bytes`)
    and the host cores the link keeps busy (:func:`scaleout.collectives.host_cpu_cores`).
    Sorted by latency, fastest first. 256 bytes is the largest single request of UALink 1.0
    and a cache-line-sized access of a load/store fabric.
    """
    size = check_positive("message_bytes", message_bytes, allow_zero=True)
    n = check_int("n_gpus", n_gpus, minimum=2)
    rows = []
    for name in links:
        spec = catalog.link(name)
        rows.append(TransferRow(
            link=spec.name, technology=spec.technology, semantics=semantics_of(spec),
            latency_us=spec.latency_us, gbytes_s=spec.gbytes_s,
            transfer_us=1e6 * float(transfer_time_s(spec, size)),
            alpha_term_us=1e6 * fabric.collective_latency_term(op, n, spec, algorithm=algorithm),
            collective_us=1e6 * float(collectives.collective_time(op, size, n, spec, algorithm)),
            crossover_bytes=collectives.crossover_bytes(op, n, spec, algorithm),
            host_cores=collectives.host_cpu_cores(spec)))
    if not rows:
        raise ValueError("links must name at least one link of data/links.toml")
    return tuple(sorted(rows, key=lambda r: (r.latency_us, r.link)))


# =========================================================================== domain designs
@dataclass(frozen=True)
class ScaleupDomain(Entry):
    """One scale-up domain design (``data/scaleup_domains.toml``, whose header has the fields)."""

    name: str = field_of("", "catalog name")
    vendor: str = field_of("", "maker or standards body")
    kind: str = field_of("", "one of KINDS")
    accelerators: int = field_of("accelerators",
                                 "accelerators in one domain (the most, for a spec)")
    inner_medium: str = field_of("", "links inside a chassis: 'electrical' or 'optical'")
    switch_tiers: int = field_of("tiers", "switch levels: 0 direct mesh, 1, or 2 (L1 + L2)",
                           allow_zero=True)
    openness: str = field_of("", "'proprietary' or 'open standard'")
    year: int = field_of("year", "year of availability or publication")
    source: str = field_of("", "where the figures come from")
    link_gbytes_s: float | None = field_of("GB/s",
                                           "scale-up bandwidth per accelerator, one direction",
                                     default=None)
    lane_gbps: int | None = field_of("Gb/s", "SerDes class of the lanes: 112 or 224", default=None)
    outer_medium: str | None = field_of("", "links between chassis; None for one chassis",
                                  default=None)
    chassis: int | None = field_of("chassis", "chassis (boards, trays, nodes) per domain",
                                   default=None)
    l1_switches_per_chassis: int | None = field_of(
        "switches", "first-level switch chips in each chassis (two-tier domains)", default=None)
    l2_switches: int | None = field_of("switches", "second-level switch chips joining the chassis",
                                 default=None)
    gpu: str | None = field_of("", "the accelerator's name in data/gpus.toml", default=None)
    link: str | None = field_of("", "the scale-up link's name in data/links.toml", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        label = f"ScaleupDomain {self.name!r}"
        for name, allowed in (("kind", KINDS), ("inner_medium", MEDIA),
                              ("openness", OPENNESS)):
            _check_member(label, name, getattr(self, name), allowed)
        if self.outer_medium is not None:
            _check_member(label, "outer_medium", self.outer_medium, MEDIA)
        if self.lane_gbps is not None:
            _check_member(label, "lane_gbps", self.lane_gbps, tuple(optics.LANE_DATA_GBPS))
        if self.switch_tiers > 2:
            raise ValueError(f"{label}: field 'switch_tiers' must be 0, 1 or 2, "
                             f"got {self.switch_tiers!r}")
        if self.chassis is not None and self.chassis > 1 and self.outer_medium is None:
            raise ValueError(f"{label}: field 'outer_medium' is missing: {self.chassis} chassis "
                             "must be joined by 'electrical' or 'optical' links")
        for name in ("l1_switches_per_chassis", "l2_switches"):
            if getattr(self, name) is not None and self.switch_tiers != 2:
                raise ValueError(f"{label}: field {name!r} is only meaningful with "
                                 f"switch_tiers = 2, got switch_tiers = {self.switch_tiers}")
        if self.chassis is not None and self.chassis > self.accelerators:
            raise ValueError(f"{label}: field 'chassis' ({self.chassis}) exceeds the "
                             f"{self.accelerators} accelerators")

    @property
    def link_gbps(self) -> float | None:
        """Scale-up bandwidth per accelerator, Gb/s per direction (None if unpublished)."""
        return None if self.link_gbytes_s is None else units.gbytes_s_to_gbps(self.link_gbytes_s)

    @property
    def lanes_per_accelerator(self) -> int | None:
        """Lanes each way one accelerator needs at the domain's own lane rate
        (:func:`scaleout.optics.lanes_needed`); None where either figure is unpublished."""
        if self.link_gbps is None or self.lane_gbps is None:
            return None
        return int(optics.lanes_needed(self.link_gbps, self.lane_gbps))

    @property
    def optical_between_chassis(self) -> bool:
        """Whether the links joining its chassis are optical."""
        return self.outer_medium == "optical"


def _check_member(label: str, name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{label}: field {name!r} must be one of "
                         f"{', '.join(map(repr, allowed))}; got {value!r}")


def load_domains(path: Path | str = _DOMAINS_FILE) -> dict[str, ScaleupDomain]:
    """Load and check ``data/scaleup_domains.toml`` (or another file of its shape).

    Beyond :func:`scaleout.catalog.load_entries`' field checks: ``gpu`` must name a GPU of
    ``data/gpus.toml`` and ``link`` a link of ``data/links.toml``.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field.
    """
    path = Path(path)
    found = load_entries(path, "domain", ScaleupDomain)
    gpus, links = set(catalog.gpu_names()), set(catalog.link_names())
    for i, d in enumerate(found.values(), start=1):
        where = f"{path.name}: [[domain]] entry {i} ({d.name!r})"
        if d.gpu is not None and d.gpu not in gpus:
            raise ValueError(f"{where}: field 'gpu' is {d.gpu!r}, not a GPU of gpus.toml")
        if d.link is not None and d.link not in links:
            raise ValueError(f"{where}: field 'link' is {d.link!r}, not a link of links.toml")
    return found


@functools.cache
def _domains() -> dict[str, ScaleupDomain]:
    return load_domains()


def scaleup_domain(spec: str | ScaleupDomain) -> ScaleupDomain:
    """A domain design by name or alias (``"GB200 NVL72"``, ``"CloudMatrix384"``, ``"UALink"``)."""
    if isinstance(spec, ScaleupDomain):
        return spec
    return lookup("scale-up domain", _domains(), spec)


def scaleup_domains() -> list[ScaleupDomain]:
    """Every domain design, in file order (smallest first)."""
    return list(_domains().values())


def scaleup_domain_names() -> list[str]:
    """Domain design names, in file order."""
    return list(_domains())


def domain_lanes(spec: str | ScaleupDomain, lane_gbps: int) -> dict[str, int | None]:
    """Lanes and parallel-optics fibres one accelerator of a domain needs at a lane rate.

    ``{"lanes": ..., "fibres": ...}`` per accelerator for its whole scale-up bandwidth, one
    direction's lanes (:func:`scaleout.optics.lanes_needed`) and the fibres of parallel
    optics, both directions (:func:`scaleout.optics.fibres_needed`), were those links
    optical: 112G lanes need twice the lanes and fibres of 224G. None where the domain's
    bandwidth is unpublished.
    """
    d = scaleup_domain(spec)
    lane = check_choice("lane_gbps", lane_gbps, tuple(optics.LANE_DATA_GBPS))
    if d.link_gbps is None:
        return {"lanes": None, "fibres": None}
    return {"lanes": int(optics.lanes_needed(d.link_gbps, lane)),
            "fibres": int(optics.fibres_needed(d.link_gbps, lane))}


def scaleup_optics(spec: str | ScaleupDomain, choice: str = "lpo", *, link_gbps: float = 800.0,
                   length_m: float = 30.0, lane_gbps: int | None = None) -> optics.FabricBill:
    """The optics of the links between a super-node's chassis (its L1 to L2 switches).

    In a non-blocking two-tier domain every accelerator's whole scale-up bandwidth leaves its
    chassis once, so the optical tier carries ``accelerators × link_gbps`` per direction:
    ``⌈that / link_gbps⌉`` links of ``link_gbps`` (an assumption about the wiring: the
    sources give the topology, not the module count), each priced by
    :func:`scaleout.optics.fabric_bill` with ``choice`` (no copper: the links leave the
    chassis).

    Raises
    ------
    ValueError
        For a domain whose chassis are not joined optically, or whose bandwidth is unpublished.
    """
    d = scaleup_domain(spec)
    if not d.optical_between_chassis:
        raise ValueError(f"scale-up domain {d.name!r} joins its chassis with "
                         f"{d.outer_medium or 'no'} links: no optics between chassis to price")
    if d.link_gbps is None:
        raise ValueError(f"scale-up domain {d.name!r} has no published bandwidth per accelerator")
    speed = check_positive("link_gbps", link_gbps)
    links = math.ceil(d.accelerators * d.link_gbps / speed - 1e-9)
    group = fabric.LinkGroup("chassis-L2", links, check_positive("length_m", length_m), speed)
    return optics.fabric_bill([group], choice, lane_gbps=lane_gbps, copper=False)


# =========================================================================== scale-across
def fibre_delay_s(distance_m, ns_per_m: float = fabric.FIBRE_NS_PER_M):
    """One-way propagation delay over ``distance_m`` of fibre, seconds (about 4.9 ns per metre:
    :data:`scaleout.fabric.FIBRE_NS_PER_M`). Array-friendly."""
    d = check_array("distance_m", distance_m)
    out = units.ns_to_seconds(d * check_positive("ns_per_m", ns_per_m))
    return float(out) if np.ndim(out) == 0 else out


def scale_across_alpha(link: str | Link, distance_m: float) -> collectives.AlphaBeta:
    """α and B of one step between two sites ``distance_m`` apart over a network port.

    The port's own per-step latency (``data/links.toml``) plus the fibre's one-way delay
    (:func:`fibre_delay_s`): what every step of a collective that spans buildings or data
    centres pays. Feed it to :func:`scaleout.collectives.collective_time`.
    """
    spec = catalog.link(link)
    return collectives.AlphaBeta(spec.latency_s + fibre_delay_s(distance_m),
                                 spec.bandwidth_bytes_s)


# =========================================================================== domain size vs plan
@dataclass(frozen=True)
class DomainOption:
    """The planner's best layout when ``domain_gpus`` GPUs share one scale-up domain.

    ``placed_as`` is the domain size the plan was searched and evaluated with: ``domain_gpus``
    itself, or a smaller compared size that divides it when the layout placed in blocks of that
    size is faster (see :func:`compare_domains`).
    """

    domain_gpus: int
    placed_as: int
    plan: plan.Plan
    result: plan.PlanResult
    n_evaluated: int
    n_fit: int
    search: plan.SearchResult = field(repr=False, compare=False)

    @property
    def label(self) -> str:
        """The plan, as the planner labels it (and how it is placed, if in smaller blocks)."""
        if self.placed_as == self.domain_gpus:
            return self.plan.label
        return f"{self.plan.label} (placed as {self.placed_as}-GPU blocks)"

    @property
    def step_s(self) -> float:
        """Seconds per iteration."""
        return self.result.step_s

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation (PaLM App. B)."""
        return self.result.mfu

    @property
    def tokens_per_s(self) -> float:
        """Training throughput of the whole cluster."""
        return self.result.tokens_per_s

    @property
    def training_days(self) -> float | None:
        """Days of computing for the token budget, without failures (None without a budget)."""
        return self.result.training_days

    @property
    def tp_within_domain(self) -> bool:
        """Whether the tensor-parallel group stays inside the scale-up domain."""
        return self.plan.tp <= self.domain_gpus

    def explain(self, k: int = 2) -> str:
        """The planner's own sentences about this search (:func:`scaleout.plan.explain`)."""
        return plan.explain(self.search, k)

    def interleaving_blocker(self, v: int = 2) -> str | None:
        """Why this layout could not run the interleaved schedule with ``v`` chunks, in the
        planner's own words (:func:`scaleout.plan.evaluate`'s check), or None if it could.

        A layout that already interleaves returns None.
        """
        if self.plan.interleave > 1:
            return None
        s = self.search
        trial = dataclasses.replace(self.plan, interleave=check_int("v", v, minimum=2))
        try:
            plan.evaluate(s.model_spec or s.model, s.gpu, trial, s.network,
                          calibration=s.calibration, recipe=s.recipe,
                          uneven_layers=s.uneven_layers,
                          allow_tp_across_nodes=s.allow_tp_across_nodes)
        except ValueError as exc:
            return str(exc)
        return None


@dataclass(frozen=True)
class DomainComparison:
    """The best plan for each scale-up domain size of one cluster (:func:`compare_domains`)."""

    model: str
    gpu: str
    n_gpus: int
    global_batch: int
    tokens: float | None
    options: tuple[DomainOption, ...]
    #: domain sizes left out, with the reason (no whole domains, no valid or fitting plan)
    skipped: dict[int, str]

    @property
    def sizes(self) -> tuple[int, ...]:
        """Domain sizes compared, ascending."""
        return tuple(o.domain_gpus for o in self.options)

    def option(self, domain_gpus: int) -> DomainOption:
        """The option of one domain size."""
        by_size = {o.domain_gpus: o for o in self.options}
        return by_size[check_choice("domain_gpus", domain_gpus, list(by_size))]

    @property
    def fastest(self) -> DomainOption:
        """The option with the shortest step (the smaller domain on a tie)."""
        return min(self.options, key=lambda o: (o.step_s, o.domain_gpus))

    def speedup(self, larger: int, smaller: int) -> float:
        """How many times faster a step is with ``larger`` GPUs per domain than ``smaller``."""
        return self.option(smaller).step_s / self.option(larger).step_s

    def gap(self, larger: int, smaller: int) -> dict[str, float]:
        """Seconds per iteration by which each part of the step (:data:`scaleout.plan.STEP_PARTS`)
        of ``smaller``'s best plan exceeds ``larger``'s; the values add up to the difference of
        the two step times (negative where the larger domain's plan spends more)."""
        small, large = self.option(smaller).result.step, self.option(larger).result.step
        return {part: small[part] - large[part] for part in plan.STEP_PARTS}


def _domain_size(value, name: str = "domain_sizes") -> int:
    """A domain size from an int or a catalog domain name (its accelerators); ``name`` is the
    caller's parameter, for messages."""
    if isinstance(value, str):
        return lookup("scale-up domain", _domains(), value, name).accelerators
    return check_int(name, value)


def compare_domains(model: str | ModelSpec, gpu: str | GPU, n_gpus: int, global_batch: int,
                    domain_sizes: Iterable[int | str] = (8, 72), *, tokens: float | None = None,
                    inter: str | None = None, nested: bool = True,
                    network: NodeNetwork | None = None, **search_kw) -> DomainComparison:
    """For each scale-up domain size, the planner's best plan, its step time and training days.

    Each size ``d`` runs :func:`scaleout.plan.search` with ``gpus_per_node=d`` (the GPU's
    scale-up link inside a domain, ``inter`` or its usual network port between domains,
    :func:`scaleout.plan.default_network`) and keeps the fastest plan that fits, evaluated in
    full (:meth:`scaleout.plan.SearchResult.result`).

    With ``nested`` (the default), a domain of ``d`` GPUs may also run the best layout of any
    smaller compared size ``e`` that divides ``d``, placed in blocks of ``e`` GPUs: the blocks
    inside one domain are joined by NVLink too, but are modelled as joined by the network, so
    the time is an upper bound. Each size keeps the faster (``placed_as`` says which), so a
    domain is never slower than a smaller one that divides it. Without it, the planner's
    placement (as many data-parallel ranks per domain as fit) can make a larger domain
    slower when that count does not divide the replicas: the group then falls back to one
    flat ring over the network.

    A size is skipped, with its reason, when the GPUs do not fill whole domains or no plan is
    valid or fits; if every size is skipped, the reasons are raised.

    Parameters
    ----------
    model, gpu, n_gpus, global_batch
        As :func:`scaleout.plan.search` takes them.
    domain_sizes
        GPUs per scale-up domain (or catalog domain names, ``"GB200 NVL72"``).
    tokens
        A token budget: fills ``training_days``.
    network
        A measured :class:`~scaleout.collectives.NodeNetwork` (``scaleout.lab.calibrate``):
        its links for every domain size instead of the datasheet's (``inter`` is then
        ignored for the step time).
    search_kw
        Passed to :func:`scaleout.plan.search` (``zero_stages``, ``max_micro_batch``,
        ``calibration``, ...).

    Raises
    ------
    ValueError
        An unknown model or GPU, an empty cluster, no domain size; a
        :class:`scaleout.plan.NoPlanError` (a ``ValueError``) when no size has a plan.
    """
    check_bool("nested", nested)
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    n = check_int("n_gpus", n_gpus)
    B = check_int("global_batch", global_batch)
    if tokens is not None:
        tokens = check_positive("tokens", tokens)
    sizes = sorted({_domain_size(d) for d in domain_sizes})
    if not sizes:
        raise ValueError("domain_sizes must name at least one scale-up domain size")
    own: dict[int, DomainOption] = {}
    skipped: dict[int, str] = {}
    for d in sizes:
        if n % d:
            skipped[d] = (f"{n:,} GPUs do not fill whole {d}-GPU domains "
                          f"({n / d:.2f} domains)")
            continue
        try:
            fab = (plan.default_network(g, d, inter) if network is None
                   else dataclasses.replace(network, gpus_per_node=d))
            found = plan.search(m, g, n, B, fab, tokens=tokens, **search_kw)
        except plan.NoPlanError as exc:
            skipped[d] = str(exc)
            continue
        own[d] = DomainOption(d, d, found.plan(0), found.result(0), found.n_evaluated,
                              found.n_fit, found)
    options = []
    for d in sizes:
        pool = [o for e, o in own.items() if d % e == 0 and (nested or e == d)]
        if n % d or not pool:
            continue
        best = min(pool, key=lambda o: (o.step_s, -o.domain_gpus))
        options.append(best if best.domain_gpus == d
                       else dataclasses.replace(best, domain_gpus=d))
        skipped.pop(d, None)
    if not options:
        reasons = "; ".join(f"{d} GPUs per domain: {why}" for d, why in skipped.items())
        raise plan.NoPlanError(f"no domain size gives a plan for {m.name} on {n:,} × "
                               f"{g.name}: {reasons}")
    return DomainComparison(m.name, g.name, n, B, tokens, tuple(options), skipped)


# =========================================================================== scale-out fabric
def default_switch(link: str | Link, port_gbps: float | None = None) -> fabric.SwitchChip:
    """The switch chip a network port's fabric is built of, by default.

    InfiniBand ports need InfiniBand switches, Ethernet ports (RoCE, TCP) Ethernet ones: the
    newest chip of the family that lists ``port_gbps`` (default: the port's own rate) among
    its configurations, else the newest of the family (``data/switches.toml``).
    """
    spec = catalog.link(link)
    speed = (units.gbytes_s_to_gbps(spec.gbytes_s) if port_gbps is None
             else check_positive("port_gbps", port_gbps))
    family = "InfiniBand" if spec.technology.startswith("InfiniBand") else "Ethernet"
    chips = sorted((c for c in fabric.switch_chips() if c.family == family),
                   key=lambda c: c.year)
    if not chips:
        raise ValueError(f"no {family} switch chip in data/switches.toml for {spec.name!r}")
    listing = [c for c in chips if any(abs(p - speed) < 1e-9 for p in c.port_gbps)]
    return (listing or chips)[-1]


@dataclass(frozen=True)
class FabricPlan:
    """The scale-out fabric of a cluster's network ports and its optics
    (:func:`scaleout_fabric`)."""

    link: str
    nic_gbps: float
    switch: str
    design: fabric.MultiPlaneDesign
    bill: optics.FabricBill
    #: α of one step across the fabric's longest path (:func:`scaleout.fabric.fabric_alpha`)
    alpha_us: float

    @property
    def tiers(self) -> int:
        """Switch tiers of each plane."""
        return self.design.plane.tiers

    @property
    def switches(self) -> int:
        """Switches over all planes."""
        return self.design.switches

    @property
    def transceivers(self) -> int:
        """Optical module ends of the bill (copper links have none)."""
        return self.bill.transceivers

    @property
    def optics_power_w(self) -> float:
        """Watts of the fabric's modules and active cables."""
        return self.bill.power_w

    @property
    def optics_relative_cost(self) -> float:
        """Relative cost of the optics (1.0 = one 800G DSP DR8 module; the project's
        assumption, see ``data/optics.toml``)."""
        return self.bill.relative_cost


def scaleout_fabric(n_gpus: int, link: str | Link, *, switch: str | None = None,
                    planes: int = 1, oversubscription: float = 1.0, optics_choice: str = "dsp",
                    lane_gbps: int | None = None, lengths_m: Mapping[str, float] | None = None,
                    copper: bool = True) -> FabricPlan:
    """The Clos fabric joining ``n_gpus`` network ports of type ``link``, and its optics bill.

    One port per GPU (the DGX/HGX and NVL72 designs), split into ``planes`` ports of
    ``rate / planes`` on as many planes; switches of ``switch`` (default
    :func:`default_switch`) at the radix the chip offers at that speed; the fewest tiers that
    serve the GPUs (:func:`scaleout.fabric.size_multiplane`). The links are priced by
    :func:`scaleout.optics.fabric_bill` with ``optics_choice`` (DSP by default: scale-out
    favours DSP modules' reach and standard interoperability) at the cable lengths of
    ``lengths_m`` (:data:`scaleout.fabric.DEFAULT_LENGTHS_M` by default).
    """
    check_bool("copper", copper)
    n = check_int("n_gpus", n_gpus)
    port = catalog.link(link)
    if port.scope != "scale-out":
        raise ValueError(f"link {port.name!r} is a {port.scope} link; the scale-out fabric joins "
                         f"network ports: one of "
                         f"{', '.join(x.name for x in catalog.links() if x.scope == 'scale-out')}")
    p = check_int("planes", planes)
    nic = units.gbytes_s_to_gbps(port.gbytes_s)
    chip = fabric.switch_chip(switch) if switch is not None else default_switch(port, nic / p)
    design = fabric.size_multiplane(n, nic, p, radix=chip.radix(nic / p),
                                    oversubscription=oversubscription)
    lengths = dict(fabric.DEFAULT_LENGTHS_M)
    lengths.update(lengths_m or {})
    unknown = sorted(set(lengths) - set(fabric.LINK_TYPES))
    if unknown:
        check_choice("lengths_m key", unknown[0], fabric.LINK_TYPES)
    groups = design.link_groups(lengths["endpoint-leaf"], lengths["leaf-spine"],
                                lengths["spine-core"])
    choice = check_choice("optics_choice", optics_choice.lower() if isinstance(optics_choice, str)
                          else optics_choice, optics.CHOICES)
    bill = optics.fabric_bill(groups, choice, lane_gbps=lane_gbps, copper=copper)
    alpha = fabric.fabric_alpha(port, design, lengths_m=lengths)
    return FabricPlan(port.name, nic, chip.name, design, bill, alpha.latency_s * 1e6)


# =========================================================================== reliability
@dataclass(frozen=True)
class ReliabilityPlan:
    """Failures, checkpoints and goodput of one job at one size (:func:`reliability_at`)."""

    n_gpus: int
    study: str
    failures_per_day: float
    mtbf_h: float
    storage_gbytes_s: float
    checkpoint: reliability.CheckpointPlan
    restart_s: float
    #: the interval that maximises goodput exactly (Daly's model)
    interval_s: float
    #: Young's first-order interval, for comparison
    young_interval_s: float
    goodput: float

    @property
    def mtbf_s(self) -> float:
        """Mean time between failures, seconds."""
        return units.hours_to_seconds(self.mtbf_h)

    def wall_time_s(self, work_s: float) -> float:
        """Expected wall time of ``work_s`` of computing with these failures and checkpoints
        (:func:`scaleout.reliability.expected_run_time_s`)."""
        return float(reliability.expected_run_time_s(
            work_s, self.interval_s, self.checkpoint.blocking_s, self.mtbf_s, self.restart_s))


def default_storage_gbytes_s(n_gpus: int) -> float:
    """Storage write bandwidth for a cluster, GB/s: Llama 3's per GPU, times ``n_gpus``.

    An assumption: Llama 3's training cluster sustained 2 TB/s of checkpoint writes for its
    16,384 GPUs (``data/failures.toml``, figure ``llama3-storage-sustained``; arXiv 2407.21783
    Sec. 3.3.1); a cluster of another size is given the same bandwidth per GPU.
    """
    n = check_int("n_gpus", n_gpus)
    per_gpu = reliability.figure("llama3-storage-sustained").si / reliability.study(
        "llama3-405b").gpus
    return per_gpu * n / units.GB


def reliability_at(model: str | ModelSpec | float, n_gpus: int, *,
                   storage_gbytes_s: float | None = None, tp: int = 1, pp: int = 1,
                   study: str = "llama3-405b", gpus_per_server: int = 8,
                   detect_s: float | None = None, init_s: float | None = None) -> ReliabilityPlan:
    """Failures per day, the optimal checkpoint interval and the goodput of a job on ``n_gpus``.

    * failures: the study's rates (:func:`scaleout.reliability.failures_per_day`, servers of
      ``gpus_per_server`` GPUs: the unit a node failure takes out);
    * checkpoint: sharded and synchronous (:func:`scaleout.reliability.checkpoint_plan`), to
      ``storage_gbytes_s`` (default :func:`default_storage_gbytes_s`);
    * restart: a hot spare takes the failed server's place (no wait), after detection
      (default MegaScale's 10 minutes to detect and diagnose) and re-initialisation (default
      MegaScale's 30 s for 10,000 GPUs), plus the checkpoint's restore
      (:func:`scaleout.reliability.restart_time_s`, option ``"spares"``);
    * the interval that maximises goodput (:func:`scaleout.reliability.exact_optimal_interval_s`)
      and that goodput (:func:`scaleout.reliability.goodput`, Daly 2006).
    """
    n = check_int("n_gpus", n_gpus)
    gpus_per_server = check_int("gpus_per_server", gpus_per_server)
    reliability._params(model, "model")  # checked here so that messages name this parameter
    reliability._as_study_list(study, "study")
    storage = (default_storage_gbytes_s(n) if storage_gbytes_s is None
               else check_positive("storage_gbytes_s", storage_gbytes_s))
    ckpt = reliability.checkpoint_plan(model, n, storage_gbytes_s=storage, tp=tp, pp=pp)
    per_day = float(reliability.failures_per_day(n, study, gpus_per_node=gpus_per_server))
    mtbf_h = float(reliability.mtbf_h(n, study, gpus_per_node=gpus_per_server))
    mtbf_s = units.hours_to_seconds(mtbf_h)
    detect = (reliability.figure("megascale-detect-and-diagnose").si if detect_s is None
              else detect_s)
    init = reliability.figure("megascale-init-10k-gpus").si if init_s is None else init_s
    restart = reliability.restart_time_s("spares", detect_s=detect, restore_s=ckpt.restore_s,
                                         init_s=init)
    delta = ckpt.blocking_s
    interval = float(reliability.exact_optimal_interval_s(delta, mtbf_s))
    young = float(reliability.young_interval_s(delta, mtbf_s))
    good = float(reliability.goodput(interval, delta, mtbf_s, restart, write_s=ckpt.write_s))
    return ReliabilityPlan(n, reliability.study(study).name, per_day, mtbf_h, storage, ckpt,
                           restart, interval, young, good)


# =========================================================================== the cluster plan
@dataclass(frozen=True)
class ClusterPlan:
    """One cluster, end to end: layout, step time, fabric, optics, failures, days.

    ``domains`` compares the planner's best layout across scale-up domain sizes; ``chosen``
    is the one of ``gpus_per_node``. ``compute_days`` is the token budget at the chosen
    plan's throughput; ``wall_days`` adds checkpoints, lost work and restarts
    (:meth:`ReliabilityPlan.wall_time_s`).
    """

    model: str
    gpu: str
    n_gpus: int
    gpus_per_node: int
    global_batch: int
    tokens: float
    domains: DomainComparison
    chosen: DomainOption
    fabric: FabricPlan
    reliability: ReliabilityPlan
    compute_days: float
    wall_days: float

    @property
    def gpu_hours(self) -> float:
        """GPU-hours of the run, wall clock (idle time after failures included)."""
        return units.seconds_to_hours(units.days_to_seconds(self.wall_days)) * self.n_gpus

    @property
    def goodput(self) -> float:
        """Share of wall time that computes kept work."""
        return self.reliability.goodput

    def wall_days_of(self, domain_gpus: int) -> float:
        """Wall-clock days with another domain size's plan, the same failures and checkpoints."""
        days = self.domains.option(domain_gpus).training_days
        return units.seconds_to_days(self.reliability.wall_time_s(units.days_to_seconds(days)))

    def rows(self) -> list[tuple[str, str]]:
        """The plan as ``(what, value)`` rows for a table (numbers as people write them)."""
        c, f, r = self.chosen, self.fabric, self.reliability
        return [
            ("cluster", f"{fmt.count(self.n_gpus)} × {self.gpu}, {self.gpus_per_node} per "
                        "scale-up domain "
                        f"({fmt.plural(self.n_gpus // self.gpus_per_node, 'domain')})"),
            ("model, batch, tokens", f"{self.model}, {fmt.plural(self.global_batch, 'sequence')}, "
                                     f"{fmt.tokens(self.tokens)}"),
            ("best plan", c.label),
            ("step time, MFU", f"{fmt.duration(c.step_s)}, {fmt.percent(c.mfu)}"),
            ("compute time (no failures)", fmt.duration(units.days_to_seconds(self.compute_days))),
            ("scale-out fabric", f"{fmt.plural(f.design.planes, 'plane')} of "
                                 f"{fmt.bit_rate(f.design.plane.port_gbps * 1e9)} ports on "
                                 f"{f.switch}, {fmt.plural(f.tiers, 'tier')}, "
                                 f"{fmt.plural(f.switches, 'switch', 'switches')}"),
            ("optics", f"{fmt.count(f.transceivers)} module ends, {fmt.power(f.optics_power_w)}, "
                       f"relative cost {fmt.sig(f.optics_relative_cost)}"),
            ("failures", f"{fmt.sig(r.failures_per_day)} per day (one every "
                         f"{fmt.duration(units.hours_to_seconds(r.mtbf_h))})"),
            ("checkpoint", f"{fmt.bytes_si(r.checkpoint.total_bytes)} written in "
                           f"{fmt.duration(r.checkpoint.write_s)} every "
                           f"{fmt.duration(r.interval_s)}"),
            ("goodput", fmt.percent(r.goodput)),
            ("wall-clock time", fmt.duration(units.days_to_seconds(self.wall_days))),
            ("GPU-hours", fmt.large_count(self.gpu_hours)),
        ]


def cluster_plan(model: str | ModelSpec, gpu: str | GPU, n_gpus: int, global_batch: int,
                 tokens: float, *, gpus_per_node: int | str | None = None,
                 domain_sizes: Iterable[int | str] | None = None, inter: str | None = None,
                 planes: int = 1, switch: str | None = None, oversubscription: float = 1.0,
                 optics_choice: str = "dsp", lane_gbps: int | None = None,
                 lengths_m: Mapping[str, float] | None = None,
                 storage_gbytes_s: float | None = None, study: str = "llama3-405b",
                 gpus_per_server: int = 8, **search_kw) -> ClusterPlan:
    """Plan a training cluster end to end from every earlier module.

    1. The planner's best layout for each size in ``domain_sizes`` plus ``gpus_per_node``
       (:func:`compare_domains`); ``gpus_per_node`` (default: the GPU's usual scale-up
       domain, ``data/gpus.toml``) is the design's.
    2. The scale-out fabric of the GPUs' network ports ``inter`` (default: the GPU's usual
       port) and its optics bill (:func:`scaleout_fabric`).
    3. Failures, checkpoints, restarts and goodput at ``n_gpus`` (:func:`reliability_at`),
       the checkpoint sharded over the chosen plan's layout.
    4. Days: ``tokens`` at the plan's throughput, then with failures.

    Raises
    ------
    ValueError
        Bad input anywhere, naming the parameter; or no plan for the chosen domain size.
    """
    g = catalog.gpu(gpu)
    chosen_size = _domain_size(gpus_per_node if gpus_per_node is not None
                               else g.scaleup_domain_gpus, "gpus_per_node")
    tokens = check_positive("tokens", tokens)
    sizes = {chosen_size, *(_domain_size(d) for d in (domain_sizes or ()))}
    domains = compare_domains(model, g, n_gpus, global_batch, sizes, tokens=tokens,
                              inter=inter, **search_kw)
    if chosen_size not in domains.sizes:
        raise plan.NoPlanError(f"gpus_per_node={chosen_size}: {domains.skipped[chosen_size]}")
    chosen = domains.option(chosen_size)
    port = inter if inter is not None else g.scaleout_link
    if port is None:
        raise ValueError(f"gpu {g.name!r} has no usual network port in data/gpus.toml: pass "
                         "inter=<a scale-out link of data/links.toml>")
    net = scaleout_fabric(domains.n_gpus, port, switch=switch, planes=planes,
                          oversubscription=oversubscription, optics_choice=optics_choice,
                          lane_gbps=lane_gbps, lengths_m=lengths_m)
    rel = reliability_at(catalog.model(model), domains.n_gpus,
                         storage_gbytes_s=storage_gbytes_s, tp=chosen.plan.tp,
                         pp=chosen.plan.pp, study=study, gpus_per_server=gpus_per_server)
    compute_days = float(chosen.training_days)
    wall = units.seconds_to_days(rel.wall_time_s(units.days_to_seconds(compute_days)))
    return ClusterPlan(domains.model, domains.gpu, domains.n_gpus, chosen_size,
                       domains.global_batch, tokens, domains, chosen, net, rel, compute_days,
                       float(wall))


def report_model(p: Mapping[str, Any]) -> ModelSpec:
    """The cluster-plan report's model from its parameters: a catalog name, or ``"custom"``
    with ``custom_layers``, ``custom_hidden``, ``custom_heads``, ``custom_vocab`` (a
    GPT-shaped model; its sequence is ``seq_len``, or 2,048 when that is 0); or, when
    ``model_config`` names a Hugging Face ``config.json``, the model it describes
    (:func:`scaleout.configs.load_model`, read as data), whatever ``model_name`` says."""
    if p.get("model_config"):
        from . import configs

        return configs.load_model(Path(p["model_config"]), seq_len=p["seq_len"] or None)[0]
    if p["model_name"] != "custom":
        return catalog.model(p["model_name"])
    return catalog.custom_model(p["custom_layers"], p["custom_hidden"], p["custom_heads"],
                                vocab=p["custom_vocab"], seq_len=p["seq_len"] or 2048)


def report_cluster(p: Mapping[str, Any]) -> ClusterPlan:
    """The cluster of ``notebooks/reports/cluster_plan.ipynb`` from its parameters.

    One function for the report's notebook and for the check that ``./workbook report``
    runs before a kernel starts (:mod:`scaleout.parameters`), so both compute the same
    cluster: :func:`cluster_plan` with the report's options (0 or "" meaning "the usual").
    A ``network_file`` (``./workbook calibrate``, read as data) replaces the datasheet links of
    the step-time model with the measured ones; a ``framework`` names the preset assumed; a
    ``recipe`` (:data:`scaleout.memory.RECIPES`, e.g. an FP8 one) sets the precision.
    """
    model = report_model(p)
    options: dict[str, Any] = {}
    gpus_per_node = p["gpus_per_node"] or None
    if p.get("network_file"):
        from .lab import calibrate

        measured = calibrate.load_network(p["network_file"])
        gpus_per_node = gpus_per_node or measured.gpus_per_node
        options.update(network=measured.fabric(p["gpu_name"], gpus_per_node),
                       calibration=measured.plan_calibration())
    if p.get("framework"):
        options["framework"] = p["framework"]
    if p.get("recipe"):
        options["recipe"] = p["recipe"]
    return cluster_plan(
        model, p["gpu_name"], p["n_gpus"], p["global_batch"], p["tokens"],
        gpus_per_node=gpus_per_node, inter=p["network_name"] or None,
        planes=p["planes"], oversubscription=p["oversubscription"],
        switch=p["switch_name"] or None, optics_choice=p["optics_choice"],
        storage_gbytes_s=p["storage_gbytes_s"] or None, study=p["failure_study"],
        seq_len=p["seq_len"] or model.seq_len, flash_attention=bool(p["flash_attention"]),
        uneven_layers=bool(p["uneven_layers"]), **options)


def design_cluster(model: str | ModelSpec, gpu: str | GPU, tokens: float, deadline_days: float,
                   global_batch: int, gpu_counts: Sequence[int], **plan_kw) -> ClusterPlan:
    """The smallest GPU count of ``gpu_counts`` whose plan finishes within ``deadline_days``.

    Each count is planned with :func:`cluster_plan` (same keyword arguments) in ascending
    order; the first whose wall-clock days (failures included) meet the deadline is
    returned. Counts without a plan are passed over.

    Raises
    ------
    ValueError
        No count meets the deadline: the message names the fastest plan found and its days.
    """
    deadline = check_positive("deadline_days", deadline_days)
    counts = sorted({check_int("gpu_counts", c) for c in gpu_counts})
    if not counts:
        raise ValueError("gpu_counts must list at least one GPU count")
    best: ClusterPlan | None = None
    reasons = []
    for n in counts:
        try:
            candidate = cluster_plan(model, gpu, n, global_batch, tokens, **plan_kw)
        except plan.NoPlanError as exc:
            reasons.append(f"{n:,}: {exc}")
            continue
        if candidate.wall_days <= deadline:
            return candidate
        if best is None or candidate.wall_days < best.wall_days:
            best = candidate
    if best is None:
        raise ValueError(f"none of gpu_counts={counts} gives a plan: " + "; ".join(reasons))
    raise ValueError(f"no GPU count of {counts} trains {best.model} on {tokens:.3g} tokens "
                     f"within deadline_days={deadline:g}: the fastest, {best.n_gpus:,} GPUs, "
                     f"takes {best.wall_days:,.1f} days; add larger counts")

