"""Reliability at scale: failures, checkpoints, restarts and goodput.

A synchronous training job is a chain: when one of its GPUs, links or hosts
fails, every GPU stops. With independent failures the job's failure rate is
the sum of its parts' rates, so its mean time between failures (MTBF) falls
as ``1/N`` with the number of GPUs. The job survives by saving its state
(checkpointing) every ``tau`` seconds of work, at a cost of ``delta`` seconds,
and restarting from the last save after each failure.

Sources
-------
* Failure rates: ``data/failures.toml``, rows of published reports (Llama 3
  Table 5, arXiv 2407.21783; Kokolis et al., arXiv 2410.21680; OPT, arXiv
  2205.01068; Alibaba HPN, SIGCOMM 2024). :func:`unit_rate_per_hour` derives a
  rate per GPU, node, link or switch from each printed figure.
* Optimal interval, first order: Young 1974, "A first order approximation to
  the optimum checkpoint interval", Communications of the ACM 17(9):530-531:
  ``tau = sqrt(2 delta M)``.
* The exact exponential-failure model and its higher-order optimum: Daly 2006,
  "A higher order estimate of the optimum checkpoint interval for restart
  dumps", Future Generation Computer Systems 22(3):303-312. Expected wall time
  ``T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau`` (failures strike at
  any time, also during restarts); his perturbation solution
  ``tau = sqrt(2 delta M)[1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta``
  for ``delta < 2M``, else ``M``. His Figs. 3-5 print ``tau_opt`` = 117, 57 and
  9.1 minutes for ``M`` = 24 h, 6 h and 15 min with ``delta`` = 5 min.
* Stragglers: order statistics (David & Nagaraja, "Order Statistics", 3rd ed.,
  2003): the largest of ``n`` exponential draws has mean ``H_n`` times theirs
  (Renyi's representation).

Times are seconds (``_s``) unless a name says hours (``_h``); rates are per
hour (``_per_h``). Taught in ``notebooks/11_fault_tolerance.ipynb``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import catalog, memory
from .catalog import DATA_DIR, Entry, field_of, load_entries, read_toml
from .checks import (
    MAX_PARAMS,
    MAX_WORK,
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_positive,
    check_work,
    close_matches,
)
from .units import (
    DAYS_PER_MONTH,
    GB,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
)

__all__ = [
    "COUNTED_PER",
    "LAYOUTS",
    "MEANINGS",
    "PARTS",
    "RECOVERY_OPTIONS",
    "CheckpointPlan",
    "Failure",
    "FailureData",
    "Figure",
    "Inventory",
    "RecoveryResult",
    "RunTimeline",
    "SimulationResult",
    "Study",
    "checkpoint_bytes",
    "checkpoint_plan",
    "cluster_failure_rate_per_h",
    "compare_recovery",
    "daly_interval_s",
    "elastic_capacity",
    "elastic_viable",
    "exact_optimal_interval_s",
    "expected_goodput_finite",
    "expected_lost_work_s",
    "expected_max_exponential",
    "expected_max_normal",
    "expected_run_time_s",
    "failure_breakdown_per_h",
    "failures",
    "failures_per_day",
    "figure",
    "figures",
    "goodput",
    "goodput_first_order",
    "harmonic_number",
    "idle_gpu_hours",
    "inventory",
    "lambert_w0",
    "load_failures",
    "log10_expected_run_time_s",
    "mtbf_h",
    "published_share_mismatches",
    "restart_time_s",
    "segment_wall_time_s",
    "simulate",
    "simulate_timeline",
    "slow_host_step_factor",
    "spares_needed",
    "straggler_step_mc",
    "straggler_step_time_s",
    "studies",
    "study",
    "study_names",
    "unit_rate_per_hour",
    "young_interval_s",
]

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


def _check_gpus(n_gpus, name: str = "n_gpus") -> np.ndarray:
    """GPU counts as a float array; an empty cluster (or a fraction) is a clear error."""
    try:
        return check_array(name, n_gpus, integer=True, minimum=1)
    except ValueError as exc:
        raise ValueError(f"{exc}: an empty cluster has no GPUs to fail"
                         if "at most" not in str(exc) else str(exc)) from None


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


# =========================================================================== checkpoints
LAYOUTS = ("rank0", "replica", "sharded")


@dataclass(frozen=True)
class CheckpointPlan:
    """What one checkpoint writes, who writes it, and how long writing and reading take.

    ``layout``: ``"rank0"`` (one GPU gathers and writes everything), ``"replica"``
    (the ``tp x pp`` GPUs of one data-parallel replica write their shards) or
    ``"sharded"`` (every GPU writes ``1/N``, as ZeRO-3 / fully sharded data
    parallelism and distributed checkpoint formats do). ``blocking_s`` is the
    pause of training, ``delta`` of Young and Daly: the write itself, or with an
    asynchronous checkpoint only the copy of each GPU's shard to host memory.
    """

    total_bytes: float
    writers: int
    per_writer_bytes: float
    write_s: float
    restore_s: float
    snapshot_s: float
    blocking_s: float
    layout: str
    asynchronous: bool


def _params(model_or_params, name: str = "model_or_params") -> float:
    if isinstance(model_or_params, int | float | np.integer | np.floating) and not isinstance(
            model_or_params, bool):
        return check_positive(name, model_or_params, maximum=MAX_PARAMS)
    if isinstance(model_or_params, str):
        return float(memory.param_count(catalog.model(model_or_params, param=name)))
    if not isinstance(model_or_params, catalog.ModelSpec | dict):
        raise ValueError(f"{name} must be a catalog model name, a ModelSpec or a parameter "
                         f"count > 0, got {model_or_params!r}")
    return float(memory.param_count(model_or_params))


def checkpoint_bytes(model_or_params, recipe: str | memory.PrecisionRecipe = "mixed-adam",
                     optimizer: bool = True) -> float:
    """Bytes of one full checkpoint: weights and (by default) optimizer state.

    The same bytes per parameter as GPU memory (:func:`scaleout.memory.
    model_state_breakdown`, ZeRO's 2 + 12 for mixed-precision Adam) without the
    gradients, which a restart does not need: 14 bytes per parameter, 5.7 TB
    for Llama 3 405B. ``optimizer=False`` keeps weights only (an inference export).
    """
    check_bool("optimizer", optimizer)
    state = memory.model_state_breakdown(_params(model_or_params), 0, 1, recipe)
    return state.weights + (state.optimizer if optimizer else 0.0)


def _bandwidth(name: str, gbytes_s, required: bool = True) -> float | None:
    if gbytes_s is None and not required:
        return None
    return check_positive(name, gbytes_s) * GB


def checkpoint_plan(
    model_or_params,
    n_gpus: int,
    *,
    storage_gbytes_s: float,
    tp: int = 1,
    pp: int = 1,
    layout: str = "sharded",
    writer_gbytes_s: float | None = None,
    read_gbytes_s: float | None = None,
    asynchronous: bool = False,
    snapshot_gbytes_s: float | None = None,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
) -> CheckpointPlan:
    """Size, writers and times of one checkpoint of a job on ``n_gpus`` GPUs.

    A bottleneck model: writing takes the longer of ``total / storage`` (the
    storage fabric's aggregate bandwidth) and ``per writer / writer_gbytes_s``
    (one writer's own path to storage; ``None``: not limiting). Reading back
    after a failure uses ``read_gbytes_s`` (default: the storage bandwidth) with
    the same parallelism. Per writer, the sharded layout holds exactly the weights and
    optimizer state of ZeRO stage 3 over ``dp = n_gpus / (tp pp)``; the replica
    layout one model-parallel rank's unsharded state (:func:`scaleout.memory.
    model_state_breakdown`).

    Parameters
    ----------
    model_or_params
        A catalog model, a :class:`~scaleout.catalog.ModelSpec`, or a parameter count.
    n_gpus, tp, pp
        The job's GPUs and model-parallel sizes (``tp x pp`` must divide ``n_gpus``).
    storage_gbytes_s, writer_gbytes_s, read_gbytes_s, snapshot_gbytes_s
        GB/s (10**9 bytes/s, not Gb/s: convert a network rate with
        :func:`scaleout.units.gbps_to_gbytes_s`). ``snapshot_gbytes_s`` is the
        GPU-to-host copy of an asynchronous checkpoint (PCIe).
    """
    check_bool("asynchronous", asynchronous)
    params = _params(model_or_params)
    n = int(_check_gpus(n_gpus))
    tp, pp = check_int("tp", tp), check_int("pp", pp)
    if n % (tp * pp):
        raise ValueError(f"tp x pp = {tp * pp} must divide n_gpus = {n}")
    dp = n // (tp * pp)
    layout = check_choice("layout", layout, LAYOUTS)
    storage = _bandwidth("storage_gbytes_s", storage_gbytes_s)
    writer = _bandwidth("writer_gbytes_s", writer_gbytes_s, required=False)
    read = _bandwidth("read_gbytes_s", read_gbytes_s, required=False) or storage
    total = checkpoint_bytes(params, recipe)
    rank = params / (tp * pp)
    if layout == "sharded":
        shard = memory.model_state_breakdown(rank, 3, dp, recipe)
        writers, per_writer = n, shard.weights + shard.optimizer
    elif layout == "replica":
        whole = memory.model_state_breakdown(rank, 0, 1, recipe)
        writers, per_writer = tp * pp, whole.weights + whole.optimizer
    else:
        writers, per_writer = 1, total

    def transfer_s(aggregate: float) -> float:
        per = per_writer / writer if writer is not None else 0.0
        return max(total / aggregate, per)

    write_s, restore_s = transfer_s(storage), transfer_s(read)
    if asynchronous:
        if snapshot_gbytes_s is None:
            raise ValueError("snapshot_gbytes_s: an asynchronous checkpoint needs the GPU-to-host "
                             "copy bandwidth (GB/s), e.g. PCIe Gen5's 64 GB/s per direction")
        snapshot_s = per_writer / _bandwidth("snapshot_gbytes_s", snapshot_gbytes_s)
    else:
        snapshot_s = 0.0
    return CheckpointPlan(
        total_bytes=total, writers=writers, per_writer_bytes=per_writer, write_s=write_s,
        restore_s=restore_s, snapshot_s=snapshot_s,
        blocking_s=snapshot_s if asynchronous else write_s, layout=layout,
        asynchronous=bool(asynchronous))


# =========================================================================== optimal interval
def _nonneg(name: str, value):
    """``value`` as a float array if every element is a finite number >= 0 (within its bound)."""
    return check_array(name, value, allow_zero=True)


def _pos(name: str, value, what: str = ""):
    """``value`` as a float array if every element is a finite number > 0 (within its bound)."""
    try:
        return check_array(name, value, allow_zero=False)
    except ValueError as exc:
        raise ValueError(f"{exc}{what}") from None


def _out(x):
    """A 0-d array as a float, anything else unchanged."""
    return float(x) if np.ndim(x) == 0 else x


_MTBF_HINT = ": a mean time between failures is a positive duration"


def young_interval_s(delta_s, mtbf_s):
    """Young's optimal compute time between checkpoints, ``tau = sqrt(2 delta M)``.

    Young 1974 (CACM 17(9)), from the first-order cost: each checkpoint costs
    ``delta``, each failure loses half an interval on average, so the waste per
    unit of work is ``delta/tau + tau/(2M)``, smallest at ``sqrt(2 delta M)``.
    With ``delta`` = 5 min and ``M`` = 24 h: exactly 120 min. Works on arrays.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    return _out(np.sqrt(2 * d * m))


def daly_interval_s(delta_s, mtbf_s):
    """Daly's higher-order optimum (FGCS 22(3), 2006), seconds; works on arrays.

    ``tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta``
    for ``delta < 2M``; ``tau = M`` otherwise. It approximates the optimum of the
    exact model (:func:`exact_optimal_interval_s`) and tends to Young's formula
    as ``delta/M`` goes to 0. Daly's Figs. 3-5 (``delta`` = 5 min): 117, 57 and
    9.1 min for ``M`` = 24 h, 6 h and 15 min.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    x = d / (2 * m)
    tau = np.sqrt(2 * d * m) * (1 + np.sqrt(x) / 3 + x / 9) - d
    return _out(np.where(d < 2 * m, tau, m))


def lambert_w0(z):
    """The principal branch ``W0`` of the Lambert W function (``w e^w = z``) for ``z >= -1/e``.

    Halley's iteration from a branch-point series near ``-1/e`` and ``log1p(z)``
    elsewhere; about 1e-15 relative accuracy. Works on arrays (numpy has no W,
    and the workbook does not depend on scipy).
    """
    if isinstance(z, str | bytes) or np.asarray(z).dtype.kind not in "iuf":
        raise ValueError(f"lambert_w0 needs numbers z >= -1/e, got {z!r}")
    z = np.asarray(z, dtype=float)
    if np.any(~np.isfinite(z)) or np.any(z < -1 / np.e - 1e-15):
        raise ValueError(f"lambert_w0 needs z >= -1/e, got {z.min()!r}")
    p = np.sqrt(np.maximum(2 * (np.e * z + 1), 0.0))
    near = p < 0.5
    w = np.where(near, -1 + p - p**2 / 3 + 11 / 72 * p**3, np.log1p(np.maximum(z, -0.3)))
    for _ in range(30):
        ew = np.exp(w)
        f = w * ew - z
        wp1 = w + 1
        denom = ew * wp1 - (w + 2) * f / (2 * np.where(wp1 == 0, 1, wp1))
        step = np.where(np.abs(denom) > 0, f / np.where(denom == 0, 1, denom), 0.0)
        w = w - step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1, np.abs(w))):
            break
    return _out(np.where(p == 0, -1.0, w))


def exact_optimal_interval_s(delta_s, mtbf_s):
    """The interval that maximises :func:`goodput` exactly: ``M [1 + W0(-e^{-delta/M - 1})]``.

    Setting the derivative of Daly's ``(e^{(tau + delta)/M} - 1)/tau`` to zero gives
    ``(tau/M - 1) e^{tau/M - 1} = -e^{-delta/M - 1}``, solved by the Lambert W
    function (Daly 2006 names it as the route to the exact optimum). The restart
    time ``R`` only scales the wall time, so the optimum does not depend on it.

    Where ``delta/M`` is below 10^-9, ``1 + W0`` would cancel to nothing in floating
    point; there Daly's expansion (:func:`daly_interval_s`), whose error is of a
    higher order in ``delta/M``, gives the optimum to full precision.
    """
    d = _pos("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    tiny = d / m < 1e-9
    exact = m * (1 + np.asarray(lambert_w0(-np.exp(-np.where(tiny, 1.0, d / m) - 1))))
    return _out(np.where(tiny, daly_interval_s(d, m), exact))


# =========================================================================== goodput
def _check_interval(interval_s, delta_s, write_s=None):
    tau = _pos("interval_s", interval_s)
    d = _nonneg("delta_s", delta_s)
    floor = np.maximum(d, 0.0 if write_s is None else _nonneg("write_s", write_s))
    short = tau < floor
    if np.any(short):
        t = tau[short].ravel()[0] if tau.ndim else float(tau)
        f = np.broadcast_to(floor, tau.shape)[short].ravel()[0] if tau.ndim else float(floor)
        what = "delta_s" if write_s is None else "delta_s or write_s"
        raise ValueError(f"interval_s = {t:g} s is shorter than the checkpoint write time "
                         f"{what} ({f:g} s): the next checkpoint would start before the last "
                         "one is written; choose interval_s >= the write time")
    return tau, d


def segment_wall_time_s(interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Expected wall time to complete one segment of ``tau`` work plus its checkpoint.

    Daly 2006 (the complete model): failures form a Poisson process of mean gap
    ``M`` that also strikes during restarts; a segment of ``L = tau + delta``
    completes only if no failure falls in it, each failure costs a restart of
    ``R`` (redone from the start if a failure strikes during it) and the segment
    is redone. Then ``E = M e^{R/M} (e^{L/M} - 1)``. Works on arrays.
    """
    tau = _pos("interval_s", interval_s)
    d = _nonneg("delta_s", delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    with np.errstate(over="ignore"):
        return _out(m * np.exp(r / m) * np.expm1((tau + d) / m))


def goodput(interval_s, delta_s, mtbf_s, restart_s=0.0, *, write_s=None):
    """Fraction of wall time spent on work that is kept: the exact exponential model.

    ``tau / (M e^{R/M} (e^{(tau + delta)/M} - 1))`` (Daly 2006; the long-run
    ratio of kept work to wall time). This is what Llama 3 calls "effective
    training time" and Kokolis et al. ETTR. Works on arrays of intervals.

    Raises
    ------
    ValueError
        A non-positive MTBF or interval, a negative cost, or an interval shorter
        than the checkpoint's blocking time ``delta`` or its ``write_s``.
    """
    tau, d = _check_interval(interval_s, delta_s, write_s)
    with np.errstate(over="ignore"):
        return _out(tau / segment_wall_time_s(tau, d, mtbf_s, restart_s))


def goodput_first_order(interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Young's first-order goodput, ``max(0, 1 - delta/tau - tau/(2M) - R/M)``.

    The waste terms of Young 1974 (a checkpoint per interval, half an interval
    lost per failure) plus the restart; accurate while ``tau``, ``delta`` and
    ``R`` are all small against ``M``; its maximum is at :func:`young_interval_s`.

    Outside that range the terms can sum past 1 (``tau`` = 10^6 s against an
    MTBF of 3 h gives 1 - 46.3), which no goodput can be: the approximation
    has broken down, and the result is clipped at 0 (a run that keeps nothing).
    :func:`goodput` is the exact model at any interval.
    """
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    return _out(np.maximum(0.0, 1 - d / tau - tau / (2 * m) - r / m))


def expected_lost_work_s(interval_s, delta_s, mtbf_s):
    """Mean time into a segment when a failure strikes it: the work (and checkpoint) lost.

    For exponential failures conditioned on falling in a segment of
    ``L = tau + delta``: ``M - L / (e^{L/M} - 1)``, which tends to ``L/2`` when
    ``L << M`` (Young's "half an interval").
    """
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    length = tau + d
    with np.errstate(over="ignore"):
        return _out(m - length / np.expm1(length / m))


def expected_run_time_s(work_s, interval_s, delta_s, mtbf_s, restart_s=0.0):
    """Expected wall time to finish ``work_s`` of training: ``work / tau`` segments.

    ``work_s / goodput`` in Daly's model. Without checkpoints (``interval_s =
    work_s``, ``delta_s = 0``) the whole job must run without one failure:
    ``M e^{R/M} (e^{T/M} - 1)``, which overflows to ``inf`` for a long job on a
    large cluster; :func:`log10_expected_run_time_s` gives its size.
    """
    w = _pos("work_s", work_s)
    with np.errstate(over="ignore", divide="ignore"):
        return _out(w / np.asarray(goodput(interval_s, delta_s, mtbf_s, restart_s)))


def log10_expected_run_time_s(work_s, interval_s, delta_s, mtbf_s, restart_s=0.0):
    """``log10`` of :func:`expected_run_time_s`, finite even where the time overflows."""
    w = _pos("work_s", work_s)
    tau, d = _check_interval(interval_s, delta_s)
    m = _pos("mtbf_s", mtbf_s, _MTBF_HINT)
    r = _nonneg("restart_s", restart_s)
    x = (tau + d) / m
    # log(e^x - 1) = x + log(1 - e^-x), stable for large x
    log_expm1 = np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700))),
                         np.log(np.expm1(np.minimum(x, 30))))
    ln = np.log(w / tau) + np.log(m) + r / m + log_expm1
    return _out(ln / np.log(10))


# =========================================================================== recovery options
RECOVERY_OPTIONS = ("restart", "spares", "elastic")


def restart_time_s(option: str, *, detect_s: float, restore_s: float, init_s: float,
                   replace_s: float = 0.0) -> float:
    """Time from a failure until training resumes, for one recovery option.

    * ``"restart"``: detect the failure, wait ``replace_s`` for the failed node to
      be repaired or replaced, then restore the checkpoint and re-initialise;
    * ``"spares"``: a hot spare node takes the failed one's place at once;
    * ``"elastic"``: the survivors re-form without the failed data-parallel
      replica (TorchElastic-style) and resume from the checkpoint.

    Both of the last two skip the wait; they pay with idle spares or with fewer
    replicas until the repair (:func:`compare_recovery`).
    """
    option = check_choice("option", option, RECOVERY_OPTIONS)
    parts = [_nonneg(n, v) for n, v in (("detect_s", detect_s), ("restore_s", restore_s),
                                        ("init_s", init_s), ("replace_s", replace_s))]
    wait = parts[3] if option == "restart" else 0.0
    return float(parts[0] + wait + parts[1] + parts[2])


def elastic_capacity(interval_s, delta_s, mtbf_s, restart_s, *, repair_s, dp) -> float:
    """Mean share of the data-parallel replicas at work during kept compute, elastic shrink.

    Each failure takes one of ``dp`` replicas away for ``repair_s``; with ``k``
    replicas out the job runs at ``1 - k/dp``. Returns ``1 - E[k]/dp`` where the
    mean is over kept compute time (the time that counts): at age ``a`` since
    the last failure, ``k`` is that failure (if ``a < T``) plus a Poisson number
    of earlier ones, mean ``1 + (T - a)/M``; compute at ages
    ``R + sL .. R + sL + tau`` is kept if the segment ends before the next
    failure, with probability ``e^{-(R + (s+1)L)/M}``. The sum over ``s`` is
    exact for the model :func:`simulate` runs (failure rates assumed unchanged
    while replicas are out).

    Raises
    ------
    ValueError
        When ``repair_s / M`` (the mean number of replicas out) reaches ``dp / 2``:
        a shrinking job would then spend long stretches with few replicas left.
    """
    tau, d = _check_interval(interval_s, delta_s)
    tau, d = float(tau), float(d)
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    t_rep = float(_nonneg("repair_s", repair_s))
    dp = check_int("dp", dp)
    if t_rep / m >= dp / 2:
        raise ValueError(f"elastic shrink: on average {t_rep / m:.3g} of dp = {dp} replicas would "
                         "be under repair (repair_s / MTBF); it must stay below dp / 2")
    length = tau + d
    check_work(f"summing {(t_rep - r) / length:.3g} segments of a repair (repair_s / "
               "(interval_s + delta_s))", (t_rep - r) / length,
               "use a longer interval_s or a shorter repair_s")
    s = np.arange(max(0, math.ceil((t_rep - r) / length)) + 1)
    lo = r + s * length
    hi = np.minimum(lo + tau, t_rep)
    inside = hi > lo
    lam = 1 / m
    integral = np.where(inside, (hi - lo) * (1 + lam * t_rep) - lam * (hi**2 - lo**2) / 2, 0.0)
    weights = np.exp(-lam * (r + (s + 1) * length))
    kept = tau * np.exp(-lam * (r + length)) / -np.expm1(-lam * length)
    mean_out = float(np.sum(weights * integral)) / kept if kept > 0 else 0.0
    return float(1 - mean_out / dp)


def spares_needed(node_failures_per_h: float, repair_s: float, risk: float = 1e-3) -> int:
    """Hot spare nodes so that a failure finds none left with probability below ``risk``.

    Nodes under repair form an M/G/infinity queue: their number is Poisson with
    mean ``a = rate x repair time`` whatever the repair-time distribution
    (Palm's theorem). Returns the smallest ``S`` with ``P(Poisson(a) > S) <= risk``.
    """
    rate = _nonneg("node_failures_per_h", node_failures_per_h)
    a = float(rate) * float(_nonneg("repair_s", repair_s)) / SECONDS_PER_HOUR
    risk = float(_pos("risk", risk))
    if risk >= 1:
        raise ValueError(f"risk must be a probability below 1, got {risk!r}")
    if a == 0:
        return 0
    check_work(f"a Poisson tail of mean {a:.3g} nodes under repair (node_failures_per_h x "
               "repair_s)", a, "the failure rate times the repair time is more nodes than a "
               "cluster has", limit=10**6)
    k = np.arange(int(a + 12 * math.sqrt(a) + 30))
    log_pmf = k * math.log(a) - a - np.array([math.lgamma(x + 1) for x in k])
    tail = 1 - np.cumsum(np.exp(log_pmf))
    return int(np.argmax(tail <= risk))


@dataclass(frozen=True)
class RecoveryResult:
    """One recovery option's restart time, capacity while degraded, and goodput.

    ``goodput`` is kept work over wall time for the job; ``per_owned_gpu`` divides
    by all GPUs paid for, idle spares included.
    """

    option: str
    restart_s: float
    capacity: float
    goodput: float
    per_owned_gpu: float
    spare_gpus: int


def elastic_viable(mtbf_s: float, repair_s: float, dp: int) -> bool:
    """Whether elastic shrink is modelled for ``dp`` replicas: fewer than ``dp / 2`` of them
    under repair on average (``repair_s / mtbf_s``), the condition of
    :func:`elastic_capacity`."""
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    return float(_nonneg("repair_s", repair_s)) / m < check_int("dp", dp) / 2


def compare_recovery(interval_s: float, delta_s: float, mtbf_s: float, *, detect_s: float,
                     restore_s: float, init_s: float, replace_s: float, repair_s: float,
                     n_gpus: int, dp: int, spare_gpus: int = 0,
                     options: Iterable[str] = RECOVERY_OPTIONS) -> dict[str, RecoveryResult]:
    """Plain restart, hot spares and elastic shrink side by side (Daly's model for each).

    ``replace_s``: how long a plain restart waits for a replacement; ``repair_s``:
    how long an elastic job runs without the failed replica; ``spare_gpus``: the
    idle GPUs kept for the spares option (they do no work, so goodput per owned
    GPU is ``goodput x n_gpus / (n_gpus + spare_gpus)``). ``options``: which of
    :data:`RECOVERY_OPTIONS` to compare (leave out ``"elastic"`` where
    :func:`elastic_viable` is false).
    """
    n = int(_check_gpus(n_gpus))
    spare = check_int("spare_gpus", spare_gpus, minimum=0)
    chosen = [check_choice("options", o, RECOVERY_OPTIONS) for o in options]
    out: dict[str, RecoveryResult] = {}
    for option in chosen:
        r = restart_time_s(option, detect_s=detect_s, restore_s=restore_s, init_s=init_s,
                           replace_s=replace_s)
        cap = (elastic_capacity(interval_s, delta_s, mtbf_s, r, repair_s=repair_s, dp=dp)
               if option == "elastic" else 1.0)
        g = float(goodput(interval_s, delta_s, mtbf_s, r)) * cap
        owned = n + (spare if option == "spares" else 0)
        out[option] = RecoveryResult(option, r, cap, g, g * n / owned,
                                     spare if option == "spares" else 0)
    return out


# =========================================================================== Monte Carlo
@dataclass(frozen=True)
class SimulationResult:
    """Goodput of ``reps`` simulated runs of ``horizon_s`` each, and what theory expects.

    ``analytic`` is the long-run goodput (:func:`goodput`, times
    :func:`elastic_capacity` when shrinking); ``expected`` the exact mean over
    this finite horizon (:func:`expected_goodput_finite`: the run starts without
    a restart and stops mid-segment). ``tolerance`` is the stated bound on
    ``|mean - expected|``: four standard errors of the mean, plus, for elastic
    runs, ``(M + T_repair)/(H dp)`` for the horizon's effect on the capacity term.
    """

    goodput: np.ndarray
    failures: np.ndarray
    kept_s: np.ndarray
    horizon_s: float
    analytic: float
    expected: float
    edge: float

    @property
    def mean(self) -> float:
        """Mean goodput over the repetitions."""
        return float(self.goodput.mean())

    @property
    def stderr(self) -> float:
        """Standard error of that mean."""
        n = self.goodput.size
        return float(self.goodput.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf

    @property
    def tolerance(self) -> float:
        """``4 x stderr + edge``: how far the mean may sit from :attr:`expected`."""
        return 4 * self.stderr + self.edge

    @property
    def error(self) -> float:
        """``mean - expected``."""
        return self.mean - self.expected


def expected_goodput_finite(horizon_s, interval_s, delta_s, mtbf_s, restart_s=0.0) -> float:
    """The exact mean goodput of :func:`simulate` over a finite horizon ``H``.

    Renewal reward with edges: the first stretch (from time 0, no restart) keeps
    ``tau sum_k e^{-kL/M}``; failures arrive at rate ``1/M`` and the stretch after
    a failure at ``t`` keeps ``tau sum_k e^{-(R + kL)/M}`` over the segments that
    end before ``H``. Integrating over ``t``:
    ``[tau sum_{kL<=H} e^{-kL/M} + (tau/M) sum_{R+kL<=H} e^{-(R+kL)/M}(H - R - kL)] / H``,
    which tends to :func:`goodput` as ``H`` grows (the difference is ``O((L + R)/H)``).
    """
    h = float(_pos("horizon_s", horizon_s))
    tau, d = (float(x) for x in _check_interval(interval_s, delta_s))
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    length = tau + d
    check_work(f"summing {h / length:.3g} segments (horizon_s / (interval_s + delta_s))",
               h / length, _SIM_HINT)
    k = np.arange(1, int(h / length) + 1)
    first = k * length
    after = r + first
    after = after[after <= h]
    kept = tau * np.sum(np.exp(-first / m)) + tau / m * np.sum(np.exp(-after / m) * (h - after))
    return float(kept / h)


def _failure_times(rng: np.random.Generator, reps: int, start: float, horizon: float,
                   mtbf: float) -> np.ndarray:
    """Poisson failure times in ``[start, horizon)`` per repetition, padded with ``inf``.

    One matrix of exponential gaps, cumulated along each row, grown until every
    row has passed the horizon.
    """
    span = horizon - start
    k = int(span / mtbf + 6 * math.sqrt(span / mtbf) + 16)
    times = start + np.cumsum(rng.exponential(mtbf, size=(reps, k)), axis=1)
    while times[:, -1].min() < horizon:
        more = times[:, -1:] + np.cumsum(rng.exponential(mtbf, size=(reps, k)), axis=1)
        times = np.concatenate([times, more], axis=1)
    times[times >= horizon] = np.inf
    last = int(np.isfinite(times).sum(axis=1).max())
    return times[:, :max(last, 1)]


def _kept_compute(v, n, tau, length):
    """Kept compute time in the first ``v`` seconds after an interval's restart (arrays)."""
    v = np.maximum(v, 0.0)
    whole = np.minimum(np.floor(v / length), n)
    part = np.where(whole < n, np.minimum(v - whole * length, tau), 0.0)
    return whole * tau + part


def _cumulative_kept(starts, offset, segments, tau, length, horizon):
    """``K(t)``: kept compute from time 0 to ``t``, per repetition (a function of arrays).

    Intervals start at ``starts`` (sorted per row, ``inf`` past the horizon); in
    interval ``i`` kept compute begins ``offset`` after its start and runs for
    ``segments`` segments. One ``searchsorted`` over all rows at once (each row
    shifted by its own stride keeps the flattened starts sorted).
    """
    reps, cols = starts.shape
    kept = segments * tau
    before = np.cumsum(kept, axis=1) - kept
    stride = 4.0 * horizon + 1.0
    shift = np.arange(reps)[:, None] * stride
    flat = (np.minimum(starts, 2.0 * horizon) + shift).ravel()

    def cum(t):
        t = np.clip(t, 0.0, horizon)
        row = np.broadcast_to(np.arange(reps)[:, None], t.shape)
        idx = np.searchsorted(flat, (t + shift).ravel(), side="right").reshape(t.shape) - 1
        idx = idx - row * cols
        s_i, o_i = starts[row, idx], offset[row, idx]
        return before[row, idx] + _kept_compute(t - s_i - o_i, segments[row, idx], tau, length)

    return cum


_SIM_HINT = ("shorten horizon_s, use fewer reps, a longer mtbf_s or a longer interval_s; "
             "goodput() gives the model at any size")


def _check_sim(horizon_s, interval_s, delta_s, mtbf_s, restart_s, reps, seed):
    horizon = float(_pos("horizon_s", horizon_s))
    tau, d = (float(x) for x in _check_interval(interval_s, delta_s))
    m = float(_pos("mtbf_s", mtbf_s, _MTBF_HINT))
    r = float(_nonneg("restart_s", restart_s))
    reps = check_int("reps", reps)
    seed = check_int("seed", seed, minimum=0)
    failures = horizon / m + 6 * math.sqrt(horizon / m) + 16
    check_work(f"reps={reps:,} runs of {failures:.3g} failures each (horizon_s / mtbf_s)",
               4 * reps * failures, _SIM_HINT)
    check_work(f"a run of {horizon / (tau + d):.3g} segments (horizon_s / (interval_s + "
               "delta_s))", horizon / (tau + d), _SIM_HINT)
    return horizon, tau, d, m, r, reps, seed


def simulate(horizon_s: float, interval_s: float, delta_s: float, mtbf_s: float,
             restart_s: float = 0.0, *, reps: int = 1000, seed: int = 0,
             dp: int | None = None, repair_s: float | None = None) -> SimulationResult:
    """Monte-Carlo runs of a checkpointed job, vectorised across repetitions.

    Failures arrive as a Poisson process of mean gap ``mtbf_s`` over the wall
    time ``[0, horizon_s)``. The run starts working at once; after each failure
    it restarts for ``restart_s`` (a failure during the restart starts it
    again), then repeats segments of ``interval_s`` of work and ``delta_s`` of
    checkpoint. Work is kept when its segment's checkpoint completes; the rest
    of the segment a failure interrupts is lost. One matrix of failure times
    per call (``reps`` rows) and a few array operations: no loop over events.

    With ``dp`` and ``repair_s`` the job shrinks elastically: each failure takes
    one of ``dp`` replicas away for ``repair_s`` and kept compute counts at
    ``1 - k/dp`` while ``k`` replicas are out (failures before time 0 are
    drawn too, so the run starts in steady state).

    Returns
    -------
    SimulationResult
        Per-repetition goodput, failures and kept work, and the analytic
        :func:`goodput` (times :func:`elastic_capacity` when shrinking).
    """
    horizon, tau, d, m, r, reps, seed = _check_sim(horizon_s, interval_s, delta_s, mtbf_s,
                                                   restart_s, reps, seed)
    elastic = dp is not None or repair_s is not None
    if elastic:
        if dp is None or repair_s is None:
            raise ValueError("elastic shrink needs both dp and repair_s")
        capacity = elastic_capacity(tau, d, m, r, repair_s=repair_s, dp=dp)
        t_rep = float(repair_s)
    rng = np.random.default_rng(seed)
    length = tau + d
    fail = _failure_times(rng, reps, 0.0, horizon, m)
    starts = np.concatenate([np.zeros((reps, 1)), fail], axis=1)
    ends = np.minimum(np.concatenate([fail, np.full((reps, 1), np.inf)], axis=1), horizon)
    live = starts < horizon
    offset = np.zeros_like(starts)
    offset[:, 1:] = r
    avail = np.where(live, np.maximum(ends - starts - offset, 0.0), 0.0)
    segments = np.floor(avail / length)
    kept = segments.sum(axis=1) * tau
    if elastic:
        pre = -_failure_times(rng, reps, 0.0, t_rep, m) if t_rep > 0 else np.full((reps, 1),
                                                                                  -np.inf)
        windows = np.concatenate([pre, fail], axis=1)
        ok = np.isfinite(windows)
        cum = _cumulative_kept(starts, offset, segments, tau, length, horizon)
        lost = np.where(ok, cum(np.where(ok, windows + t_rep, 0.0))
                        - cum(np.where(ok, windows, 0.0)), 0.0).sum(axis=1)
        kept = kept - lost / dp
    factor = capacity if elastic else 1.0
    return SimulationResult(
        goodput=kept / horizon, failures=np.isfinite(fail).sum(axis=1), kept_s=kept,
        horizon_s=horizon, analytic=float(goodput(tau, d, m, r)) * factor,
        expected=expected_goodput_finite(horizon, tau, d, m, r) * factor,
        edge=(m + t_rep) / (horizon * dp) if elastic else 0.0)


@dataclass(frozen=True)
class RunTimeline:
    """One simulated run as bars: ``kind[i]`` from ``start_s[i]`` to ``end_s[i]``.

    Kinds: ``"compute"`` (kept work), ``"checkpoint"``, ``"lost"`` (work and
    checkpoint a failure threw away), ``"restart"``, ``"unfinished"`` (cut by
    the horizon). ``failures_s`` are the failure times.
    """

    kind: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    failures_s: np.ndarray
    horizon_s: float

    def total_s(self, kind: str) -> float:
        """Summed duration of one kind of bar."""
        sel = self.kind == kind
        return float(np.sum(self.end_s[sel] - self.start_s[sel]))


def simulate_timeline(horizon_s: float, interval_s: float, delta_s: float, mtbf_s: float,
                      restart_s: float = 0.0, *, seed: int = 0) -> RunTimeline:
    """The events of one run, for drawing: the same draws as ``simulate(..., reps=1)``."""
    horizon, tau, d, m, r, _, seed = _check_sim(horizon_s, interval_s, delta_s, mtbf_s,
                                                restart_s, 1, seed)
    fail = _failure_times(np.random.default_rng(seed), 1, 0.0, horizon, m)[0]
    fail = fail[np.isfinite(fail)]
    length = tau + d
    starts = np.concatenate([[0.0], fail])
    ends = np.concatenate([fail, [horizon]])
    kinds: list[np.ndarray] = []
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []

    def add(kind: str, a, b) -> None:
        a, b = np.atleast_1d(a), np.atleast_1d(b)
        keep = b > a
        kinds.append(np.full(int(keep.sum()), kind))
        lo.append(a[keep])
        hi.append(b[keep])

    for i, (s, e) in enumerate(zip(starts, ends, strict=True)):
        t0 = s
        if i > 0:
            add("restart", s, min(s + r, e))
            t0 = s + r
        if t0 >= e:
            continue
        n = int((e - t0) // length)
        seg = t0 + np.arange(n) * length
        add("compute", seg, seg + tau)
        add("checkpoint", seg + tau, seg + length)
        add("unfinished" if e >= horizon else "lost", t0 + n * length, e)
    return RunTimeline(np.concatenate(kinds), np.concatenate(lo), np.concatenate(hi), fail,
                       horizon)


# =========================================================================== stragglers
_EULER_GAMMA = 0.5772156649015329


def harmonic_number(n):
    """``H_n = 1 + 1/2 + ... + 1/n``; exact sums below 64, the asymptotic series above."""
    n = check_array("n", n, integer=True, minimum=1)
    small = np.cumsum(1.0 / np.arange(1, 65))
    safe = np.maximum(n, 1.0)
    asym = (np.log(safe) + _EULER_GAMMA + 1 / (2 * safe) - 1 / (12 * safe**2)
            + 1 / (120 * safe**4))
    exact = small[np.minimum(safe, 64).astype(int) - 1]
    return _out(np.where(n <= 64, exact, asym))


def expected_max_exponential(n, mean: float = 1.0):
    """Mean of the largest of ``n`` independent exponential draws of mean ``mean``: ``mean H_n``.

    Renyi's representation: the gaps between sorted exponentials are independent
    exponentials of means ``mean/n, mean/(n-1), ..., mean``. It grows as ``ln n``.
    """
    return _out(np.asarray(harmonic_number(n)) * float(_pos("mean", mean)))


def expected_max_normal(n):
    """Mean of the largest of ``n`` standard normal draws, ``int x n phi(x) Phi(x)^(n-1) dx``.

    Numerical integration on a fine grid (exact to about 1e-6): 0 for ``n = 1``,
    ``1/sqrt(pi)`` for 2, ``3/(2 sqrt(pi))`` for 3; about ``sqrt(2 ln n)`` for large n.
    """
    n = check_array("n", n, integer=True, minimum=1)
    x = np.linspace(-9.0, 9.0, 7201)
    log_cdf = np.log(np.clip(0.5 * np.array([math.erfc(-v / math.sqrt(2)) for v in x]),
                             1e-300, 1.0))
    pdf = np.exp(-x**2 / 2) / math.sqrt(2 * math.pi)
    flat = n.ravel()
    dens = flat[:, None] * pdf[None, :] * np.exp((flat[:, None] - 1) * log_cdf[None, :])
    out = np.trapezoid(x[None, :] * dens, x, axis=1)
    return _out(out.reshape(n.shape))


def straggler_step_time_s(n_gpus, base_s: float, jitter: float, dist: str = "exponential"):
    """Expected time of a synchronous step of ``n_gpus`` GPUs whose own times vary.

    GPU ``i`` needs ``base_s (1 + s_i)``; the step (and its all-reduce) waits
    for the slowest, so it takes ``base_s (1 + E[max s_i])``:

    * ``"exponential"``: ``s_i`` exponential with mean ``jitter``,
      ``E[max] = jitter H_n`` (:func:`expected_max_exponential`);
    * ``"normal"``: ``s_i`` normal with standard deviation ``jitter`` (mean 0),
      ``E[max] = jitter x`` :func:`expected_max_normal`.
    """
    n = _check_gpus(n_gpus)
    base = _pos("base_s", base_s)
    jitter = float(_nonneg("jitter", jitter))
    dist = check_choice("dist", dist, ("exponential", "normal"))
    if jitter == 0:
        return _out(base * np.ones_like(n))
    emax = (expected_max_exponential(n, jitter) if dist == "exponential"
            else jitter * np.asarray(expected_max_normal(n)))
    return _out(base * (1 + np.asarray(emax)))


def straggler_step_mc(n_gpus: int, base_s: float, jitter: float, dist: str = "exponential", *,
                      steps: int = 2000, seed: int = 0) -> np.ndarray:
    """Monte-Carlo synchronous step times: the maximum over ``n_gpus`` draws, ``steps`` times.

    The check of :func:`straggler_step_time_s`; draws in blocks so memory stays small.
    """
    n = int(_check_gpus(n_gpus))
    base = float(_pos("base_s", base_s))
    jitter = float(_nonneg("jitter", jitter))
    dist = check_choice("dist", dist, ("exponential", "normal"))
    steps = check_int("steps", steps)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    check_work(f"steps={steps:,} of n_gpus={n:,} draws", steps * n, "use fewer steps or GPUs; "
               "straggler_step_time_s() gives the expectation at any size", limit=10 * MAX_WORK)
    out = np.empty(steps)
    block = max(1, 2_000_000 // n)
    for lo in range(0, steps, block):
        size = (min(block, steps - lo), n)
        draws = rng.exponential(jitter, size) if dist == "exponential" else rng.normal(
            0.0, jitter, size)
        out[lo:lo + size[0]] = base * (1 + draws.max(axis=1))
    return out


def slow_host_step_factor(n_hosts, slow_fraction: float, slowdown: float):
    """Expected step-time factor when each host is slow with probability ``slow_fraction``.

    One slow host makes every synchronous step ``1 + slowdown`` times longer; the
    chance that a job of ``n_hosts`` has at least one is ``1 - (1 - p)^n``, so the
    expected factor is ``1 + slowdown (1 - (1 - p)^n)``. MegaScale found hosts
    about 10% slower than the rest (``figure("megascale-straggler-slowdown")``).
    """
    n = _check_gpus(n_hosts)
    p = float(_nonneg("slow_fraction", slow_fraction))
    if p > 1:
        raise ValueError(f"slow_fraction must be a probability from 0 to 1, got {p!r}")
    s = float(_nonneg("slowdown", slowdown))
    return _out(1 + s * -np.expm1(n * np.log1p(-min(p, 1 - 1e-16))))

