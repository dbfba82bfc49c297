"""Multi-plane fabrics: a NIC of ``P`` ports on ``P`` independent Clos planes.

Each plane is built of switches at the per-port speed, so a switch chip of fixed
capacity has ``P`` times the radix and a two-tier plane reaches ``P²`` times the
endpoints (:func:`scaleout.fabric.radix_at`, :func:`size_multiplane`). A 102.4 Tb/s
chip at 200 Gb/s per port is radix 512, and two tiers of it reach 512²/2 = 131,072
endpoints (Broadcom Tomahawk 6 announcement, ``data/switches.toml``), which is why large
clusters flatten from three tiers to two. Published multi-plane designs: DeepSeek's
multi-plane two-layer fat tree (DeepSeek-AI, arXiv 2412.19437; Zhao et al., ISCA 2025,
arXiv 2505.09343, Sec. 5) and Alibaba HPN's dual-plane NICs (Qian et al., SIGCOMM 2024).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .. import units
from ..checks import check_int, check_positive
from .clos import (
    DEFAULT_COPPER_MAX_M,
    DEFAULT_LENGTHS_M,
    DEFAULT_SWITCH_LATENCY_NS,
    FIBRE_NS_PER_M,
    ClosDesign,
    LinkGroup,
    check_radix,
    radix_at,
    size_fabric,
)


@dataclass(frozen=True)
class MultiPlaneDesign:
    """``planes`` identical, independent Clos planes; every NIC has one port on each.

    Each endpoint is one NIC of ``nic_gbps = planes × port_gbps``. Switches, links and
    transceivers are the plane's times ``planes``; endpoints, hops and latency are the
    plane's.
    """

    plane: ClosDesign
    planes: int

    @property
    def endpoints(self) -> int:
        """NICs (GPUs) joined: each sits on every plane."""
        return self.plane.endpoints

    @property
    def nic_gbps(self) -> float:
        """One NIC's bandwidth over all its ports, Gb/s per direction."""
        return self.planes * self.plane.port_gbps

    @property
    def switches_per_tier(self) -> dict[str, int]:
        """Switches by tier over all planes."""
        return {t: self.planes * n for t, n in self.plane.switches_per_tier.items()}

    @property
    def switches(self) -> int:
        """All switches of all planes."""
        return self.planes * self.plane.switches

    @property
    def links_per_tier(self) -> dict[str, int]:
        """Links by type over all planes."""
        return {t: self.planes * n for t, n in self.plane.links_per_tier.items()}

    @property
    def links(self) -> int:
        """All links of all planes."""
        return self.planes * self.plane.links

    def transceivers(self, copper_max_m: float = DEFAULT_COPPER_MAX_M,
                     lengths_m: Mapping[str, float] | None = None) -> dict[str, int]:
        """Transceivers by link type over all planes (see :meth:`ClosDesign.transceivers`)."""
        return {t: self.planes * n
                for t, n in self.plane.transceivers(copper_max_m, lengths_m).items()}

    def link_groups(self, endpoint_leaf_m: float = DEFAULT_LENGTHS_M["endpoint-leaf"],
                    leaf_spine_m: float = DEFAULT_LENGTHS_M["leaf-spine"],
                    spine_core_m: float = DEFAULT_LENGTHS_M["spine-core"]) -> tuple[LinkGroup, ...]:
        """All planes' links as :class:`LinkGroup` s (counts times ``planes``)."""
        return tuple(LinkGroup(g.name, g.count * self.planes, g.length_m, g.gbps)
                     for g in self.plane.link_groups(endpoint_leaf_m, leaf_spine_m, spine_core_m))

    @property
    def bisection_gbps(self) -> float:
        """Bisection over all planes, Gb/s per direction."""
        return self.planes * self.plane.bisection_gbps

    @property
    def bisection_gbps_bidir(self) -> float:
        """Bisection over all planes, both directions added."""
        return units.both_directions(self.bisection_gbps)

    @property
    def worst_case_switch_hops(self) -> int:
        """Switches on the longest path (within one plane)."""
        return self.plane.worst_case_switch_hops

    def worst_case_latency_s(self, switch_latency_ns: float = DEFAULT_SWITCH_LATENCY_NS,
                             lengths_m: Mapping[str, float] | None = None,
                             ns_per_m: float = FIBRE_NS_PER_M) -> float:
        """One-way latency of the longest path in one plane, seconds."""
        return self.plane.worst_case_latency_s(switch_latency_ns, lengths_m, ns_per_m)


def size_multiplane(n_endpoints: int, nic_gbps: float, planes: int, *,
                    switch_gbps: float | None = None, radix: int | None = None,
                    oversubscription: float = 1.0, tiers: int | None = None,
                    max_tiers: int = 3) -> MultiPlaneDesign:
    """``planes`` Clos planes for NICs of ``nic_gbps`` split into ``planes`` ports.

    Each port runs at ``nic_gbps / planes``. Give the switch as ``switch_gbps`` (its
    capacity per direction: the radix follows from :func:`radix_at`, so more planes mean
    slower ports and a larger radix) or as ``radix`` directly. Example: an 800G NIC as
    4 × 200G on 102.4 Tb/s switches is radix 512; two tiers serve 131,072 NICs, where one
    800G plane of the same chips (radix 128) needs three tiers beyond 8,192.
    """
    p = check_int("planes", planes)
    nic = check_positive("nic_gbps", nic_gbps)
    port = nic / p
    if (switch_gbps is None) == (radix is None):
        raise ValueError("give exactly one of switch_gbps (switch capacity per direction) "
                         "and radix")
    if switch_gbps is not None:
        try:
            k = check_radix(radix_at(switch_gbps, port))
        except ValueError as exc:
            raise ValueError(f"nic_gbps / planes = {port:g} Gb/s per port on a switch of "
                             f"switch_gbps = {switch_gbps!r}: {exc}") from None
    else:
        k = check_radix(radix)
    plane = size_fabric(n_endpoints, k, port, oversubscription, tiers, max_tiers)
    return MultiPlaneDesign(plane=plane, planes=p)
