"""Failure rates from published reports, and a cluster's failures, MTBF and idle GPU-hours.

The rows of ``data/failures.toml`` come from published reports: Llama 3 (Table 5, arXiv
2407.21783), Kokolis et al. ("Revisiting Reliability in Large-Scale Machine Learning
Research Clusters", arXiv 2410.21680), OPT (arXiv 2205.01068) and Alibaba HPN (Qian et
al., SIGCOMM 2024). :func:`unit_rate_per_hour` derives a rate per GPU, node, link or
switch from each printed figure. With independent failures a cluster's rate is the sum
of its parts' rates (:func:`cluster_failure_rate_per_h`), so its mean time between
failures falls as ``1/N`` with the number of GPUs (:func:`mtbf_h`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import catalog
from ..catalog import DATA_DIR, Entry, field_of, load_entries, read_toml
from ..checks import check_choice, check_int, close_matches
from ..units import DAYS_PER_MONTH, GB, SECONDS_PER_DAY, SECONDS_PER_HOUR
from ._common import _check_gpus, _nonneg, _out

#: Units a failure is counted per: it scales with the number of these in a cluster.
COUNTED_PER = ("gpu", "node", "link", "switch")
#: What a failure row's ``value`` means (see ``data/failures.toml``).
MEANINGS = ("events", "fraction_per_month", "per_1000_unit_days")
#: What broke, grouped the same way for every study.
PARTS = ("GPU", "GPU memory", "NIC", "network", "host", "power", "software", "unknown", "all")
#: How a figure of ``[[figure]]`` converts to SI (seconds, bytes, bytes/s, or a pure number).
_FIGURE_UNITS = {"s": 1.0, "h": SECONDS_PER_HOUR, "days": SECONDS_PER_DAY, "GB/s": GB,
                 "bytes": 1.0, "fraction": 1.0, "count": 1.0}
_HOURS_PER_MONTH = DAYS_PER_MONTH * SECONDS_PER_DAY / SECONDS_PER_HOUR
_FAILURES_FILE = DATA_DIR / "failures.toml"
_TABLES = {"study", "failure", "figure"}


# =========================================================================== the data
@dataclass(frozen=True)
class Study(Entry):
    """A published report of failures on one cluster or training run."""

    name: str = field_of("", "catalog name")
    title: str = field_of("", "what was measured")
    source: str = field_of("", "the paper, section and table")
    gpu: str | None = field_of("", "the accelerator (data/gpus.toml), if stated", default=None)
    gpus: int | None = field_of("GPUs", "GPUs the counts cover", default=None)
    gpus_per_node: int | None = field_of("GPUs", "GPUs per server", default=None)
    days: float | None = field_of("days", "the period the counts cover", default=None)
    events_total: int | None = field_of("events", "the report's own total of its rows",
                                        default=None)

    def units(self, counted_per: str) -> float:
        """How many units of a kind (``"gpu"`` or ``"node"``) the study's cluster had."""
        if counted_per == "gpu" and self.gpus is not None:
            return float(self.gpus)
        if counted_per == "node" and self.gpus is not None and self.gpus_per_node is not None:
            return self.gpus / self.gpus_per_node
        raise ValueError(f"study {self.name!r} does not say how many {counted_per}s it had")


@dataclass(frozen=True)
class Failure(Entry):
    """One row of a study: a kind of failure, what it is counted per, and how often it struck."""

    name: str = field_of("", "catalog name, unique in the file")
    study: str = field_of("", "the [[study]] this row belongs to")
    part: str = field_of("", "what broke, one of PARTS")
    counted_per: str = field_of("", "the unit this failure scales with, one of COUNTED_PER")
    value: float = field_of("", "the printed figure, read as `meaning` says")
    meaning: str = field_of("", "one of MEANINGS")
    source: str = field_of("", "the table row or sentence")
    share_published: float | None = field_of("fraction", "share of the study's events as printed",
                                       default=None)

    def __post_init__(self) -> None:
        super().__post_init__()
        for field_name, allowed in (("part", PARTS), ("counted_per", COUNTED_PER),
                                    ("meaning", MEANINGS)):
            value = getattr(self, field_name)
            if value not in allowed:
                near = close_matches(value, allowed)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ValueError(f"Failure {self.name!r}: field {field_name!r} must be one of "
                                 f"{', '.join(map(repr, allowed))}; got {value!r}{hint}")


