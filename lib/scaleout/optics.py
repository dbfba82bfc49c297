"""Optics: the modules and cables that carry a fabric's links, and what they cost in watts.

A network link between two ports is either a copper cable (a few metres) or a fibre
with an optical module at each end. ``data/optics.toml`` lists modules and cables at
400G, 800G and 1.6T with their technology (DSP-retimed pluggables, linear pluggable
optics, near- and co-packaged optics, passive and active copper), reach, lanes, fibres,
power, relative cost and added latency, each with its source; figures that are the
project's own assumptions (every relative cost, some powers) say so there.

Conventions of the bill (:func:`fabric_bill`):

* an **optical link** needs **two** module ends, one at each end of the fibre; a module's
  ``power_w`` and ``relative_cost`` are for one end, so a link costs twice that. For NPO
  and CPO an "end" is one port's share of the on-board or on-package optical engines.
* a **copper link** is **one** cable whose ``power_w`` and ``relative_cost`` cover both
  ends; it needs no module and no fibre.
* ``fibres`` are those in the link's fibre cable (transmit and receive, e.g. 16 for a DR8
  link); fibre cabling, patch panels and the switches themselves are not priced.
* a link slower than every unit (a 200G port of a multi-plane NIC) is a **breakout** link:
  it takes its share of a faster unit split by fibre pair (an 800G DR8 module serves four
  200G links), rounded up to whole units at each end of a group. Units of the link's own
  speed are always preferred.
* a module is never used beyond its ``reach_m``.

Taught in ``notebooks/10_optical_modules.ipynb``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from . import units
from .catalog import DATA_DIR, Entry, field_of, load_entries, lookup
from .checks import check_array, check_bool, check_choice, check_int, check_positive

__all__ = [
    "CHOICES",
    "COPPER",
    "FORM_FACTORS",
    "LANE_DATA_GBPS",
    "OPTICAL",
    "REACH_CLASSES",
    "TECHNOLOGIES",
    "BillSweep",
    "FabricBill",
    "GroupBill",
    "LinkGroupLike",
    "Module",
    "OpticsCatalog",
    "Technology",
    "added_latency_ns",
    "candidates",
    "choose",
    "fabric_bill",
    "fibres_needed",
    "generation_cost_ratio",
    "lanes_needed",
    "link_speeds_gbps",
    "load_catalog",
    "module",
    "module_names",
    "modules",
    "pj_per_bit",
    "relative_cost_at_ratio",
    "speeds_gbps",
    "sweep_bill",
    "sweep_link_groups",
    "technologies",
    "technology",
]

#: Optical technologies, from the conventional module to the optics inside the package.
OPTICAL = ("dsp", "lpo", "npo", "cpo")
#: Copper cables: passive (DAC) and with an analog redriver at each end (ACC).
COPPER = ("dac", "acc")
TECHNOLOGIES = OPTICAL + COPPER
#: What :func:`fabric_bill` accepts for its optical links; "auto" is the cheapest that reaches.
CHOICES = ("auto", *OPTICAL)
REACH_CLASSES = ("SR", "DR", "FR", "LR", "CR")
FORM_FACTORS = ("OSFP", "QSFP112", "QSFP-DD", "OSFP-XD", "on-board", "on-package")
#: Data one electrical lane carries, Gb/s, by SerDes class: a "112G" lane signals 53.125 GBd
#: PAM4 = 106.25 Gb/s for 100 Gb/s of data (IEEE 802.3ck); a "224G" lane 106.25 GBd PAM4 =
#: 212.5 Gb/s for 200 Gb/s of data (IEEE 802.3dj). The rest is FEC and coding overhead.
LANE_DATA_GBPS = {112: 100.0, 224: 200.0}
#: Fibres per parallel-optics lane: one to send, one to receive.
FIBRES_PER_LANE = 2


# --------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class Module(Entry):
    """One optical module or copper cable as sold (``data/optics.toml`` documents every field)."""

    name: str = field_of("", "catalog name")
    speed_gbps: float = field_of("Gb/s", "data rate of the link it serves, per direction")
    technology: str = field_of("", "one of TECHNOLOGIES")
    reach_class: str = field_of("", "SR, DR, FR, LR or CR (copper)")
    reach_m: float = field_of("m", "longest link it is specified for")
    lane_gbps: int = field_of("Gb/s", "SerDes class of its lanes: 112 or 224")
    lanes: int = field_of("lanes", "electrical (= optical) lanes")
    fibres: int = field_of("fibres", "fibres one link needs (transmit + receive); 0 for copper",
                     allow_zero=True)
    power_w: float = field_of("W", "power of one unit: a module (one end) or a whole copper cable",
                        allow_zero=True)
    relative_cost: float = field_of("",
                                    "price of one unit relative to an 800G DSP DR8 module (1.0); "
                              "the project's assumption")
    latency_ns: float = field_of("ns", "latency one unit adds to one direction of a link",
                           allow_zero=True)
    form_factor: str = field_of("", "one of FORM_FACTORS")
    year: int = field_of("year", "year of first availability (or expected)")
    source: str = field_of("", "where the figures come from")

    def __post_init__(self) -> None:
        super().__post_init__()
        label = f"Module {self.name!r}"
        for field_name, allowed in (("technology", TECHNOLOGIES), ("reach_class", REACH_CLASSES),
                                    ("lane_gbps", tuple(LANE_DATA_GBPS)),
                                    ("form_factor", FORM_FACTORS)):
            value = getattr(self, field_name)
            if value not in allowed:
                raise ValueError(f"{label}: field {field_name!r} must be one of "
                                 f"{', '.join(map(repr, allowed))}; got {value!r}")
        carried = self.lanes * LANE_DATA_GBPS[self.lane_gbps]
        if not math.isclose(carried, self.speed_gbps):
            raise ValueError(
                f"{label}: field 'lanes' = {self.lanes} lanes x {LANE_DATA_GBPS[self.lane_gbps]:g} "
                f"Gb/s ({self.lane_gbps}G class) = {carried:g} Gb/s, not speed_gbps = "
                f"{self.speed_gbps:g}")
        copper = self.technology in COPPER
        if copper != (self.reach_class == "CR"):
            raise ValueError(f"{label}: field 'reach_class' must be 'CR' exactly when the "
                             f"technology is copper ({', '.join(COPPER)}); got "
                             f"{self.reach_class!r} for {self.technology!r}")
        if copper and self.fibres:
            raise ValueError(f"{label}: field 'fibres' must be 0 for a copper cable, "
                             f"got {self.fibres}")
        if not copper and self.fibres == 0:
            raise ValueError(f"{label}: field 'fibres' must be > 0 for an optical module")

    @property
    def is_optical(self) -> bool:
        """True for a module on fibre; False for a copper cable."""
        return self.technology in OPTICAL

    @property
    def units_per_link(self) -> int:
        """Units one link needs: 2 modules (one per end) for optics, 1 cable for copper."""
        return 2 if self.is_optical else 1

    @property
    def lane_data_gbps(self) -> float:
        """Data one of its lanes carries, Gb/s (100 for 112G lanes, 200 for 224G)."""
        return LANE_DATA_GBPS[self.lane_gbps]

    @property
    def pj_per_bit(self) -> float:
        """Energy per bit through one unit, pJ: watts ÷ Gb/s × 1000 (:func:`units.pj_per_bit`)."""
        return float(units.pj_per_bit(self.power_w, self.speed_gbps))

    @property
    def link_power_w(self) -> float:
        """Watts one link of this module or cable draws (both ends)."""
        return self.units_per_link * self.power_w

    @property
    def link_relative_cost(self) -> float:
        """Relative cost of one link's modules or cable (both ends; fibre not priced)."""
        return self.units_per_link * self.relative_cost

    @property
    def link_latency_ns(self) -> float:
        """Latency added to one direction of a link: the signal crosses both modules."""
        return self.units_per_link * self.latency_ns

    @property
    def relative_cost_per_tbps(self) -> float:
        """Relative cost of one unit per Tb/s of its speed: how cheap a bit is."""
        return self.relative_cost / (self.speed_gbps / 1000.0)

    @property
    def breakout_gbps(self) -> float:
        """The smallest link it can be split into, Gb/s (a breakout, or splitter, cable).

        Parallel optics split by fibre pair (a DR8 800G module serves up to 8 links of
        100G, one fibre pair each); wavelength-multiplexed optics by their multiplexed
        pairs (a 2xFR4 800G serves two 400G links); copper by lane.
        """
        parts = self.fibres // 2 if self.is_optical else self.lanes
        return self.speed_gbps / max(parts, 1)

    def serves(self, gbps: float) -> bool:
        """Whether one link of ``gbps`` is this unit whole or one of its breakout links."""
        ratio, step = self.speed_gbps / gbps, gbps / self.breakout_gbps
        return (ratio >= 1 - 1e-9 and math.isclose(ratio, round(ratio))
                and step >= 1 - 1e-9 and math.isclose(step, round(step)))

    def units_for(self, gbps: float) -> float:
        """Units one link of ``gbps`` takes: :attr:`units_per_link` × ``gbps / speed_gbps``
        (a 200G link of a broken-out 800G module takes a quarter of a module at each end)."""
        return self.units_per_link * gbps / self.speed_gbps


