"""Fabric: Clos (leaf-spine, fat-tree) networks of radix-k switches, planes and rails.

A **Clos network** joins endpoints (GPUs' network ports) through tiers of identical
switches so that every pair has many equal-cost paths (Clos 1953, "A study of
non-blocking switching networks", Bell System Technical Journal 32(2)). Built from
switches of radix ``k`` (ports) with every port at ``port_gbps``:

=====  ==========================  ==============  =====================  ===========
tiers  shape                       max endpoints   switches (full)        switch hops
=====  ==========================  ==============  =====================  ===========
1      one switch                  ``k``           1                      1
2      leaf-spine                  ``k²/2``        ``k`` + ``k/2``        3
3      fat tree: pods + core       ``k³/4``        ``5k²/4``              5
=====  ==========================  ==============  =====================  ===========

The three-tier form is the k-ary fat tree of Al-Fares, Loukissas & Vahdat 2008 ("A
Scalable, Commodity Data Center Network Architecture", SIGCOMM, Sec. 3): k pods of k/2
edge (leaf) and k/2 aggregation (spine) switches, (k/2)² core switches, k³/4 hosts.

**Oversubscription** ``r`` (downlinks : uplinks at the leaf) gives each leaf
``d = k·r/(r+1)`` endpoint ports and ``u = k − d`` uplinks; spines and cores stay
non-blocking. The leaf then carries ``r`` times more traffic than it can send up, and the
endpoint counts grow to ``k·d`` (two tiers) and ``k²·d/2`` (three tiers); ``r = 1`` gives
the non-blocking figures above. Partly filled fabrics use the fewest switches that keep
every leaf's uplinks spread evenly (parallel links where a spine would otherwise sit
half-empty); see :func:`size_fabric`.

**Planes.** A NIC with ``P`` ports joins ``P`` independent Clos planes, one port each,
built of switches at the per-port speed: a switch chip of fixed capacity then has ``P``
times the radix, and a two-tier plane reaches ``P²`` times the endpoints
(:func:`radix_at`, :func:`size_multiplane`). A 102.4 Tb/s chip at 200 Gb/s per port is
radix 512, and two tiers of it reach 512²/2 = 131,072 endpoints, which is why large
clusters flatten from three tiers to two.

**Rails.** In a rail-optimised layout GPU ``i`` of every node connects to rail ``i``'s
leaf switches (:func:`rail_layout`).

**Traffic.** ECMP hashes whole flows onto equal-cost paths and collides; spraying a
stream's packets over all paths (or planes) does not, at the price of reordering at the
receiver (:func:`simulate_load_balance`, :func:`simulate_reordering`).

For small radixes :func:`build_graph` wires the actual topology and :func:`check_graph`
measures its switches, links, port use, diameter and bisection (a max-flow), which the
tests compare with the closed forms here.

Bandwidths are per direction unless a name ends in ``_bidir``. Taught in
``notebooks/09_clos_fabrics.ipynb``.
"""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import catalog, collectives, units
from .catalog import DATA_DIR, Entry, field_of, load_entries, lookup
from .checks import (
    MAX_RADIX,
    MAX_WORK,
    check_array,
    check_choice,
    check_int,
    check_positive,
    check_range,
    check_work,
    real_bound,
)

__all__ = [
    "DEFAULT_COPPER_MAX_M",
    "DEFAULT_LENGTHS_M",
    "DEFAULT_SWITCH_LATENCY_NS",
    "FIBRE_NS_PER_M",
    "LINK_TYPES",
    "TIERS",
    "TIER_NAMES",
    "ClosDesign",
    "FabricGraph",
    "FabricSweep",
    "GraphCheck",
    "LinkGroup",
    "LoadBalanceResult",
    "MultiPlaneDesign",
    "RailDesign",
    "ReorderResult",
    "SwitchChip",
    "TransportMeasurement",
    "build_graph",
    "check_graph",
    "check_radix",
    "collective_latency_term",
    "ecmp_expected_utilisation",
    "fabric_alpha",
    "fabric_sweep",
    "leaf_split",
    "load_balance_sweep",
    "max_endpoints",
    "radix_at",
    "rail_layout",
    "rail_max_nodes",
    "reorder_buffer_bytes",
    "simulate_load_balance",
    "simulate_reordering",
    "size_fabric",
    "size_multiplane",
    "switch_chip",
    "switch_chips",
    "transport_measurements",
]

#: Tiers modelled: one switch, leaf-spine, three-tier fat tree.
TIERS = (1, 2, 3)
#: Switch tiers by name, bottom up (in a fat tree: edge, aggregation, core).
TIER_NAMES = ("leaf", "spine", "core")
#: Link types, bottom up.
LINK_TYPES = ("endpoint-leaf", "leaf-spine", "spine-core")
#: Default cable lengths by link type, metres: an assumption for a typical hall (in-rack
#: to a leaf, a row to a spine, across the building to a core); pass your own.
DEFAULT_LENGTHS_M = {"endpoint-leaf": 3.0, "leaf-spine": 30.0, "spine-core": 500.0}
#: Links at most this long are copper (DAC/ACC) and need no transceivers: an assumption
#: of a few metres of in-rack copper; :mod:`scaleout.optics` picks real parts by reach.
DEFAULT_COPPER_MAX_M = 3.0
#: Port-to-port latency of one switch, ns: an ASSUMPTION between the two published
#: bounds in ``data/switches.toml`` (an InfiniBand switch under 130 ns, an Ethernet
#: data-center switch under 1 µs). Pass the figure of the switch you model.
DEFAULT_SWITCH_LATENCY_NS = 500.0
#: Propagation in optical fibre, ns per metre: light at c / n with a group index n of
#: about 1.47 for standard single-mode fibre (ITU-T G.652 class) is 2.04e8 m/s, 4.9 ns/m.
FIBRE_NS_PER_M = 4.9


# =========================================================================== switch chips
@dataclass(frozen=True)
class SwitchChip(Entry):
    """A switch chip (or box) as sold: its ports at one or more speeds, from its datasheet."""

    name: str = field_of("", "catalog name")
    vendor: str = field_of("", "maker")
    family: str = field_of("", "'InfiniBand' or 'Ethernet'")
    ports: tuple[int, ...] = field_of("ports",
                                      "port counts of the configurations, matching port_gbps")
    port_gbps: tuple[int, ...] = field_of("Gb/s",
                                          "per-port speeds of the configurations, one direction")
    year: int = field_of("year", "year of announcement or availability")
    source: str = field_of("", "where the figures come from")
    latency_ns: float | None = field_of("ns", "port-to-port latency as published (an upper bound)",
                                  default=None)
    power_w: float | None = field_of(
        "W", "typical power of the switch chip alone (no box, no optics), as published or "
        "estimated in print; None if unpublished", default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "ports", tuple(self.ports))
        object.__setattr__(self, "port_gbps", tuple(self.port_gbps))
        if len(self.ports) != len(self.port_gbps) or not self.ports:
            raise ValueError(f"SwitchChip {self.name!r}: field 'ports' must list one count per "
                             f"entry of 'port_gbps', got {self.ports!r} and {self.port_gbps!r}")

    @property
    def capacity_gbps(self) -> float:
        """Switching capacity, Gb/s per direction: ports × speed of the first configuration."""
        return float(self.ports[0] * self.port_gbps[0])

    def radix(self, port_gbps: float) -> int:
        """Ports at ``port_gbps``: a listed configuration, else capacity ÷ speed
        (:func:`radix_at`)."""
        for ports, speed in zip(self.ports, self.port_gbps, strict=True):
            if speed == port_gbps:
                return ports
        return radix_at(self.capacity_gbps, port_gbps)