@dataclass(frozen=True)
class Figure(Entry):
    """Another published number: a recovery time, a storage bandwidth, a checkpoint size."""

    name: str = field_of("", "catalog name")
    value: float = field_of("", "the number as printed, in `unit`")
    unit: str = field_of("", "one of 's', 'h', 'days', 'GB/s', 'bytes', 'fraction', 'count'")
    source: str = field_of("", "the paper and sentence")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.unit not in _FIGURE_UNITS:
            raise ValueError(f"Figure {self.name!r}: field 'unit' must be one of "
                             f"{', '.join(map(repr, _FIGURE_UNITS))}; got {self.unit!r}")

    @property
    def si(self) -> float:
        """The value in SI: seconds, bytes, bytes per second, or a pure number."""
        return self.value * _FIGURE_UNITS[self.unit]


@dataclass(frozen=True)
class FailureData:
    """The three tables of ``data/failures.toml``, keyed by name."""

    studies: dict[str, Study]
    failures: dict[str, Failure]
    figures: dict[str, Figure]


def load_failures(path: Path | str = _FAILURES_FILE) -> FailureData:
    """Load and check ``data/failures.toml`` (or another file of its shape).

    Beyond the field checks of :func:`scaleout.catalog.load_entries`: every row
    names a study of the file, a row of ``"events"`` has a study with ``gpus``
    and ``days`` (and ``gpus_per_node`` when counted per node), a study's GPU is
    in the GPU catalog, and the rows of a study with ``events_total`` add up to it.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field.
    """
    path = Path(path)
    unknown = sorted(set(read_toml(path, "failure data")) - _TABLES)
    if unknown:
        near = close_matches(unknown[0], _TABLES)
        hint = f" (did you mean [[{near[0]}]]?)" if near else ""
        raise ValueError(f"{path.name}: unknown table {unknown[0]!r}{hint}; "
                         f"expected [[study]], [[failure]], [[figure]]")
    studies = load_entries(path, "study", Study)
    rows = load_entries(path, "failure", Failure)
    figs = load_entries(path, "figure", Figure)
    gpu_names = set(catalog.gpu_names())
    for s in studies.values():
        if s.gpu is not None and s.gpu not in gpu_names:
            raise ValueError(f"{path.name}: [[study]] {s.name!r}: field 'gpu' is {s.gpu!r}, "
                             "not a GPU of gpus.toml")
    totals: dict[str, float] = {}
    for i, f in enumerate(rows.values(), start=1):
        where = f"{path.name}: [[failure]] entry {i} ({f.name!r})"
        if f.study not in studies:
            raise ValueError(f"{where}: field 'study' is {f.study!r}, not a [[study]] of the file")
        s = studies[f.study]
        if f.meaning == "events":
            needed = ["gpus", "days"] + (["gpus_per_node"] if f.counted_per == "node" else [])
            missing = [k for k in needed if getattr(s, k) is None]
            if missing or f.counted_per not in ("gpu", "node"):
                raise ValueError(f"{where}: counting 'events' per {f.counted_per} needs a study "
                                 f"with gpus, days and gpus_per_node; study {s.name!r} lacks "
                                 f"{', '.join(missing) or 'a count of ' + f.counted_per + 's'}")
            totals[s.name] = totals.get(s.name, 0.0) + f.value
    for s in studies.values():
        if s.events_total is not None and not math.isclose(totals.get(s.name, 0.0),
                                                           s.events_total):
            raise ValueError(f"{path.name}: [[study]] {s.name!r}: its rows add up to "
                             f"{totals.get(s.name, 0.0):g} events, field 'events_total' says "
                             f"{s.events_total}")
    return FailureData(studies, rows, figs)