@dataclass(frozen=True)
class Technology(Entry):
    """The qualitative trade-offs of one technology, for the notebook's tables."""

    name: str = field_of("", "one of TECHNOLOGIES")
    label: str = field_of("", "name for tables")
    kind: str = field_of("", "'optical' or 'copper'")
    fec: str = field_of("", "how errors are corrected, and where")
    standard: str = field_of("", "the standard or agreement it follows")
    interoperable: bool = field_of("", "a multi-vendor standard exists and is mature")
    field_replaceable: bool = field_of("", "a failed unit is swapped at the front panel")
    maturity: str = field_of("", "how established it is")
    best_for: str = field_of("", "where it fits")
    pros: str = field_of("", "what it is good at")
    cons: str = field_of("", "what holds it back")
    source: str = field_of("", "what the description rests on")

    def __post_init__(self) -> None:
        super().__post_init__()
        label = f"Technology {self.name!r}"
        if self.name not in TECHNOLOGIES:
            raise ValueError(f"{label}: field 'name' must be one of "
                             f"{', '.join(map(repr, TECHNOLOGIES))}; got {self.name!r}")
        want = "copper" if self.name in COPPER else "optical"
        if self.kind != want:
            raise ValueError(f"{label}: field 'kind' must be {want!r}, got {self.kind!r}")