@functools.cache
def _switch_chips() -> dict[str, SwitchChip]:
    return load_entries(DATA_DIR / "switches.toml", "switch", SwitchChip)


def switch_chip(spec: str | SwitchChip) -> SwitchChip:
    """A switch chip by name or alias (``"Tomahawk 6"``, ``"Quantum-2"``)."""
    if isinstance(spec, SwitchChip):
        return spec
    return lookup("switch", _switch_chips(), spec)


def switch_chips() -> list[SwitchChip]:
    """Every switch chip of ``data/switches.toml``, in file order."""
    return list(_switch_chips().values())


# =========================================================================== inputs
def check_radix(radix) -> int:
    """``radix`` as an ``int`` if it is an even whole number >= 2 (ports split down and up)."""
    k = check_int("radix", radix, minimum=2)
    if k % 2:
        raise ValueError(f"radix must be an even whole number >= 2 (ports split half down, "
                         f"half up), got {radix!r}")
    return k


def _check_tiers(tiers) -> int:
    return check_choice("tiers", tiers, TIERS)


def leaf_split(radix: int, oversubscription: float = 1.0) -> tuple[int, int]:
    """A leaf's ports as ``(down, up)``: ``d = k·r/(r+1)`` to endpoints, ``u = k − d`` to spines.

    ``r`` is the oversubscription, downlinks : uplinks (``1`` non-blocking, ``3`` for 3:1).
    ``d`` must come out whole: radix 64 allows r = 1, 3, 7, 15, 31, 63 (and ratios such as
    33/31 = 1.0645...). Raises ``ValueError`` naming the ratios that fit otherwise.
    """
    k = check_radix(radix)
    r = check_positive("oversubscription", oversubscription)
    if r < 1:
        raise ValueError(f"oversubscription must be >= 1 (downlinks : uplinks at the leaf), "
                         f"got {oversubscription!r}")
    down = k * r / (r + 1)
    if not math.isclose(down, round(down), rel_tol=0, abs_tol=1e-6) or round(down) >= k:
        whole = [str(k // m - 1) for m in range(1, k + 1) if k % m == 0 and k // m >= 2]
        raise ValueError(
            f"oversubscription={oversubscription!r} with radix {k} gives {down:.4g} leaf "
            f"downlinks, not a whole number below {k}; whole ratios for radix {k}: "
            f"{', '.join(sorted(set(whole), key=int)[:10])} (or any d/(k-d))")
    d = round(down)
    return d, k - d


def max_endpoints(radix, tiers: int, oversubscription: float = 1.0):
    """The most endpoints ``tiers`` tiers of radix-``k`` switches serve.

    ``k`` (one switch), ``k·d`` (two tiers), ``k²·d/2`` (three) with ``d`` the leaf's
    downlinks (:func:`leaf_split`): ``k``, ``k²/2``, ``k³/4`` when non-blocking
    (Al-Fares et al. 2008, Sec. 3). ``radix`` may be an array of even radixes (a sweep);
    returns ``int`` or an integer array. Radix 64: 64, 2,048, 65,536; radix 512 two tiers:
    131,072.
    """
    tiers = _check_tiers(tiers)
    ks = np.atleast_1d(np.asarray(radix))
    out = np.empty(ks.shape, dtype=np.int64)
    for i, k in enumerate(ks.flat):
        k = check_radix(int(k) if float(k).is_integer() else k)
        d = leaf_split(k, oversubscription)[0] if tiers > 1 else k
        out.flat[i] = (k, k * d, k * k * d // 2)[tiers - 1]
    return int(out[0]) if np.ndim(radix) == 0 else out.reshape(np.shape(radix))


def radix_at(switch_gbps: float, port_gbps: float) -> int:
    """Ports a switch of ``switch_gbps`` capacity (per direction) offers at ``port_gbps`` each.

    A 51.2 Tb/s chip: 64 ports of 800G, 256 of 200G, 512 of 100G; a 102.4 Tb/s chip: 512
    of 200G (Broadcom Tomahawk 5 and 6 announcements, ``data/switches.toml``).
    """
    cap = check_positive("switch_gbps", switch_gbps)
    speed = check_positive("port_gbps", port_gbps)
    if cap / speed > MAX_RADIX:
        raise ValueError(f"switch_gbps={cap:g} at port_gbps={speed:g} gives "
                         f"{cap / speed:,.0f} ports, more than a switch has "
                         f"(scaleout.checks.MAX_RADIX = {MAX_RADIX:,}); use faster ports")
    k = math.floor(cap / speed + 1e-9)
    k -= k % 2
    if k < 2:
        raise ValueError(f"port_gbps={port_gbps:g} leaves fewer than 2 ports on a "
                         f"{cap:g} Gb/s switch; use a slower port or a bigger switch")
    return k


# =========================================================================== counts
def _smallest_divisor_at_least(m: int, x):
    """Smallest divisor of ``m`` that is >= ``x`` (element-wise; ``x`` <= ``m``)."""
    divs = np.array([q for q in range(1, m + 1) if m % q == 0], dtype=np.int64)
    idx = np.searchsorted(divs, np.asarray(x, dtype=np.int64), side="left")
    return divs[np.minimum(idx, divs.size - 1)]


def _ceil_div(a, b):
    return -(-np.asarray(a, dtype=np.int64) // b)


def _counts(n, k: int, d: int, u: int, tiers: int) -> dict[str, np.ndarray]:
    """Switches and links of a Clos serving ``n`` endpoints (element-wise over ``n``).

    The one place the counting formulas live: :class:`ClosDesign` and :func:`fabric_sweep`
    both call it.

    * two tiers: ``L = ⌈n/d⌉`` leaves; ``s`` spines, the smallest divisor of ``u`` with
      ``s·k >= L·u`` (each leaf sends ``u/s`` parallel links to every spine); ``s = u``
      when full.
    * three tiers: pods of ``k/2`` leaves (the last pod partial), ``u`` aggregation
      switches ("spines") per pod each with ``k/2`` uplinks; ``u·c`` cores with ``c`` the
      smallest divisor of ``k/2`` with ``c >= ⌈pods/2⌉`` (``c = k/2`` when full).
    """
    n = np.asarray(n, dtype=np.int64)
    zero = np.zeros_like(n)
    if tiers == 1:
        return {"leaf": np.ones_like(n), "spine": zero, "core": zero, "pods": zero,
                "endpoint-leaf": n, "leaf-spine": zero, "spine-core": zero}
    if tiers == 2:
        leaves = _ceil_div(n, d)
        spines = _smallest_divisor_at_least(u, _ceil_div(leaves * u, k))
        return {"leaf": leaves, "spine": spines, "core": zero, "pods": zero,
                "endpoint-leaf": n, "leaf-spine": leaves * u, "spine-core": zero}
    half = k // 2
    per_pod = half * d
    pods = _ceil_div(n, per_pod)
    leaves = (pods - 1) * half + _ceil_div(n - (pods - 1) * per_pod, d)
    cores = u * _smallest_divisor_at_least(half, _ceil_div(pods, 2))
    return {"leaf": leaves, "spine": pods * u, "core": cores, "pods": pods,
            "endpoint-leaf": n, "leaf-spine": leaves * u, "spine-core": pods * u * half}


def _hops(tiers: int, leaves, pods):
    """Worst-case switches between two endpoints: 1, 3 or 5 (fewer in a tiny fabric)."""
    leaves = np.asarray(leaves)
    if tiers == 1:
        return np.ones_like(leaves)
    if tiers == 2:
        return np.where(leaves > 1, 3, 1)
    return np.where(np.asarray(pods) > 1, 5, np.where(leaves > 1, 3, 1))


def _bisection_links(n, d: int, u: int, tiers: int):
    """Links' worth of capacity across the worst balanced split: ``⌊n/2⌋ · min(1, u/d)``."""
    half = np.asarray(n, dtype=np.int64) // 2
    return half if tiers == 1 else half * min(1.0, u / d)


# =========================================================================== designs
@dataclass(frozen=True)
class LinkGroup:
    """Links of one type, for an optics bill: how many, how long, how fast (per direction)."""

    name: str
    count: int
    length_m: float
    gbps: float


@dataclass(frozen=True)
class ClosDesign:
    """One Clos plane serving ``endpoints`` endpoints with radix-``radix`` switches.

    Build it with :func:`size_fabric`. Counts per tier are in :attr:`switches_per_tier`
    and :attr:`links_per_tier`; ``leaf_down`` and ``leaf_up`` are one leaf's endpoint
    ports and uplinks.
    """

    radix: int
    port_gbps: float
    tiers: int
    oversubscription: float
    endpoints: int
    leaf_down: int
    leaf_up: int
    leaves: int
    spines: int
    cores: int
    pods: int
    links_endpoint_leaf: int
    links_leaf_spine: int
    links_spine_core: int

    # -- counts ------------------------------------------------------------------------
    @property
    def switches_per_tier(self) -> dict[str, int]:
        """``{"leaf": ..., "spine": ..., "core": ...}`` (spines are aggregation in a fat tree)."""
        return {"leaf": self.leaves, "spine": self.spines, "core": self.cores}

    @property
    def switches(self) -> int:
        """All switches of the plane."""
        return self.leaves + self.spines + self.cores

    @property
    def links_per_tier(self) -> dict[str, int]:
        """Links (= cables) by type: ``endpoint-leaf``, ``leaf-spine``, ``spine-core``."""
        return {"endpoint-leaf": self.links_endpoint_leaf, "leaf-spine": self.links_leaf_spine,
                "spine-core": self.links_spine_core}

    @property
    def links(self) -> int:
        """All links of the plane."""
        return sum(self.links_per_tier.values())

    @property
    def max_endpoints(self) -> int:
        """The most endpoints these tiers of these switches serve (:func:`max_endpoints`)."""
        return max_endpoints(self.radix, self.tiers, self.oversubscription)

    def transceivers(self, copper_max_m: float = DEFAULT_COPPER_MAX_M,
                     lengths_m: Mapping[str, float] | None = None) -> dict[str, int]:
        """Optical transceivers by link type: two per link longer than ``copper_max_m``.

        Links up to ``copper_max_m`` are copper cables with no transceiver. Which module
        serves which length is :func:`scaleout.optics.fabric_bill`'s job.
        """
        lengths = _lengths(lengths_m)
        copper = check_positive("copper_max_m", copper_max_m, allow_zero=True)
        return {t: (2 * n if lengths[t] > copper else 0) for t, n in self.links_per_tier.items()}

    def cables(self) -> dict[str, int]:
        """Cables by link type: one per link (breakout cables not modelled)."""
        return dict(self.links_per_tier)

    def link_groups(self, endpoint_leaf_m: float = DEFAULT_LENGTHS_M["endpoint-leaf"],
                    leaf_spine_m: float = DEFAULT_LENGTHS_M["leaf-spine"],
                    spine_core_m: float = DEFAULT_LENGTHS_M["spine-core"]) -> tuple[LinkGroup, ...]:
        """The plane's links as :class:`LinkGroup` s for :func:`scaleout.optics.fabric_bill`.

        Lengths default to :data:`DEFAULT_LENGTHS_M` (3 m in-rack, 30 m to a spine, 500 m
        to a core: assumptions). Types without links are left out.
        """
        lengths = _lengths({"endpoint-leaf": endpoint_leaf_m, "leaf-spine": leaf_spine_m,
                            "spine-core": spine_core_m})
        return tuple(LinkGroup(t, n, lengths[t], self.port_gbps)
                     for t, n in self.links_per_tier.items() if n > 0)

    # -- performance -------------------------------------------------------------------
    @property
    def bisection_links(self) -> float:
        """Links' worth of capacity across the worst balanced split, one direction."""
        return float(_bisection_links(self.endpoints, self.leaf_down, self.leaf_up, self.tiers))

    @property
    def bisection_gbps(self) -> float:
        """Bisection bandwidth, Gb/s, ONE direction: what half the endpoints can send to the
        other half at once, ``⌊n/2⌋ · port_gbps / r``. Exact for a fabric whose halves are
        whole leaves or pods (the worst split); a lower bound for a partly filled one."""
        return self.bisection_links * self.port_gbps

    @property
    def bisection_gbps_bidir(self) -> float:
        """Bisection bandwidth with both directions added (twice :attr:`bisection_gbps`)."""
        return units.both_directions(self.bisection_gbps)

    @property
    def worst_case_switch_hops(self) -> int:
        """Switches on the longest shortest path between two endpoints: 1, 3 or 5."""
        return int(_hops(self.tiers, self.leaves, self.pods))

    def worst_case_latency_s(self, switch_latency_ns: float = DEFAULT_SWITCH_LATENCY_NS,
                             lengths_m: Mapping[str, float] | None = None,
                             ns_per_m: float = FIBRE_NS_PER_M) -> float:
        """One-way latency of the longest path, seconds: switches × ``switch_latency_ns``
        plus propagation over its cables (each link type twice, up and down)."""
        sw = check_positive("switch_latency_ns", switch_latency_ns, allow_zero=True)
        per_m = check_positive("ns_per_m", ns_per_m, allow_zero=True)
        lengths = _lengths(lengths_m)
        hops = self.worst_case_switch_hops
        used = LINK_TYPES[: (hops + 1) // 2]
        metres = 2 * sum(lengths[t] for t in used)
        return units.ns_to_seconds(hops * sw + metres * per_m)


def _lengths(lengths_m: Mapping[str, float] | None) -> dict[str, float]:
    out = dict(DEFAULT_LENGTHS_M)
    for name, value in (lengths_m or {}).items():
        check_choice("link type", name, LINK_TYPES)
        out[name] = check_positive(f"lengths_m[{name!r}] (the length of {name} links, m)",
                                   value, maximum=real_bound("length_m"))
    return out


def _design(n: int, k: int, port_gbps: float, tiers: int, r: float) -> ClosDesign:
    d, u = (k, 0) if tiers == 1 else leaf_split(k, r)
    c = {key: int(v) for key, v in _counts(n, k, d, u, tiers).items()}
    return ClosDesign(radix=k, port_gbps=port_gbps, tiers=tiers,
                      oversubscription=1.0 if tiers == 1 else float(r), endpoints=n,
                      leaf_down=d, leaf_up=u, leaves=c["leaf"], spines=c["spine"],
                      cores=c["core"], pods=c["pods"], links_endpoint_leaf=c["endpoint-leaf"],
                      links_leaf_spine=c["leaf-spine"], links_spine_core=c["spine-core"])


def size_fabric(n_endpoints: int, radix: int, port_gbps: float = 400.0,
                oversubscription: float = 1.0, tiers: int | None = None,
                max_tiers: int = 3) -> ClosDesign:
    """The Clos plane that serves ``n_endpoints``: the fewest tiers that fit, or ``tiers``.

    Parameters
    ----------
    n_endpoints
        Endpoint ports to connect (one per GPU per plane).
    radix
        Ports per switch, even.
    port_gbps
        Speed of every port, Gb/s per direction.
    oversubscription
        Leaf downlinks : uplinks, ``>= 1`` (ignored by a one-tier fabric, which has no uplinks).
    tiers
        Force 1, 2 or 3 tiers; default: the fewest that serve ``n_endpoints``.
    max_tiers
        The most tiers allowed when choosing.

    Raises
    ------
    ValueError
        A bad radix or ratio, or more endpoints than the tiers can serve, naming the maximum:
        ``n_endpoints=70,000 is more than 3 tiers of radix-64 switches serve (65,536 at
        oversubscription 1:1)``.
    """
    k = check_radix(radix)
    speed = check_positive("port_gbps", port_gbps)
    n = check_int("n_endpoints", n_endpoints)
    r = check_positive("oversubscription", oversubscription)
    leaf_split(k, r)  # a ratio the leaf cannot take is an error even where one tier suffices
    if tiers is not None:
        t = _check_tiers(tiers)
        top = max_endpoints(k, t, r)
        if n > top:
            raise ValueError(f"n_endpoints={n:,} is more than {t} tier{'s' * (t > 1)} of "
                             f"radix-{k} switches serve ({top:,} at oversubscription "
                             f"{r:g}:1); use more tiers or a larger radix (slower ports on more "
                             "planes give one)")
        return _design(n, k, speed, t, r)
    top_tiers = check_int("max_tiers", max_tiers, minimum=1, maximum=3)
    for t in TIERS[:top_tiers]:
        if n <= max_endpoints(k, t, r):
            return _design(n, k, speed, t, r)
    top = max_endpoints(k, top_tiers, r)
    raise ValueError(f"n_endpoints={n:,} is more than {top_tiers} tier"
                     f"{'s' * (top_tiers > 1)} of radix-{k} switches serve ({top:,} at "
                     f"oversubscription {r:g}:1); use a larger radix (slower ports on more "
                     "planes give one)")


# =========================================================================== planes
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


# =========================================================================== sweeps
@dataclass(frozen=True)
class FabricSweep:
    """A fabric sized for each of many endpoint counts (arrays shaped like ``endpoints``)."""

    endpoints: np.ndarray
    tiers: np.ndarray
    switches: np.ndarray
    links: np.ndarray
    transceivers: np.ndarray
    bisection_gbps: np.ndarray
    switch_hops: np.ndarray


def fabric_sweep(n_endpoints, radix: int, port_gbps: float = 400.0,
                 oversubscription: float = 1.0, planes: int = 1, tiers: int | None = None,
                 copper_max_m: float = DEFAULT_COPPER_MAX_M,
                 lengths_m: Mapping[str, float] | None = None) -> FabricSweep:
    """:func:`size_fabric` over an array of endpoint counts in one vectorised pass.

    Counts are over all ``planes`` (each plane radix ``radix`` at ``port_gbps``). Each
    count gets the fewest tiers that serve it (or ``tiers``); counts no tier serves raise
    ``ValueError`` naming the maximum.
    """
    k = check_radix(radix)
    speed = check_positive("port_gbps", port_gbps)
    p = check_int("planes", planes)
    n = check_array("n_endpoints", n_endpoints, integer=True, minimum=1).astype(np.int64)
    lengths = _lengths(lengths_m)
    copper = check_positive("copper_max_m", copper_max_m, allow_zero=True)
    options = TIERS if tiers is None else (_check_tiers(tiers),)
    caps = [max_endpoints(k, t, oversubscription) for t in options]
    too_big = n > caps[-1]
    if np.any(too_big):
        worst = int(n[too_big].max())
        raise ValueError(f"n_endpoints={worst:,} is more than {options[-1]} tiers of radix-{k} "
                         f"switches serve ({caps[-1]:,} at oversubscription "
                         f"{oversubscription:g}:1)")
    chosen = np.full(n.shape, options[-1], dtype=np.int64)
    for t, cap in zip(options[::-1], caps[::-1], strict=True):
        chosen = np.where(n <= cap, t, chosen)
    out = {key: np.zeros(n.shape) for key in ("switches", "links", "xcvr", "bis", "hops")}
    for t in options:
        sel = chosen == t
        if not np.any(sel):
            continue
        d, u = (k, 0) if t == 1 else leaf_split(k, oversubscription)
        c = _counts(n[sel], k, d, u, t)
        out["switches"][sel] = c["leaf"] + c["spine"] + c["core"]
        out["links"][sel] = sum(c[lt] for lt in LINK_TYPES)
        out["xcvr"][sel] = sum(2 * c[lt] for lt in LINK_TYPES if lengths[lt] > copper)
        out["bis"][sel] = _bisection_links(n[sel], d, u, t) * speed
        out["hops"][sel] = _hops(t, c["leaf"], c["pods"])
    return FabricSweep(endpoints=n, tiers=chosen, switches=(out["switches"] * p).astype(np.int64),
                       links=(out["links"] * p).astype(np.int64),
                       transceivers=(out["xcvr"] * p).astype(np.int64),
                       bisection_gbps=out["bis"] * p, switch_hops=out["hops"].astype(np.int64))


# =========================================================================== rails
@dataclass(frozen=True)
class RailDesign:
    """A rail-optimised two-tier fabric: GPU ``i`` of every node on rail ``i``'s leaves.

    Nodes are grouped ``nodes_per_group`` at a time (one leaf's downlinks); each group
    has one leaf per rail, so the ``rails`` GPUs of a node sit on ``rails`` different
    leaves and the same-index GPUs of a group share one. Spines join the leaves for
    traffic between groups or rails (:attr:`spines`); a **rail-only** network
    (Wang et al. 2023, "Rail-only: A Low-Cost High-Performance Network for Training
    LLMs with Trillion Parameters", arXiv 2307.12169) drops them and sends cross-rail
    traffic over NVLink first, each rail then being its own fabric (:attr:`rail_only`).
    """

    n_nodes: int
    rails: int
    radix: int
    port_gbps: float
    oversubscription: float
    nodes_per_group: int
    groups: int
    leaves: int
    spines: int
    rail_only: MultiPlaneDesign

    @property
    def gpus(self) -> int:
        """GPUs (NICs) joined."""
        return self.n_nodes * self.rails

    @property
    def switches(self) -> int:
        """Leaves and spines of the rail-optimised fabric."""
        return self.leaves + self.spines

    @property
    def same_rail_one_hop(self) -> bool:
        """True when each rail fits on one leaf: same-index GPUs of all nodes one switch apart."""
        return self.groups == 1

    def leaf_of(self, node: int, gpu: int) -> int:
        """The leaf switch GPU ``gpu`` of ``node`` is cabled to: ``group · rails + gpu``.

        Leaves are numbered group by group, one per rail in each group; node ``n`` is in
        group ``n // nodes_per_group``. Every leaf sends its uplinks to all :attr:`spines`.
        """
        node = check_int("node", node, minimum=0, maximum=self.n_nodes - 1)
        gpu = check_int("gpu", gpu, minimum=0, maximum=self.rails - 1)
        return node // self.nodes_per_group * self.rails + gpu

    @property
    def one_hop_fraction(self) -> float:
        """Share of a GPU's peers in other nodes that sit one switch away (same rail, same group).

        Averaged over GPUs; the rest cross a spine, or NVLink then the destination's rail.
        """
        if self.n_nodes < 2:
            return 0.0
        sizes = np.full(self.groups, self.nodes_per_group)
        sizes[-1] = self.n_nodes - (self.groups - 1) * self.nodes_per_group
        mates = float(np.sum(sizes * (sizes - 1))) / self.n_nodes
        return mates / ((self.n_nodes - 1) * self.rails)


def rail_max_nodes(gpus_per_node: int, radix: int, oversubscription: float = 1.0) -> int:
    """The most nodes a rail-optimised two-tier fabric serves: ``⌊k / rails⌋ · d``.

    Each group of ``d`` nodes (one leaf's downlinks) takes one leaf per rail, and a spine
    reaches at most ``k`` leaves.
    """
    g = check_int("gpus_per_node", gpus_per_node)
    k = check_radix(radix)
    return k // g * leaf_split(k, oversubscription)[0]


def rail_layout(n_nodes: int, gpus_per_node: int, radix: int, port_gbps: float = 400.0,
                oversubscription: float = 1.0) -> RailDesign:
    """A rail-optimised two-tier layout of ``n_nodes`` nodes with ``gpus_per_node`` NICs each.

    What stays within a rail: traffic between same-index GPUs, such as the inter-node
    phase of a hierarchical all-reduce (each local rank all-reduces its shard with the
    same rank of every other node; :func:`scaleout.collectives.hierarchical_all_reduce_time`)
    and, with NCCL's PXN (a hop over NVLink to the GPU on the destination's rail), nearly
    all inter-node traffic. Within a group of ``nodes_per_group`` nodes it crosses one
    switch instead of three. NVIDIA's DGX SuperPOD reference designs are built this way.
    """
    nodes = check_int("n_nodes", n_nodes)
    g = check_int("gpus_per_node", gpus_per_node)
    k = check_radix(radix)
    speed = check_positive("port_gbps", port_gbps)
    d, u = leaf_split(k, oversubscription)
    groups = int(_ceil_div(nodes, d))
    leaves = g * groups
    if leaves > k:
        raise ValueError(f"n_nodes={nodes:,} with {g} rails needs {leaves:,} leaves, more than "
                         f"a radix-{k} spine reaches ({k}); a rail-optimised two-tier fabric "
                         f"serves at most {rail_max_nodes(g, k, oversubscription):,} nodes here")
    spines = int(_smallest_divisor_at_least(u, _ceil_div(leaves * u, k)))
    rail_only = size_multiplane(nodes, speed * g, g, radix=k, oversubscription=oversubscription)
    return RailDesign(n_nodes=nodes, rails=g, radix=k, port_gbps=speed,
                      oversubscription=float(oversubscription), nodes_per_group=min(d, nodes),
                      groups=groups, leaves=leaves, spines=spines, rail_only=rail_only)


# =========================================================================== graph
@dataclass(frozen=True)
class FabricGraph:
    """A built topology: node kinds and an edge list (one row per physical link).

    ``kind[i]`` is 0 for an endpoint, 1 leaf, 2 spine, 3 core; ``edges[j] = (a, b)`` with
    ``a`` the lower-tier end; ``edge_type[j]`` indexes :data:`LINK_TYPES`. ``leaf_of[e]``
    is endpoint ``e``'s leaf; ``pod_of_leaf`` the pod of each leaf (0 outside fat trees).
    """

    design: ClosDesign
    kind: np.ndarray
    edges: np.ndarray
    edge_type: np.ndarray
    leaf_of: np.ndarray
    pod_of_leaf: np.ndarray


def build_graph(design: ClosDesign) -> FabricGraph:
    """Wire ``design`` explicitly, port by port, as the fat-tree paper wires it.

    Endpoints fill leaves in order (``leaf_down`` each); every leaf sends ``leaf_up``
    uplinks spread evenly over the spines it reaches (its pod's aggregation switches in
    a fat tree); aggregation switch ``j`` of every pod sends its ``k/2`` uplinks evenly over
    core group ``j``. Counts are then *measured* from the graph by :func:`check_graph`.
    Meant for small radixes (the tests use k <= 16).
    """
    n, k, t = design.endpoints, design.radix, design.tiers
    d, u, half = design.leaf_down, design.leaf_up, k // 2
    check_work(f"wiring the design's {design.links:,} links and {design.switches:,} switches",
               design.links + design.switches + n, "build a smaller design (count it with "
               "size_fabric, which has no size limit)", limit=MAX_WORK // 20)
    ep = np.arange(n)
    leaf_idx = ep // d if t > 1 else np.zeros(n, dtype=np.int64)
    n_leaves = int(leaf_idx.max()) + 1
    first_leaf, first_spine = n, n + n_leaves
    rows, types = [np.stack([ep, first_leaf + leaf_idx], axis=1)], [np.zeros(n, np.int64)]
    pod_of_leaf = np.zeros(n_leaves, dtype=np.int64)
    n_spines = n_cores = 0
    if t == 2:
        # spines: the fewest whose ports take every leaf's u uplinks, u/s links per pair
        n_spines = _fewest_switches(n_leaves * u, k, u)
        per = u // n_spines
        lv, sp = np.meshgrid(np.arange(n_leaves), np.arange(n_spines), indexing="ij")
        a = np.repeat((first_leaf + lv).ravel(), per)
        b = np.repeat((first_spine + sp).ravel(), per)
        rows.append(np.stack([a, b], axis=1))
        types.append(np.ones(a.size, np.int64))
    elif t == 3:
        pod_of_leaf = np.arange(n_leaves) // half
        pods = int(pod_of_leaf.max()) + 1
        n_spines = pods * u
        # each leaf: one link to each of its pod's u aggregation switches
        lv, j = np.meshgrid(np.arange(n_leaves), np.arange(u), indexing="ij")
        agg = pod_of_leaf[lv] * u + j
        rows.append(np.stack([(first_leaf + lv).ravel(), (first_spine + agg).ravel()], axis=1))
        types.append(np.ones(lv.size, np.int64))
        # core group j has c cores; aggregation j of each pod sends k/2 uplinks over them
        c = _fewest_switches(pods * half, k, half)
        n_cores = u * c
        first_core = first_spine + n_spines
        per = half // c
        pod, j, q = np.meshgrid(np.arange(pods), np.arange(u), np.arange(c), indexing="ij")
        a = np.repeat((first_spine + pod * u + j).ravel(), per)
        b = np.repeat((first_core + j * c + q).ravel(), per)
        rows.append(np.stack([a, b], axis=1))
        types.append(np.full(a.size, 2, np.int64))
    kind = np.concatenate([np.zeros(n, np.int64), np.ones(n_leaves, np.int64),
                           np.full(n_spines, 2, np.int64), np.full(n_cores, 3, np.int64)])
    return FabricGraph(design=design, kind=kind, edges=np.concatenate(rows),
                       edge_type=np.concatenate(types), leaf_of=first_leaf + leaf_idx,
                       pod_of_leaf=pod_of_leaf)


def _fewest_switches(links: int, radix: int, per_source: int) -> int:
    """Fewest upper switches taking ``links`` uplinks when each source spreads
    ``per_source`` links evenly (a divisor of ``per_source``), ``radix`` ports each."""
    for s in range(1, per_source + 1):
        if per_source % s == 0 and s * radix >= links:
            return s
    raise ValueError(f"{links} uplinks do not fit on {per_source} switches of radix {radix}")


@dataclass(frozen=True)
class GraphCheck:
    """What :func:`check_graph` measured on a built topology."""

    switches_per_tier: dict[str, int]
    links_per_tier: dict[str, int]
    max_ports_used: int
    connected: bool
    diameter_links: int
    bisection_links_worst: float
    bisection_links_random: float


def check_graph(graph: FabricGraph, seed: int = 0) -> GraphCheck:
    """Measure a built topology: counts, port use, connectivity, diameter, bisection.

    * diameter: the longest shortest path between two endpoints, in links, by
      breadth-first search (every endpoint has one link, so searching from every leaf
      over the switches is exact);
    * bisection: maximum flow (Dinic's algorithm) from one half of the endpoints to the
      other with every link carrying one port's rate each way, for the split by endpoint
      order (whole leaves and pods on each side: the worst case) and for a random
      balanced split.
    """
    kind, edges, etype = graph.kind, graph.edges, graph.edge_type
    ports = np.bincount(edges.ravel(), minlength=kind.size)
    switches = {name: int(np.sum(kind == i + 1)) for i, name in enumerate(TIER_NAMES)}
    links = {name: int(np.sum(etype == i)) for i, name in enumerate(LINK_TYPES)}
    n = int(np.sum(kind == 0))
    # switch-only adjacency for the BFS
    sw_edges = edges[etype > 0] - n
    n_sw = kind.size - n
    adj: list[list[int]] = [[] for _ in range(n_sw)]
    for a, b in sw_edges.tolist():
        adj[a].append(b)
        adj[b].append(a)
    leaves = np.unique(graph.leaf_of) - n
    worst, connected = 0, True
    for src in leaves.tolist():
        dist = _bfs(adj, src)
        reach = dist[leaves]
        if np.any(reach < 0):
            connected = False
        worst = max(worst, int(reach.max()))
    diameter = 2 + worst if n > 1 else 0
    order = np.arange(n)
    rng = np.random.default_rng(seed)
    return GraphCheck(
        switches_per_tier=switches, links_per_tier=links,
        max_ports_used=int(ports[n:].max()) if n_sw else 0, connected=connected,
        diameter_links=diameter,
        bisection_links_worst=_split_flow(graph, order[: n // 2], order[n // 2: 2 * (n // 2)]),
        bisection_links_random=_split_flow(graph, *np.split(rng.permutation(n)[: 2 * (n // 2)],
                                                              2)))


def _bfs(adj: list[list[int]], src: int) -> np.ndarray:
    dist = np.full(len(adj), -1, dtype=np.int64)
    dist[src] = 0
    queue = deque([src])
    while queue:
        x = queue.popleft()
        for y in adj[x]:
            if dist[y] < 0:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def _split_flow(graph: FabricGraph, left: np.ndarray, right: np.ndarray) -> float:
    """Max flow from the ``left`` endpoints to the ``right`` ones (unit capacity per link
    and direction). Endpoints hang on one link each, so the source feeds each leaf as many
    units as it has left endpoints, and each leaf drains its right endpoints to the sink."""
    kind, edges, etype = graph.kind, graph.edges, graph.edge_type
    n = int(np.sum(kind == 0))
    n_sw = kind.size - n
    src, sink = n_sw, n_sw + 1
    cap: dict[tuple[int, int], int] = {}
    for a, b in (edges[etype > 0] - n).tolist():
        cap[(a, b)] = cap.get((a, b), 0) + 1
        cap[(b, a)] = cap.get((b, a), 0) + 1
    for side, (s, t) in ((left, (src, None)), (right, (None, sink))):
        leaves, counts = np.unique(graph.leaf_of[side] - n, return_counts=True)
        for leaf, c in zip(leaves.tolist(), counts.tolist(), strict=True):
            key = (s, leaf) if s is not None else (leaf, t)
            cap[key] = cap.get(key, 0) + c
    return float(_dinic(n_sw + 2, cap, src, sink))


def _dinic(n_nodes: int, cap: dict[tuple[int, int], int], s: int, t: int) -> int:
    """Maximum flow by Dinic's algorithm (level graph + blocking flows)."""
    head: list[list[int]] = [[] for _ in range(n_nodes)]
    to: list[int] = []
    res: list[int] = []
    for (a, b), c in cap.items():
        head[a].append(len(to))
        to.append(b)
        res.append(c)
        head[b].append(len(to))
        to.append(a)
        res.append(0)
    level = [-1] * n_nodes
    it = [0] * n_nodes

    def push(x: int, limit: int) -> int:
        if x == t:
            return limit
        while it[x] < len(head[x]):
            e = head[x][it[x]]
            y = to[e]
            if res[e] > 0 and level[y] == level[x] + 1:
                got = push(y, min(limit, res[e]))
                if got:
                    res[e] -= got
                    res[e ^ 1] += got
                    return got
            it[x] += 1
        return 0

    flow = 0
    while True:
        level[:] = [-1] * n_nodes
        level[s] = 0
        queue = deque([s])
        while queue:
            x = queue.popleft()
            for e in head[x]:
                if res[e] > 0 and level[to[e]] < 0:
                    level[to[e]] = level[x] + 1
                    queue.append(to[e])
        if level[t] < 0:
            return flow
        it[:] = [0] * n_nodes
        while True:
            got = push(s, 1 << 60)
            if not got:
                break
            flow += got


# =========================================================================== traffic
@dataclass(frozen=True)
class LoadBalanceResult:
    """Per-trial utilisations of five ways to spread one NIC's traffic over equal-cost paths
    (:func:`simulate_load_balance`).

    Every ``*_utilisation`` (and ``ecmp_sync``) is an outcome of the simulated mechanism,
    in ``[0, 1]``: the ideal time to send the message at the offered rate over the time
    the scheme takes, except ``ecmp_utilisation``, ECMP's steady-state throughput (served
    over offered while every flow lasts). ``path_rates`` are the trials' path speeds
    (1 = a port's nominal rate), the assumption that was varied.
    """

    n_flows: int
    n_paths: int
    load: float
    #: ECMP, steady state: Σ_j min(r_j, n_j × flow rate) over the offered load
    ecmp_utilisation: np.ndarray
    #: ECMP, a collective: the whole message waits for its slowest flow
    ecmp_sync: np.ndarray
    #: adaptive packet spraying: each packet to the path that delivers it first
    spray_utilisation: np.ndarray
    #: the busiest path's offered load over its speed under ECMP (> 1: congested)
    max_path_load: np.ndarray
    #: oblivious round-robin spraying: packet k on path k mod E, whatever its speed
    rr_utilisation: np.ndarray | None = None
    #: adaptive switching of flowlets (bursts of ``flowlet_packets``) instead of packets
    flowlet_utilisation: np.ndarray | None = None
    #: path speeds per trial, shape (trials, n_paths)
    path_rates: np.ndarray | None = None
    #: round-robin's largest queue on a path, packets (a slow path keeps receiving its share)
    rr_queue_packets: np.ndarray | None = None
    #: packets a receiver that delivers in order must hold under round-robin spraying
    rr_reorder_packets: np.ndarray | None = None
    #: packets in the message (a multiple of n_flows) and per flowlet
    message_packets: int = 0
    flowlet_packets: float = 0.0

    @property
    def ecmp_mean(self) -> float:
        """Mean ECMP throughput utilisation over the trials."""
        return float(self.ecmp_utilisation.mean())

    @property
    def spray_mean(self) -> float:
        """Mean utilisation of adaptive packet spraying."""
        return float(self.spray_utilisation.mean())

    @property
    def ecmp_sync_mean(self) -> float:
        """Mean ECMP utilisation when the slowest flow decides (a collective)."""
        return float(self.ecmp_sync.mean())

    @property
    def rr_mean(self) -> float:
        """Mean utilisation of oblivious round-robin spraying."""
        return float(np.mean(self.rr_utilisation))

    @property
    def flowlet_mean(self) -> float:
        """Mean utilisation of adaptive flowlet switching."""
        return float(np.mean(self.flowlet_utilisation))

    @property
    def capacity_mean(self) -> float:
        """Mean share of the nominal capacity the paths offered (Σ r_j / E): the most any
        scheme could reach at full load."""
        return float(np.mean(self.path_rates.mean(axis=1)))


def _greedy_makespan(rates: np.ndarray, jobs: int) -> np.ndarray:
    """Time at which ``jobs`` equal jobs (size 1) finish when each goes to the path that
    completes it first, paths of speeds ``rates`` (trials, E) serving one job at a time.

    The greedy choice is optimal for equal jobs on paths of different speeds: the makespan
    is the ``jobs``-th smallest of the completion slots ``k / r_j`` (k = 1, 2, ...). It lies
    in ``[N/Σr, (N+E)/Σr]``: the slots up to ``N/Σr`` are counted at once, and the remaining
    ones (at most E) are taken one by one, each the earliest next slot of any path.
    """
    n_trials, _ = rates.shape
    x = jobs / rates.sum(axis=1)                                      # (T,)
    taken = np.floor(x[:, None] * rates + 1e-9)                       # slots <= x per path
    need = jobs - taken.sum(axis=1)                                   # (T,), 0..E
    out = x.copy()
    rows = np.arange(n_trials)
    nxt = (taken + 1) / rates                                         # each path's next slot
    for step in range(1, int(need.max(initial=0)) + 1):
        j = nxt.argmin(axis=1)
        slot = nxt[rows, j]
        out = np.where(need == step, slot, out)
        taken[rows, j] += 1
        nxt[rows, j] = (taken[rows, j] + 1) / rates[rows, j]
    return out


def simulate_load_balance(n_flows: int, n_paths: int, *, load: float = 1.0,
                          path_slowdown: float = 0.0, trials: int = 2000,
                          seed: int = 0, slow_paths: int = 0, slow_factor: float = 0.5,
                          message_packets: int = 1024,
                          flowlet_packets: float = 64) -> LoadBalanceResult:
    """How well five schemes use ``n_paths`` equal-cost paths (or planes) of unequal speed.

    One NIC sends a message of ``message_packets`` packets as ``n_flows`` equal flows over
    ``n_paths`` paths whose nominal rate is one packet per unit time each, offering
    ``load × n_paths`` packets per unit time in all (load 1: its full line rate). What
    varies between trials, the stated assumption:

    * **path speeds** ``r_j``: each path loses a random share, uniform in
      ``[0, path_slowdown]`` (cross traffic, pauses, retransmissions), and the first
      ``slow_paths`` paths run at ``slow_factor`` of their rate (a plane with a degraded or
      failed link, a link retrained to a lower speed);
    * **ECMP's hash**: each flow lands on a uniformly random path (Hopps 2000, RFC 2992).

    The schemes, each simulated as paths serving their own queues (first in, first out):

    * **ECMP** pins each flow to its path; flows sharing a path split it fairly. Throughput
      utilisation = Σ_j min(r_j, n_j × flow rate) / offered (``ecmp_utilisation``); a
      collective ends with its slowest flow, ``min_j (r_j / n_j) / flow rate``
      (``ecmp_sync``).
    * **Oblivious round-robin spraying** sends packet k on path k mod E. Every path gets the
      same share, so the slowest path decides the finish, its queue grows by
      ``load − r_j`` per unit time, and packets arrive out of order by as much as the
      queues differ: ``rr_queue_packets`` and ``rr_reorder_packets`` (what a receiver that
      delivers in order must hold; a NIC that places packets straight into memory,
      out of order, needs none of it).
    * **Adaptive packet spraying** sends each packet to the path that will deliver it
      first (the path with the least queued work: switch adaptive routing, a sender that
      steers by congestion signals). It pools the paths' speeds, up to a last-packet
      tail: ``spray_utilisation``.
    * **Adaptive flowlet switching** does the same for bursts of ``flowlet_packets``
      (CONGA, LetFlow): coarser choices leave a longer tail; a flowlet as large as a flow
      is adaptive flow placement. Flowlets are assumed separated by gaps long enough to
      keep each flow in order (the premise of flowlet switching; an RDMA stream that
      never pauses has no such gaps and falls back to ECMP).

    Every utilisation is the ideal time (the message at the offered rate,
    ``N / (load × E)``) over the time the scheme needs, so it is an outcome of the queues,
    not an input; at full load it cannot exceed the paths' mean speed, ``capacity_mean``.
    The NIC's own injection is fluid (no per-packet serialisation at the sender).

    Published multi-plane designs for comparison: DeepSeek's multi-plane two-layer fat
    tree (DeepSeek-AI, arXiv 2412.19437; Zhao et al., "Insights into DeepSeek-V3", ISCA 2025,
    arXiv 2505.09343, Sec. 5) puts each GPU's NIC on one of eight 400G InfiniBand planes;
    spraying one connection over several ports needs out-of-order placement, which its
    ConnectX-7 NICs lack. Alibaba HPN (Qian et al., SIGCOMM 2024) gives each NIC two 200G
    ports on two planes, removing hash polarisation between tiers; it reports about 15 %
    more training throughput than its previous network. Ultra Ethernet's transport (1.0,
    2025) sprays packets and accepts them out of order.

    Exact repeats for a seed; ``message_packets`` is rounded to a multiple of ``n_flows``.
    """
    f = check_int("n_flows", n_flows)
    e = check_int("n_paths", n_paths)
    ld = check_range("load", load, 0.0, 1.0)
    if ld == 0:
        raise ValueError("load must be a number > 0 and <= 1, got 0")
    slow = check_range("path_slowdown", path_slowdown, 0.0, 0.99)
    n_slow = check_int("slow_paths", slow_paths, minimum=0, maximum=e)
    factor = check_range("slow_factor", slow_factor, 0.01, 1.0)
    n_trials = check_int("trials", trials)
    per_flow = max(1, round(check_int("message_packets", message_packets) / f))
    n_pkts = f * per_flow
    burst = check_positive("flowlet_packets", flowlet_packets)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"simulating n_flows={f:,} on n_paths={e:,}, trials={n_trials:,}",
               n_trials * (f + 2 * e + e * e), "use fewer trials, flows or paths")
    path = rng.integers(0, e, size=(n_trials, f))
    loss = rng.uniform(0.0, slow, size=(n_trials, e)) if slow > 0 else np.zeros((n_trials, e))
    rates = (1.0 - loss) * np.where(np.arange(e) < n_slow, factor, 1.0)[None, :]
    counts = np.bincount((np.arange(n_trials)[:, None] * e + path).ravel(),
                         minlength=n_trials * e).reshape(n_trials, e).astype(float)
    ideal = n_pkts / (ld * e)                                         # time at the offered rate

    # ECMP: flows pinned, fair share per path
    rate = ld * e / f
    served = np.minimum(rates, counts * rate).sum(axis=1)
    with np.errstate(divide="ignore"):
        share = np.where(counts > 0, rates / np.where(counts > 0, counts, 1.0), np.inf)
    sync = np.minimum(1.0, share.min(axis=1) / rate)

    # adaptive spraying (packets) and flowlet switching (bursts), greedy earliest finish
    spray = ideal / np.maximum(_greedy_makespan(rates, n_pkts), ideal)
    per_burst = per_flow / math.ceil(per_flow / burst)                # equal flowlets per flow
    n_bursts = round(n_pkts / per_burst)
    flowlet = ideal / np.maximum(_greedy_makespan(rates / per_burst, n_bursts), ideal)

    # oblivious round-robin: path j gets every E-th packet, injected at `ld` per unit time
    n_j = np.full(e, n_pkts // e) + (np.arange(e) < n_pkts % e)
    speed = np.minimum(rates, ld)                                     # a path delivers this fast
    rr = ideal / np.maximum((n_j[None, :] / speed).max(axis=1), ideal)
    queue = (n_j[None, :] * np.clip(1.0 - rates / ld, 0.0, None)).max(axis=1)
    # in-order delivery waits for the slowest path: at each path's finish time t, the paths
    # have delivered min(speed t, n_j), in order only E x the least of them
    t_end = n_j[None, :] / speed                                      # (T, E) breakpoints
    done = np.minimum(speed[:, None, :] * t_end[:, :, None], n_j[None, None, :])
    held = done.sum(axis=2) - e * done.min(axis=2)
    return LoadBalanceResult(
        n_flows=f, n_paths=e, load=ld, ecmp_utilisation=np.minimum(1.0, served / (ld * e)),
        ecmp_sync=sync, spray_utilisation=np.minimum(1.0, spray),
        max_path_load=(counts * rate / rates).max(axis=1),
        rr_utilisation=np.minimum(1.0, rr), flowlet_utilisation=np.minimum(1.0, flowlet),
        path_rates=rates, rr_queue_packets=queue, rr_reorder_packets=held.max(axis=1),
        message_packets=n_pkts, flowlet_packets=float(per_burst))


def ecmp_expected_utilisation(n_flows: int, n_paths: int) -> float:
    """Mean ECMP utilisation on identical paths at full load, in closed form.

    Each of ``F`` flows lands on a path uniformly at random, so a path carries
    ``m ~ Binomial(F, 1/E)`` flows and serves ``min(1, m·E/F)`` of its capacity (flows
    offer ``E/F`` each): the mean is ``Σ_m P(m) · min(1, m·E/F)``. With ``F = E`` it is
    ``1 − (1 − 1/E)^E``, the share of busy bins when E balls go into E bins, which tends
    to ``1 − 1/e ≈ 63 %``. :func:`simulate_load_balance` with ``path_slowdown=0`` and
    ``load=1`` converges to it.
    """
    f = check_int("n_flows", n_flows)
    e = check_int("n_paths", n_paths)
    check_work(f"the exact sum over n_flows={f:,}", f, "use fewer flows (the mean tends to "
               "1 - 1/e as flows and paths grow together)", limit=MAX_WORK // 100)
    if e == 1:
        return 1.0  # one path carries every flow, fully used
    m = np.arange(f + 1)
    # Binomial(F, 1/E) probabilities in logarithms: math.comb(F, m) overflows a float past F ~ 1000
    log_c = np.array([math.lgamma(f + 1) - math.lgamma(k + 1) - math.lgamma(f - k + 1)
                      for k in range(f + 1)])
    log_p = log_c + m * math.log(1.0 / e) + (f - m) * math.log1p(-1.0 / e)
    return float(np.sum(np.exp(log_p) * np.minimum(1.0, m * e / f)))


def load_balance_sweep(n_flows: Sequence[int], n_paths: Sequence[int], *, load: float = 1.0,
                       path_slowdown: float = 0.0, trials: int = 1000,
                       seed: int = 0, **kw) -> dict[str, np.ndarray]:
    """Mean utilisations over a grid: arrays of shape ``(len(n_paths), len(n_flows))``.

    Keys ``ecmp``, ``ecmp_sync``, ``spray``, ``rr`` and ``flowlet``. Each cell is one call of
    :func:`simulate_load_balance` with the same seed; ``kw`` (``slow_paths``,
    ``slow_factor``, ``message_packets``, ``flowlet_packets``) is passed on.
    """
    flows = [check_int("n_flows", x) for x in n_flows]
    paths = [check_int("n_paths", x) for x in n_paths]
    n_trials = check_int("trials", trials)
    check_work(f"a sweep of {len(flows)} n_flows by {len(paths)} n_paths, trials={n_trials:,}",
               n_trials * sum(f + 2 * e + e * e for f in flows for e in paths),
               "use fewer trials, flows or paths")
    keys = {"ecmp": "ecmp_mean", "ecmp_sync": "ecmp_sync_mean", "spray": "spray_mean",
            "rr": "rr_mean", "flowlet": "flowlet_mean"}
    out = {key: np.zeros((len(paths), len(flows))) for key in keys}
    for i, e in enumerate(paths):
        for j, f in enumerate(flows):
            r = simulate_load_balance(f, e, load=load, path_slowdown=path_slowdown,
                                      trials=trials, seed=seed, **kw)
            for key, attr in keys.items():
                out[key][i, j] = getattr(r, attr)
    return out


@dataclass(frozen=True)
class ReorderResult:
    """What a receiver of a sprayed stream needed: its reorder buffer, and the bound."""

    buffer_bytes: float
    bound_bytes: float
    out_of_order_fraction: float
    delivery_utilisation: float


def reorder_buffer_bytes(rate_gbps: float, skew_s: float) -> float:
    """Bytes a receiver holds while waiting for the slowest path: ``rate × skew``.

    While the packet on the slowest path is in flight, the faster paths keep delivering
    at up to the stream's full rate; nothing can be handed on in order until it lands.
    """
    rate = check_positive("rate_gbps", rate_gbps)
    skew = check_positive("skew_s", skew_s, allow_zero=True)
    return units.gbps_to_gbytes_s(rate) * 1e9 * skew


def simulate_reordering(n_paths: int, *, rate_gbps: float = 800.0, packet_bytes: int = 4096,
                        n_packets: int = 20_000, skew_us: float = 2.0,
                        jitter_us: float = 0.5, seed: int = 0) -> ReorderResult:
    """One stream sprayed round-robin over ``n_paths``, reassembled in order (seeded).

    Packets leave back to back at ``rate_gbps`` in total, packet ``i`` on path
    ``i mod n_paths``. Each path has a fixed extra delay, uniform in ``[0, skew_us]``
    (different lengths and queues), and each packet a further uniform ``[0, jitter_us]``;
    a path delivers in order (first in, first out). The receiver hands packets on in
    sequence; a packet that arrives early waits in the reorder buffer. Returns the most
    bytes ever held, against the bound ``rate × (skew + jitter)`` of
    :func:`reorder_buffer_bytes`, the share of packets that had to wait, and the delivery
    utilisation (ideal time over actual time to hand on the whole stream).
    """
    e = check_int("n_paths", n_paths)
    rate = check_positive("rate_gbps", rate_gbps)
    size = check_int("packet_bytes", packet_bytes)
    m = check_int("n_packets", n_packets)
    if m < e:
        raise ValueError(f"n_packets={m} must be at least n_paths={e}: one packet per path")
    skew = check_positive("skew_us", skew_us, allow_zero=True) * 1e-6
    jitter = check_positive("jitter_us", jitter_us, allow_zero=True) * 1e-6
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"simulating n_packets={m:,}", 8 * m, "use fewer packets")
    t_pkt = size / (units.gbps_to_gbytes_s(rate) * 1e9)
    m -= m % e
    send = np.arange(m) * t_pkt
    path_delay = rng.uniform(0.0, skew, size=e)
    arrive = (send + np.tile(path_delay, m // e) + rng.uniform(0.0, jitter, size=m))
    arrive = np.maximum.accumulate(arrive.reshape(-1, e), axis=0).ravel()  # FIFO per path
    deliver = np.maximum.accumulate(arrive)
    start, end = np.sort(arrive), np.sort(deliver)
    held = np.arange(1, m + 1) - np.searchsorted(end, start, side="right")
    ideal = m * t_pkt
    actual = deliver[-1] - deliver[0] + t_pkt
    return ReorderResult(buffer_bytes=float(max(held.max(), 0) * size),
                         bound_bytes=reorder_buffer_bytes(rate, skew + jitter) + size,
                         out_of_order_fraction=float(np.mean(deliver > arrive)),
                         delivery_utilisation=float(min(1.0, ideal / actual)))


# =========================================================================== transports
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


@functools.cache
def _transports() -> dict[str, TransportMeasurement]:
    return load_entries(DATA_DIR / "transports.toml", "measurement", TransportMeasurement)


def transport_measurements(transport: str | None = None) -> list[TransportMeasurement]:
    """Published RDMA / TCP measurements, optionally of one transport, in file order."""
    found = list(_transports().values())
    if transport is None:
        return found
    check_choice("transport", transport, sorted({m.transport for m in found}))
    return [m for m in found if m.transport == transport]


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