@functools.cache
def _data() -> FailureData:
    return load_failures()


def studies() -> list[Study]:
    """Every study of ``data/failures.toml``, in file order."""
    return list(_data().studies.values())


def study_names() -> list[str]:
    """Study names, in file order."""
    return list(_data().studies)


def study(name: str | Study) -> Study:
    """A study by name (``"llama3-405b"``, ``"meta-rsc1"``, ``"opt-175b"``, ``"alibaba-hpn"``)."""
    if isinstance(name, Study):
        return name
    return _data().studies[check_choice("study", name, study_names())]


def failures(study_name: str | None = None) -> list[Failure]:
    """The failure rows of one study (or of all), in file order."""
    rows = list(_data().failures.values())
    if study_name is None:
        return rows
    s = study(study_name)
    return [f for f in rows if f.study == s.name]


def figures() -> list[Figure]:
    """Every ``[[figure]]`` of ``data/failures.toml``."""
    return list(_data().figures.values())


def figure(name: str) -> Figure:
    """One published figure by name, e.g. ``figure("llama3-storage-sustained").si`` in B/s."""
    return _data().figures[check_choice("figure", name, list(_data().figures))]


def unit_rate_per_hour(row: str | Failure) -> float:
    """Failures per unit (GPU, node, link or switch) per hour, derived from a printed figure.

    * ``"events"``: ``value / (units in the study x hours of the study)``; Llama 3's
      148 faulty GPUs in 54 days on 16,384 GPUs give 148 / (16,384 x 1,296 h).
    * ``"fraction_per_month"``: ``value / hours in a month`` (a month is 365.25/12 days).
    * ``"per_1000_unit_days"``: ``value / 1000 / 24``.
    """
    f = row if isinstance(row, Failure) else _data().failures[
        check_choice("failure", row, list(_data().failures))]
    if f.meaning == "events":
        s = study(f.study)
        return f.value / (s.units(f.counted_per) * s.days * SECONDS_PER_DAY / SECONDS_PER_HOUR)
    if f.meaning == "fraction_per_month":
        return f.value / _HOURS_PER_MONTH
    return f.value / 1000 / (SECONDS_PER_DAY / SECONDS_PER_HOUR)


def published_share_mismatches(study_name: str, tolerance: float = 0.0005) -> dict[str, float]:
    """Rows whose printed share differs from ``count / events_total`` beyond print rounding.

    Returns ``{row name: count / events_total}``; Llama 3's Table 5 has one such row.
    """
    s = study(study_name)
    if s.events_total is None:
        raise ValueError(f"study {s.name!r} has no events_total to compare shares with")
    return {f.name: f.value / s.events_total for f in failures(s.name)
            if f.share_published is not None
            and abs(f.share_published - f.value / s.events_total) > tolerance}


# =========================================================================== a cluster's failures
@dataclass(frozen=True)
class Inventory:
    """What a cluster of ``gpus`` GPUs is made of, for counting failures.

    Only the network parts whose failure takes a GPU out of the job are counted:
    each GPU's link(s) to its leaf switch, and the leaf (top-of-rack) switches.
    A spine failure is routed around in a Clos fabric (Kokolis et al.: "the
    network must remove and route around failures").
    """

    gpus: np.ndarray
    nodes: np.ndarray
    links: np.ndarray
    switches: np.ndarray

    def count(self, counted_per: str) -> np.ndarray:
        """The number of units of a kind (one of :data:`COUNTED_PER`)."""
        return {"gpu": self.gpus, "node": self.nodes, "link": self.links,
                "switch": self.switches}[check_choice("counted_per", counted_per, COUNTED_PER)]