@dataclass(frozen=True)
class OpticsCatalog:
    """Modules and technologies of one optics file, keyed by name."""

    modules: dict[str, Module]
    technologies: dict[str, Technology]


def load_catalog(path: Path | str) -> OpticsCatalog:
    """Load and validate an optics file (``[[module]]`` and ``[[technology]]`` entries).

    Raises
    ------
    ValueError
        Naming the file, the entry and the field (a missing, unknown or malformed field,
        a lane count that does not make the speed, a module whose technology the file does
        not describe).
    """
    path = Path(path)
    mods = load_entries(path, "module", Module)
    techs = load_entries(path, "technology", Technology)
    for i, m in enumerate(mods.values(), start=1):
        if m.technology not in techs:
            raise ValueError(f"{path.name}: [[module]] entry {i} ({m.name!r}): field "
                             f"'technology' = {m.technology!r} has no [[technology]] entry")
    return OpticsCatalog(mods, techs)


@functools.cache
def _catalog() -> OpticsCatalog:
    return load_catalog(DATA_DIR / "optics.toml")


# --------------------------------------------------------------------------- lookups
def module(spec: str | Module) -> Module:
    """A module or cable by catalog name or alias (``"800G LPO DR8"``, ``"800G LPO"``).

    Raises
    ------
    ValueError
        For an unknown name, with close matches suggested.
    """
    if isinstance(spec, Module):
        return spec
    return lookup("module", _catalog().modules, spec)


def technology(name: str) -> Technology:
    """The trade-offs of one technology (``"dsp"``, ``"lpo"``, ``"npo"``, ``"cpo"``, ...)."""
    return _catalog().technologies[check_choice("technology", name, TECHNOLOGIES)]


def technologies() -> list[Technology]:
    """Every technology, in :data:`TECHNOLOGIES` order."""
    return [technology(name) for name in TECHNOLOGIES]


