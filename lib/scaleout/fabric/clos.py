"""Clos planes: tiers of radix-k switches, their counts, bisection and hops.

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
half-empty); see :func:`size_fabric`. :func:`fabric_sweep` sizes many endpoint counts at
once with the same counting formulas (:func:`_counts`, their one home).

This module also holds the constants the rest of :mod:`scaleout.fabric` shares (tiers,
link types, default cable lengths, a switch's latency, propagation in fibre).
Bandwidths are per direction unless a name ends in ``_bidir``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import units
from ..checks import (
    MAX_RADIX,
    check_array,
    check_choice,
    check_int,
    check_positive,
    real_bound,
)

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