def inventory(n_gpus, gpus_per_node: int = 8, gpus_per_switch: int = 16,
              links_per_gpu: int = 1) -> Inventory:
    """Nodes, links and leaf switches of a cluster of ``n_gpus`` GPUs (works on arrays).

    ``gpus_per_node`` GPUs per server (8 in a DGX-class or Grand Teton server),
    ``gpus_per_switch`` GPUs under one leaf switch (16 in Llama 3's racks, arXiv
    2407.21783 Sec. 3.3.1), ``links_per_gpu`` network links per GPU (2 with
    dual-homed NICs, as in Alibaba HPN). Partly filled nodes and switches count whole.
    """
    n = _check_gpus(n_gpus)
    gpn = check_int("gpus_per_node", gpus_per_node)
    gps = check_int("gpus_per_switch", gpus_per_switch)
    lpg = check_int("links_per_gpu", links_per_gpu)
    return Inventory(gpus=n, nodes=np.ceil(n / gpn), links=n * lpg, switches=np.ceil(n / gps))


def _as_study_list(study_names_, param: str = "study_name") -> list[Study]:
    if isinstance(study_names_, str | Study):
        names = [study_names_]
    elif isinstance(study_names_, list | tuple):
        names = list(study_names_)
    else:
        names = []
    if not names:
        raise ValueError(f"{param} must name one or more studies of "
                         f"{', '.join(map(repr, study_names()))}, got {study_names_!r}")
    found = []
    for n in names:
        if isinstance(n, Study):
            found.append(n)
        else:
            found.append(_data().studies[check_choice(param, n, study_names())])
    return found


def failure_breakdown_per_h(n_gpus, study_name="llama3-405b", *, gpus_per_node: int = 8,
                            gpus_per_switch: int = 16,
                            links_per_gpu: int = 1) -> dict[str, np.ndarray]:
    """Failures per hour of a cluster, by row of the study (or studies): ``rate x count``.

    Each row's :func:`unit_rate_per_hour` times the number of its units in the
    cluster (:func:`inventory`). Rows are independent: their rates add.
    """
    inv = inventory(n_gpus, gpus_per_node, gpus_per_switch, links_per_gpu)
    out: dict[str, np.ndarray] = {}
    for s in _as_study_list(study_name):
        for f in failures(s.name):
            out[f.name] = unit_rate_per_hour(f) * inv.count(f.counted_per)
    return out


def cluster_failure_rate_per_h(n_gpus, study_name="llama3-405b", *, gpus_per_node: int = 8,
                               gpus_per_switch: int = 16, links_per_gpu: int = 1):
    """Failures per hour of a whole cluster: the sum of its parts' rates (works on arrays).

    Independent failures add: a cluster of ``N`` GPUs fails ``N`` times as often
    as one GPU (nodes and switches in proportion to their own counts), so its
    MTBF falls as ``1/N``. ``study_name`` is a study of ``data/failures.toml`` or
    a list of them (their rows add, e.g. Llama 3's GPUs with HPN's network).
    """
    parts = failure_breakdown_per_h(n_gpus, study_name, gpus_per_node=gpus_per_node,
                                    gpus_per_switch=gpus_per_switch, links_per_gpu=links_per_gpu)
    total = sum(parts.values())
    return float(total) if np.ndim(total) == 0 else total


def mtbf_h(n_gpus, study_name="llama3-405b", **counts):
    """Mean time between failures of a cluster, hours: ``1 / cluster_failure_rate_per_h``."""
    return _out(1.0 / np.asarray(cluster_failure_rate_per_h(n_gpus, study_name, **counts)))


def failures_per_day(n_gpus, study_name="llama3-405b", **counts):
    """Expected failures per day: ``24 x cluster_failure_rate_per_h``."""
    hours_per_day = SECONDS_PER_DAY / SECONDS_PER_HOUR
    return _out(np.asarray(cluster_failure_rate_per_h(n_gpus, study_name, **counts))
                * hours_per_day)


def idle_gpu_hours(n_gpus, stall_s):
    """GPU-hours a stall of the whole job costs: a synchronous job idles all ``n_gpus``.

    One failed GPU stops every all-reduce; until the failure is detected (a
    collective's timeout) and the job restarted, ``n_gpus x stall_s`` of GPU time is lost.
    """
    return _out(_check_gpus(n_gpus) * _nonneg("stall_s", stall_s) / SECONDS_PER_HOUR)