def speeds_gbps() -> list[float]:
    """The link speeds the catalog has modules for, Gb/s, ascending."""
    return sorted({m.speed_gbps for m in _catalog().modules.values()})


def modules(*, technology: str | Iterable[str] | None = None, speed_gbps: float | None = None,
            lane_gbps: int | None = None, reach_class: str | None = None) -> list[Module]:
    """Catalog modules and cables in file order, optionally filtered.

    Parameters
    ----------
    technology
        One of :data:`TECHNOLOGIES`, or several.
    speed_gbps
        One of :func:`speeds_gbps`.
    lane_gbps
        112 or 224.
    reach_class
        One of :data:`REACH_CLASSES`.
    """
    found = list(_catalog().modules.values())
    if technology is not None:
        techs = [technology] if isinstance(technology, str) else list(technology)
        for t in techs:
            check_choice("technology", t, TECHNOLOGIES)
        found = [m for m in found if m.technology in techs]
    if speed_gbps is not None:
        check_choice("speed_gbps", speed_gbps, speeds_gbps())
        found = [m for m in found if m.speed_gbps == speed_gbps]
    if lane_gbps is not None:
        check_choice("lane_gbps", lane_gbps, tuple(LANE_DATA_GBPS))
        found = [m for m in found if m.lane_gbps == lane_gbps]
    if reach_class is not None:
        check_choice("reach_class", reach_class, REACH_CLASSES)
        found = [m for m in found if m.reach_class == reach_class]
    return found


def module_names() -> list[str]:
    """Catalog module and cable names, in file order."""
    return list(_catalog().modules)


# --------------------------------------------------------------------------- reach
_PREFER = {
    "cost": lambda m, g: (not math.isclose(m.speed_gbps, g), m.units_for(g) * m.relative_cost,
                          m.units_for(g) * m.power_w, m.reach_m),
    "power": lambda m, g: (not math.isclose(m.speed_gbps, g), m.units_for(g) * m.power_w,
                           m.units_for(g) * m.relative_cost, m.reach_m),
}


def link_speeds_gbps() -> list[float]:
    """Link speeds some catalog unit serves, whole or as a breakout link, Gb/s, ascending."""
    out = set()
    for m in _catalog().modules.values():
        parts = round(m.speed_gbps / m.breakout_gbps)
        out |= {m.speed_gbps / j for j in range(1, parts + 1) if parts % j == 0}
    return sorted(out)


def _check_link_gbps(gbps) -> float:
    gbps = check_positive("gbps", gbps)
    speeds = link_speeds_gbps()
    if not any(math.isclose(gbps, x) for x in speeds):
        raise ValueError(f"gbps must be a link speed some module or cable serves (whole or as "
                         f"a breakout link): {', '.join(f'{x:g}' for x in speeds)}; got {gbps:g}")
    return gbps


def candidates(length_m: float, gbps: float, *, lane_gbps: int | None = None,
               technology: str | Iterable[str] | None = None,
               prefer: str = "cost") -> list[Module]:
    """Modules and cables that can serve one link of ``length_m`` at ``gbps``, best first.

    A unit qualifies when it serves ``gbps`` (its speed, or one of its breakout links:
    :meth:`Module.serves`) and its ``reach_m`` is at least ``length_m``: nothing is ever
    offered beyond its reach. Units of the link's own speed come first (a breakout is
    used only for a speed no unit has, such as 200G ports); then they are ranked by the
    cost of the link's share of its units (both ends), then their power
    (``prefer="cost"``), or power first (``prefer="power"``); ties go to the shorter reach.

    Parameters
    ----------
    length_m
        Link length, metres (> 0).
    gbps
        Link speed, Gb/s: one of :func:`link_speeds_gbps`.
    lane_gbps, technology
        Optional filters (see :func:`modules`).

    Returns
    -------
    list of Module
        Possibly empty (no unit of that kind reaches).
    """
    length_m = check_positive("length_m", length_m)
    gbps = _check_link_gbps(gbps)
    key = _PREFER[check_choice("prefer", prefer, tuple(_PREFER))]
    pool = modules(technology=technology, lane_gbps=lane_gbps)
    return sorted((m for m in pool if m.serves(gbps) and m.reach_m >= length_m),
                  key=lambda m: key(m, gbps))


def choose(length_m: float, gbps: float, choice: str = "auto", *, lane_gbps: int | None = None,
           copper: bool = True) -> tuple[Module, bool]:
    """The unit one link gets in a bill, and whether ``choice`` had to be abandoned.

    Copper first, when ``copper`` and a cable reaches (the cheapest one). Otherwise the
    cheapest module of technology ``choice`` that reaches; if none of that technology
    reaches (LPO at 2 km, say), the cheapest optical module that does, and the flag is
    True. ``choice="auto"`` is the cheapest optical module that reaches.

    Raises
    ------
    ValueError
        When nothing at that speed (and lane rate) reaches ``length_m``.
    """
    check_bool("copper", copper)
    choice = _choice(choice)
    if copper:
        wires = candidates(length_m, gbps, lane_gbps=lane_gbps, technology=COPPER)
        if wires:
            return wires[0], False
    if choice != "auto":
        own = candidates(length_m, gbps, lane_gbps=lane_gbps, technology=choice)
        if own:
            return own[0], False
    optics = candidates(length_m, gbps, lane_gbps=lane_gbps, technology=OPTICAL)
    if not optics:
        pool = [m for m in modules(lane_gbps=lane_gbps) if m.serves(gbps)]
        longest = max(pool, key=lambda m: m.reach_m) if pool else None
        lanes = f" with {lane_gbps}G lanes" if lane_gbps is not None else ""
        if longest is None:
            raise ValueError(f"no module or cable for {gbps:g} Gb/s links{lanes} is in the "
                             "catalog")
        raise ValueError(f"length_m = {length_m:g} m is beyond the reach of every module at "
                         f"{gbps:g} Gb/s{lanes}; the longest is {longest.name!r} "
                         f"({longest.reach_m:g} m)")
    return optics[0], choice != "auto"


# --------------------------------------------------------------------------- lanes and energy
def lanes_needed(gbps, lane_gbps: int):
    """Electrical (= optical) lanes needed for ``gbps`` of data at a SerDes class.

    ``ceil(gbps / data per lane)`` with 100 Gb/s per 112G lane and 200 Gb/s per 224G lane
    (IEEE 802.3ck, 802.3dj; :data:`LANE_DATA_GBPS`): 1.6 Tb/s takes 16 lanes of 112G or 8
    of 224G. Works on arrays.
    """
    check_choice("lane_gbps", lane_gbps, tuple(LANE_DATA_GBPS))
    gbps = check_array("gbps", gbps, allow_zero=False)
    out = np.maximum(1, np.ceil(gbps / LANE_DATA_GBPS[lane_gbps] - 1e-9)).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def fibres_needed(gbps, lane_gbps: int, *, wavelengths_per_fibre: int = 1):
    """Fibres (transmit + receive) one link of ``gbps`` needs at a SerDes class.

    Parallel optics (SR, DR) give every lane its own fibre each way:
    ``2 x lanes``. Wavelength multiplexing (FR4, LR4) puts ``wavelengths_per_fibre``
    lanes on one fibre each way: ``2 x ceil(lanes / wavelengths_per_fibre)``. At 112G
    lanes a bandwidth needs twice the lanes, and so twice the fibres, of 224G lanes.
    Works on arrays.
    """
    per = check_int("wavelengths_per_fibre", wavelengths_per_fibre, minimum=1, maximum=16)
    lanes = np.asarray(lanes_needed(gbps, lane_gbps))
    out = FIBRES_PER_LANE * -(-lanes // per)
    return int(out) if out.ndim == 0 else out


def pj_per_bit(spec: str | Module) -> float:
    """Energy per bit of one module or cable, pJ: watts ÷ Gb/s × 1000 (:func:`units.pj_per_bit`).

    An 800G DSP module of 15 W spends 18.75 pJ per bit; an 800G LPO module of 6 W, 7.5.
    A link spends twice its module's figure (a module at each end).
    """
    return module(spec).pj_per_bit


def added_latency_ns(spec: str | Module, links: int = 1) -> float:
    """Latency the units of ``links`` links in a row add to one direction, ns.

    Each optical link crosses two modules (one sending, one receiving), so a DSP module
    of 50 ns adds 100 ns per link; a path of ``links`` links adds ``links`` times that.
    Propagation (about 5 ns per metre of fibre) and the switches are not counted.
    """
    n = check_int("links", links, minimum=0)
    return n * module(spec).link_latency_ns


def generation_cost_ratio(technology: str = "dsp", reach_class: str = "DR") -> float:
    """Relative cost of a 1.6T module (224G lanes) over an 800G one of the same kind.

    The project expects about 1.2-1.4 over the next 3-5 years (``data/optics.toml``).

    Raises
    ------
    ValueError
        When the catalog lacks either module of that technology and reach class.
    """
    found = {}
    for speed, lanes in ((800.0, 112), (1600.0, 224)):
        hits = modules(technology=technology, speed_gbps=speed, lane_gbps=lanes,
                       reach_class=reach_class)
        if not hits:
            raise ValueError(f"no {speed:g}G {technology!r} {reach_class} module with {lanes}G "
                             "lanes in the catalog")
        found[speed] = hits[0]
    return found[1600.0].relative_cost / found[800.0].relative_cost


def _counterpart_800g(m: Module) -> Module:
    """The 800G module (112G lanes) of the same technology and reach class as ``m``."""
    hits = modules(technology=m.technology, speed_gbps=800.0, lane_gbps=112,
                   reach_class=m.reach_class)
    if not hits:
        raise ValueError(f"{m.name!r} has no 800G {m.technology.upper()} {m.reach_class} "
                         "counterpart in the catalog to price it against")
    return hits[0]


def relative_cost_at_ratio(bill: FabricBill, ratio):
    """The bill's relative cost if every 1.6T optical unit cost ``ratio`` times its 800G
    counterpart (same technology and reach class) instead of the catalog's figure.

    The catalog prices a 1.6T module at about 1.2-1.4 times an 800G one, a forecast for
    the next three to five years (``data/optics.toml``); this shows what the bill becomes
    at other ratios. Units other than 1.6T optics (800G and slower modules, copper) keep
    their price. ``ratio`` may be an array; the result then has its shape.
    """
    r = np.asarray(ratio, dtype=float)
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(f"ratio must be a finite number > 0 (or an array of them), got {ratio!r}")
    fixed = 0.0
    per_ratio = 0.0
    for g in bill.groups:
        m = g.module
        if m.is_optical and m.speed_gbps == 1600.0:
            units_used = g.relative_cost / m.relative_cost  # a unit's cost is > 0
            per_ratio += units_used * _counterpart_800g(m).relative_cost
        else:
            fixed += g.relative_cost
    out = fixed + r * per_ratio
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------- the bill
class LinkGroupLike(Protocol):
    """What :func:`fabric_bill` reads from a group of identical links
    (``scaleout.fabric.LinkGroup`` has exactly these fields)."""

    name: str
    count: int
    length_m: float
    gbps: float


def _quantities(counts: np.ndarray, picked: Sequence[Module],
                speeds: Sequence[float]) -> dict[str, np.ndarray]:
    """Module ends, cables, fibres, watts and cost of ``counts`` links per group.

    ``counts`` has shape ``(n_sizes, n_groups)``; group ``j`` uses unit ``picked[j]`` at
    ``speeds[j]`` Gb/s. The one place the bill's arithmetic lives: a link takes
    :meth:`Module.units_for` units (2 module ends or 1 cable, times its share of a broken-
    out unit); each end's units are rounded up to whole ones per group; watts and cost
    follow the units; fibres are the unit's times the link's share. Returns arrays shaped
    like ``counts``.
    """
    share = np.array([g / m.speed_gbps for m, g in zip(picked, speeds, strict=True)])
    per_end = np.ceil(counts * share - 1e-9) if counts.size else np.zeros_like(counts)
    whole = per_end * np.array([m.units_per_link for m in picked])
    optical = np.array([m.is_optical for m in picked], dtype=bool)
    fibres = np.array([m.fibres * g / m.speed_gbps for m, g in zip(picked, speeds,
                                                                   strict=True)])
    return {
        "transceivers": np.where(optical, whole, 0).astype(np.int64),
        "cables": np.where(optical, 0, whole).astype(np.int64),
        "fibres": np.rint(counts * fibres).astype(np.int64),
        "power_w": whole * np.array([m.power_w for m in picked]),
        "relative_cost": whole * np.array([m.relative_cost for m in picked]),
    }


@dataclass(frozen=True)
class GroupBill:
    """The optics of one group of identical links."""

    name: str
    count: int
    length_m: float
    gbps: float
    module: Module
    #: True when the chosen technology could not reach and a cheaper-reaching one was used.
    fell_back: bool
    #: optical module ends (2 per optical link; on-board / on-package ports for NPO, CPO)
    transceivers: int
    #: copper cables (1 per copper link)
    cables: int
    fibres: int
    power_w: float
    relative_cost: float

    @property
    def link_latency_ns(self) -> float:
        """Latency the link's units add to one direction."""
        return self.module.link_latency_ns


@dataclass(frozen=True)
class FabricBill:
    """A whole fabric's optics: per group and in total (:func:`fabric_bill`)."""

    choice: str
    groups: tuple[GroupBill, ...]
    links: int
    transceivers: int
    cables: int
    fibres: int
    power_w: float
    relative_cost: float

    @property
    def bandwidth_gbps(self) -> float:
        """Sum of the links' speeds, Gb/s (one direction)."""
        return float(sum(g.count * g.gbps for g in self.groups))

    @property
    def pj_per_bit(self) -> float:
        """Optics energy per bit carried across one link, pJ: total watts ÷ total link Gb/s."""
        return float(units.pj_per_bit(self.power_w, self.bandwidth_gbps)) \
            if self.bandwidth_gbps else 0.0

    def group(self, name: str) -> GroupBill:
        """One group's bill by name."""
        by_name = {g.name: g for g in self.groups}
        return by_name[check_choice("group", name, list(by_name))]


def _choice(choice) -> str:
    """``choice`` checked against :data:`CHOICES` (case-insensitive: "LPO" is "lpo")."""
    return check_choice("choice", choice.lower() if isinstance(choice, str) else choice, CHOICES)


def _checked_group(g: Any, i: int) -> tuple[str, int, float, float]:
    try:
        name, count, length, gbps = g.name, g.count, g.length_m, g.gbps
    except AttributeError as exc:
        raise ValueError(f"groups[{i}] must have name, count, length_m and gbps "
                         f"(like scaleout.fabric.LinkGroup); {exc}") from None
    where = f"group {name!r}"
    return (str(name), check_int(f"{where}: count", count, minimum=0),
            check_positive(f"{where}: length_m", length),
            check_positive(f"{where}: gbps", gbps))


def fabric_bill(groups: Iterable[LinkGroupLike], choice: str = "auto", *,
                lane_gbps: int | None = None, copper: bool = True) -> FabricBill:
    """Modules, cables, fibres, watts and relative cost of a fabric's links.

    Each group's links get the unit :func:`choose` picks for their length and speed
    (copper where it reaches and ``copper`` is True, else a module of technology
    ``choice``, falling back to the cheapest that reaches). An optical link counts two
    module ends, a copper link one cable (see the module docstring); totals are sums
    over the groups.

    Parameters
    ----------
    groups
        Objects with ``name``, ``count`` (links), ``length_m`` and ``gbps``, e.g.
        ``scaleout.fabric.ClosDesign.link_groups()``.
    choice
        ``"dsp"``, ``"lpo"``, ``"npo"``, ``"cpo"`` or ``"auto"`` (cheapest that reaches).
    lane_gbps
        Restrict to 112G or 224G lanes.
    """
    check_bool("copper", copper)
    choice = _choice(choice)
    shapes = [_checked_group(g, i) for i, g in enumerate(groups)]
    picked = [choose(length, gbps, choice, lane_gbps=lane_gbps, copper=copper)
              for _name, _count, length, gbps in shapes]
    counts = np.array([[count for _name, count, _l, _g in shapes]], dtype=np.int64)
    q = _quantities(counts.reshape(1, len(shapes)), [m for m, _ in picked],
                    [gbps for *_rest, gbps in shapes])
    rows = tuple(
        GroupBill(name, count, length, gbps, m, fell_back, int(q["transceivers"][0, j]),
                  int(q["cables"][0, j]), int(q["fibres"][0, j]), float(q["power_w"][0, j]),
                  float(q["relative_cost"][0, j]))
        for j, ((name, count, length, gbps), (m, fell_back)) in enumerate(
            zip(shapes, picked, strict=True)))
    return FabricBill(choice, rows, sum(r.count for r in rows),
                      *(int(q[k].sum()) for k in ("transceivers", "cables", "fibres")),
                      float(q["power_w"].sum()), float(q["relative_cost"].sum()))


@dataclass(frozen=True)
class BillSweep:
    """Totals of one fabric shape at many sizes (:func:`sweep_bill`); arrays over sizes."""

    choice: str
    group_names: tuple[str, ...]
    modules: tuple[Module, ...]
    fell_back: tuple[bool, ...]
    counts: np.ndarray
    transceivers: np.ndarray
    cables: np.ndarray
    fibres: np.ndarray
    power_w: np.ndarray
    relative_cost: np.ndarray


def sweep_bill(groups: Sequence[LinkGroupLike], counts, choice: str = "auto", *,
               lane_gbps: int | None = None, copper: bool = True) -> BillSweep:
    """:func:`fabric_bill` totals for many cluster sizes at once.

    The unit of each group depends only on its length and speed, so it is chosen once;
    the quantities of all sizes and groups are then one array expression
    (:func:`_quantities`), summed over the groups.

    Parameters
    ----------
    groups
        The fabric's link groups (their ``count`` is ignored; ``counts`` gives them).
    counts
        Links per group for each size: shape ``(n_sizes, len(groups))``.
    """
    check_bool("copper", copper)
    choice = _choice(choice)
    shapes = [_checked_group(g, i) for i, g in enumerate(groups)]
    counts = check_array("counts", counts, integer=True, allow_empty=True)
    if counts.ndim != 2 or counts.shape[1] != len(shapes):
        raise ValueError(f"counts must have shape (n_sizes, {len(shapes)}) for {len(shapes)} "
                         f"groups, got {counts.shape}")
    picked = [choose(length, gbps, choice, lane_gbps=lane_gbps, copper=copper)
              for _name, _count, length, gbps in shapes]
    q = _quantities(counts.astype(np.int64), [m for m, _ in picked],
                    [gbps for *_rest, gbps in shapes])
    return BillSweep(choice, tuple(s[0] for s in shapes), tuple(m for m, _ in picked),
                     tuple(f for _, f in picked), counts.astype(np.int64),
                     *(q[k].sum(axis=1) for k in ("transceivers", "cables", "fibres",
                                                  "power_w", "relative_cost")))


def sweep_link_groups(group_sets: Sequence[Iterable[LinkGroupLike]], choice: str = "auto", *,
                      lane_gbps: int | None = None, copper: bool = True) -> BillSweep:
    """:func:`sweep_bill` over one fabric's link groups at several sizes.

    ``group_sets[i]`` are the groups of size ``i`` (e.g. ``size_fabric(n_i, ...)
    .link_groups()`` for a list of cluster sizes). Groups are matched by name; a name
    missing at some size (a tier that small fabrics lack) counts 0 links there. Groups of
    one name must share length and speed.
    """
    check_bool("copper", copper)
    sets = [list(gs) for gs in group_sets]
    shapes: dict[str, LinkGroupLike] = {}
    for i, gs in enumerate(sets):
        for j, g in enumerate(gs):
            name, _count, length, gbps = _checked_group(g, j)
            first = shapes.setdefault(name, g)
            if (first.length_m, first.gbps) != (length, gbps):
                raise ValueError(f"group {name!r} has length_m {first.length_m:g} and gbps "
                                 f"{first.gbps:g} in one set but {length:g} and {gbps:g} in "
                                 f"set {i}; a sweep needs one shape per group name")
    counts = np.zeros((len(sets), len(shapes)), dtype=np.int64)
    column = {name: j for j, name in enumerate(shapes)}
    for i, gs in enumerate(sets):
        for g in gs:
            counts[i, column[g.name]] += int(g.count)
    return sweep_bill(list(shapes.values()), counts, choice, lane_gbps=lane_gbps, copper=copper)
