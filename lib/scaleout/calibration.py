"""Calibration: real nccl-tests / rccl-tests logs, and the α and β fitted to them.

NVIDIA's nccl-tests (and AMD's rccl-tests, the same programs built on RCCL)
time one collective over a sweep of message sizes and print a table per run::

    #       size         count      type   redop    root     time   algbw   busbw #wrong ...
               8             2     float     sum      -1    13.67    0.00    0.00      0 ...

with the columns of the out-of-place run, then of the in-place run (the output
buffer is the input). :func:`parse_log` reads such a log into a
:class:`NcclTestsLog`; :func:`consistency` checks the printed bandwidths against
their definitions (``algbw = S / t``, ``busbw = algbw · F(n)``, NCCL-tests
``doc/PERFORMANCE.md``); :func:`fit_alpha_beta` and :func:`fit_log` fit the
α-β model of :mod:`scaleout.collectives` to the measured times.

The fit
-------
For a chosen collective and algorithm the model is linear in α and β = 1/B::

    time(S) = steps · α + bytes_per_gpu(S) · β

(:func:`scaleout.collectives.cost_terms` gives ``steps`` and ``bytes_per_gpu``),
so α and β come from linear least squares over the rows with ``S > 0``. How the
rows are weighted matters, because a sweep's times span four to five orders of
magnitude (13 µs to 60 ms on one H100 node) and because one α and one B cannot
follow a real library through its protocol switches (NCCL's LL, LL128 and Simple
protocols, ring or tree, NVLink SHARP) in the middle sizes:

* ``"absolute"`` (no weights): the largest sizes decide everything; B matches
  the large messages, but α is whatever shrinks their residuals, and small
  messages come out several times too slow.
* ``"relative"`` (weights 1/time, i.e. least squares on relative errors, the
  log-log view): every size counts equally, but the slow middle sizes pull B
  down and α up, so the model misses *both* regimes by 5-15 %.
* ``"robust"`` (the default): least absolute relative error (a median-like fit),
  computed by iteratively reweighted least squares (each pass a weighted
  linear least squares in α and β, with weights ``1 / (time · sqrt|r|)`` from the
  previous pass's relative residuals ``r``; Beaton & Tukey 1974, Schlossmacher
  1973). Rows the model cannot follow (the protocol-switch band) lose their
  pull, so α describes the small messages and B the large ones, which is what
  the α-β model means. On the six shipped logs it has the lowest median error
  overall, and the lowest on the bandwidth-bound sizes for five of them
  (``notebooks/07_all_reduce_cost.ipynb`` shows the comparison).

α and β are kept non-negative.

A fitted B is an *effective* figure: the bandwidth a link would need for the
chosen algorithm to reproduce the measured times. Real libraries switch
protocols and algorithms with the size (NCCL's LL, LL128 and Simple protocols;
ring, tree, NVLink SHARP), so one α and one B cannot fit every size; the fit's
error on the bandwidth-bound sizes (large messages) and on all sizes are
reported separately.

Taught in ``notebooks/07_all_reduce_cost.ipynb``; the logs and their sources are
in ``data/nccl-tests/`` (``SOURCES.md``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import collectives
from .catalog import DATA_DIR
from .checks import check_array, check_choice, check_int, check_positive
from .collectives import AlphaBeta
from .units import GB, MIB

__all__ = [
    "LOGS_DIR",
    "PLACEMENTS",
    "ROW_DTYPE",
    "WEIGHTINGS",
    "AlphaBetaFit",
    "Consistency",
    "NcclTestsLog",
    "RankLine",
    "consistency",
    "fit_alpha_beta",
    "fit_log",
    "load_log",
    "log_names",
    "parse_log",
    "read_log",
    "worst_discrepancy",
]

#: The real logs shipped with the workbook (see ``SOURCES.md`` there).
LOGS_DIR = DATA_DIR / "nccl-tests"
#: Which timing column to use: the out-of-place run, the in-place run, or per row the
#: faster of the two (``"best"``: both time the same communication, and the faster one
#: filters one-off stalls such as a 68 µs row among 13 µs ones).
PLACEMENTS = ("out_of_place", "in_place", "best")
#: How the least-squares fit weighs the rows (see the module docstring): ``"robust"``
#: (least absolute relative error, by iteratively reweighted least squares; the default),
#: ``"relative"`` (least squares on relative errors: weights 1/time) or ``"absolute"``.
WEIGHTINGS = ("robust", "relative", "absolute")
#: Sizes from which a sweep is called bandwidth-bound by default (64 MiB).
BANDWIDTH_BOUND_BYTES = 64 * MIB

#: One parsed table row: the row's description, then out-of-place (``oop_``) and
#: in-place (``ip_``) timings. ``wrong`` is the ``#wrong`` count (NaN where the test
#: printed ``N/A``, i.e. ran without validation; old nccl-tests print a maximum
#: error, ``error``, in this place). ``root`` is -1 for rootless collectives.
ROW_DTYPE = np.dtype([
    ("size_bytes", "i8"), ("count", "i8"), ("type", "U16"), ("redop", "U16"), ("root", "i8"),
    ("oop_time_us", "f8"), ("oop_algbw_gbytes_s", "f8"), ("oop_busbw_gbytes_s", "f8"),
    ("oop_wrong", "f8"),
    ("ip_time_us", "f8"), ("ip_algbw_gbytes_s", "f8"), ("ip_busbw_gbytes_s", "f8"),
    ("ip_wrong", "f8"),
])

_TIMING = ("time", "algbw", "busbw", "#wrong")
_TIMING_FIELDS = ("time_us", "algbw_gbytes_s", "busbw_gbytes_s", "wrong")
_RANK = re.compile(
    r"^Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?"
    r"(?:on\s+(?P<host>\S+)\s+)?(?:device\s+(?P<device>\d+)\s+)?"
    r"(?:\[(?P<bus>[^\]]*)\]\s*)?(?P<name>.*)$"
)
_DATA_ROW = re.compile(r"^\s*\d+\s")
_VERSIONS = (
    ("nccl", re.compile(r"^NCCL version\s+(\S+)")),
    ("rccl", re.compile(r"^RCCL version\s*:\s*(\S+)")),
    ("rccl-tests", re.compile(r"^rccl-tests:\s*Version\s+(\S+)")),
    ("hip", re.compile(r"^HIP version\s*:\s*(\S+)")),
    ("rocm", re.compile(r"^ROCm version\s*:\s*(\S+)")),
)
# collective names as nccl-tests' programs and log files spell them, most specific first
_OP_PATTERNS = (
    ("all_reduce", r"all_?reduce"),
    ("reduce_scatter", r"reduce_?scatter"),
    ("all_gather", r"all_?gather"),
    ("all_to_all", r"all_?to_?all"),
    ("broadcast", r"broadcast"),
    ("reduce", r"(?<![a-z])reduce(?!_?scatter)"),
)


# =========================================================================== the log
@dataclass(frozen=True)
class RankLine:
    """One line of the ``# Using devices`` block: which rank ran where."""

    rank: int
    host: str
    device: int | None
    bus_id: str
    device_name: str


@dataclass(frozen=True, eq=False)
class NcclTestsLog:
    """An nccl-tests / rccl-tests ``*_perf`` log as printed.

    ``rows`` is a structured array of :data:`ROW_DTYPE` (one element per table
    row, zero-size rows included); :meth:`column` picks a timing column by
    placement. Sizes follow nccl-tests: for all-reduce the buffer each GPU holds,
    for all-gather the gathered output (``count`` is then per rank).
    """

    source: str
    collective: str | None
    collective_from: str
    nranks: int | None
    ranks: tuple[RankLine, ...]
    rows: np.ndarray
    avg_busbw_gbytes_s: float | None
    settings: dict[str, str]
    versions: dict[str, str]
    skipped_lines: tuple[tuple[int, str], ...]

    @property
    def name(self) -> str:
        """The log's file name without its extension (``"<text>"`` for parsed text)."""
        return Path(self.source).stem if self.source != "<text>" else self.source

    @property
    def size_bytes(self) -> np.ndarray:
        """Message sizes in bytes, as floats."""
        return self.rows["size_bytes"].astype(float)

    @property
    def hosts(self) -> tuple[str, ...]:
        """Distinct hosts of the ranks, in rank order."""
        return tuple(dict.fromkeys(r.host for r in self.ranks))

    @property
    def n_nodes(self) -> int:
        """Hosts taking part (1 if the log names none)."""
        return max(len(self.hosts), 1)

    @property
    def device_names(self) -> tuple[str, ...]:
        """Distinct device names (``"NVIDIA H100 80GB HBM3"``)."""
        return tuple(dict.fromkeys(r.device_name for r in self.ranks))

    @property
    def short_label(self) -> str:
        """``"8 × NVIDIA H100 80GB HBM3, 1 node"``: ranks, device and nodes."""
        dev = " / ".join(self.device_names) or "GPUs"
        nodes = f"{self.n_nodes} node{'s' if self.n_nodes > 1 else ''}"
        return f"{self.nranks if self.nranks is not None else '?'} × {dev}, {nodes}"

    def column(self, field: str, placement: str = "out_of_place") -> np.ndarray:
        """A timing column as floats: ``"time_us"``, ``"algbw_gbytes_s"``, ``"busbw_gbytes_s"``
        or ``"wrong"``, of the out-of-place run, the in-place run, or ``"best"`` (per row the
        columns of whichever run was faster)."""
        field = check_choice("field", field, _TIMING_FIELDS)
        placement = check_choice("placement", placement, PLACEMENTS)
        oop, ip = self.rows[f"oop_{field}"], self.rows[f"ip_{field}"]
        if placement == "out_of_place":
            return oop.astype(float)
        if placement == "in_place":
            return ip.astype(float)
        ip_faster = self.rows["ip_time_us"] < self.rows["oop_time_us"]
        return np.where(ip_faster, ip, oop).astype(float)

    def time_s(self, placement: str = "best") -> np.ndarray:
        """Measured times in seconds (see :data:`PLACEMENTS`)."""
        return self.column("time_us", placement) * 1e-6

    def describe(self) -> str:
        """One line: collective, ranks, nodes, devices, sizes."""
        sizes = self.size_bytes
        nonzero = sizes[sizes > 0]
        span = (f"{_size_text(nonzero.min())} to {_size_text(nonzero.max())}"
                if nonzero.size else "no non-zero sizes")
        dev = ", ".join(self.device_names) or "devices not named"
        return (f"{self.name}: {self.collective or 'unknown collective'}, "
                f"{self.nranks if self.nranks is not None else '?'} ranks on "
                f"{self.n_nodes} node(s), {dev}; {len(self.rows)} sizes, {span}")


def _size_text(n_bytes: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= div:
            return f"{n_bytes / div:g} {unit}"
    return f"{n_bytes:g} B"


# =========================================================================== parsing
def _infer_op(text: str) -> str | None:
    """The collective a name refers to (``all_reduce_perf``, ``..._all_gather.txt``), or None."""
    low = text.lower()
    found = {op for op, pattern in _OP_PATTERNS if re.search(pattern, low)}
    if "all_reduce" in found or "reduce_scatter" in found:
        found.discard("reduce")
    return found.pop() if len(found) == 1 else None


def _column_layout(tokens: list[str], where: str) -> tuple[list[str], int]:
    """(descriptor columns, number of timing groups) of a ``# size count type ...`` header."""
    expected = ("expected '# size count type [redop] [root]' then one or two groups of "
                "'time algbw busbw #wrong'")
    lead: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i] != "time":
        lead.append(tokens[i])
        i += 1
    rest = tokens[i:]
    if lead[:3] != ["size", "count", "type"] or lead[3:] not in ([], ["redop"],
                                                                 ["redop", "root"]):
        raise ValueError(f"{where}: unrecognised column header {' '.join(tokens)!r}; {expected}")
    groups = [rest[j:j + 4] for j in range(0, len(rest), 4)]
    if not 1 <= len(groups) <= 2 or any(
            g[:3] != ["time", "algbw", "busbw"] or len(g) != 4 or g[3] not in ("#wrong", "error")
            for g in groups):
        raise ValueError(f"{where}: unrecognised column header {' '.join(tokens)!r}; {expected}")
    return lead, len(groups)


def _number(token: str, kind: type, name: str, where: str) -> float | int:
    try:
        value = kind(token)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{where}: field {name!r} must be {what}, got {token!r}") from None
    if kind is float and not math.isfinite(value):
        raise ValueError(f"{where}: field {name!r} must be a finite number, got {token!r}")
    return value


def _wrong(token: str, name: str, where: str) -> float:
    if token.upper() == "N/A":
        return math.nan
    return float(_number(token.rstrip("*"), float, name, where))


def parse_log(text: str, *, source: str = "<text>", collective: str | None = None,
              nranks: int | None = None) -> NcclTestsLog:
    """Parse the stdout of an nccl-tests or rccl-tests ``*_perf`` program.

    Handles what real logs carry besides the table: the ``# nThread ...``
    settings line, the ``# Using devices`` rank lines (both the current layout
    with ``Group`` and rccl-tests' older one without), version lines
    (``NCCL version 2.26.2+cuda12.8``, ``RCCL version : ...``,
    ``rccl-tests: Version ...``), lines interleaved by MPI or the library (kept
    in ``skipped_lines``), zero-size rows, ``N/A`` in ``#wrong``, and the
    ``# Avg bus bandwidth`` footer.

    Parameters
    ----------
    text
        The log.
    source
        Where it came from, for messages (a file path, or ``"<text>"``).
    collective
        One of :data:`scaleout.collectives.OPS`; otherwise inferred from a
        ``# Collective test starting: all_reduce_perf`` line, then from ``source``'s
        file name (``..._all_gather.txt``); ``None`` if neither says.
    nranks
        Ranks, if the log has no ``# Using devices`` block.

    Raises
    ------
    ValueError
        Naming ``source``, the line number and what was expected: no table, a row
        with the wrong number of fields, a field that is not a number, an unknown
        column header, two tables in one log, rank lines that disagree with ``nranks``.
    """
    if collective is not None:
        collective = check_choice("collective", collective, collectives.OPS)
    if nranks is not None:
        nranks = check_int("nranks", nranks)
    settings: dict[str, str] = {}
    versions: dict[str, str] = {}
    ranks: dict[int, RankLine] = {}
    skipped: list[tuple[int, str]] = []
    records: list[tuple] = []
    layout: tuple[list[str], int] | None = None
    header_line = 0
    avg: float | None = None
    from_log: str | None = None

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        where = f"{source}, line {lineno}"
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            body = stripped[1:].strip()
            tokens = body.split()
            if body.startswith("nThread"):
                settings = _settings(body)
            elif body.startswith("Collective test starting:"):
                from_log = _infer_op(body.split(":", 1)[1])
            elif (m := _RANK.match(body)) is not None:
                r = int(m["rank"])
                ranks[r] = RankLine(r, m["host"] or "", int(m["device"]) if m["device"] else None,
                                    m["bus"] or "", m["name"].strip())
            elif tokens[:2] == ["size", "count"]:
                if layout is not None:
                    raise ValueError(
                        f"{where}: a second table (the first starts on line {header_line}); "
                        "expected one collective per log: split the file")
                layout = _column_layout(tokens, where)
                header_line = lineno
            elif body.startswith("Avg bus bandwidth"):
                avg = float(_number(body.split(":", 1)[-1].strip(), float,
                                    "Avg bus bandwidth", where))
            continue
        if layout is not None and _DATA_ROW.match(line):
            records.append(_row(line.split(), layout, where))
            continue
        for key, pattern in _VERSIONS:
            if (m := pattern.match(stripped)) is not None:
                versions[key] = m[1]
                break
        else:
            skipped.append((lineno, line))

    if layout is None:
        raise ValueError(
            f"{source}: no nccl-tests table found; expected a column header line "
            "'#  size  count  type  redop  root  time  algbw  busbw #wrong ...' and data rows")
    if not records:
        raise ValueError(f"{source}, line {header_line}: the column header is followed by no "
                         "data rows (expected rows of numbers: size count type ...)")
    if ranks and nranks is not None and len(ranks) != nranks:
        raise ValueError(f"{source}: nranks={nranks} but the log lists {len(ranks)} ranks")
    chosen, how = collective, "given"
    if chosen is None and from_log is not None:
        chosen, how = from_log, "log"
    if chosen is None and source != "<text>":
        chosen, how = _infer_op(Path(source).name), "file name"
    return NcclTestsLog(
        source=source, collective=chosen, collective_from=how if chosen else "",
        nranks=len(ranks) if ranks else nranks,
        ranks=tuple(ranks[k] for k in sorted(ranks)),
        rows=np.array(records, dtype=ROW_DTYPE), avg_busbw_gbytes_s=avg,
        settings=settings, versions=versions, skipped_lines=tuple(skipped),
    )


def _settings(body: str) -> dict[str, str]:
    """``nThread 1 nGpus 1 minBytes 8 ... step: 2(factor) warmup iters: 5`` as a dict.

    A key is one or more words, the last one ending in ``:`` or followed by a number.
    """
    out: dict[str, str] = {}
    words: list[str] = []
    key: str | None = None
    for tok in body.split():
        if key is not None:
            out[key], key = tok, None
        elif tok.endswith(":"):
            key, words = " ".join([*words, tok[:-1]]), []
        elif words and (tok[0].isdigit() or tok[0] == "-"):
            out[" ".join(words)], words = tok, []
        else:
            words.append(tok)
    return out


def _row(tokens: list[str], layout: tuple[list[str], int], where: str) -> tuple:
    lead, groups = layout
    names = [*lead, *(_TIMING * groups)]
    if len(tokens) != len(names):
        raise ValueError(f"{where}: expected {len(names)} fields ({' '.join(names)}), "
                         f"got {len(tokens)}: {' '.join(tokens)!r}")
    desc = dict(zip(lead, tokens[:len(lead)], strict=True))
    size = int(_number(desc["size"], int, "size", where))
    count = int(_number(desc["count"], int, "count", where))
    root = int(_number(desc.get("root", "-1"), int, "root", where))
    timings: list[float] = []
    at = len(lead)
    for g in range(groups):
        label = "out-of-place" if g == 0 else "in-place"
        t, alg, bus, wrong = tokens[at + 4 * g: at + 4 * g + 4]
        timings += [float(_number(t, float, f"{label} time", where)),
                    float(_number(alg, float, f"{label} algbw", where)),
                    float(_number(bus, float, f"{label} busbw", where)),
                    _wrong(wrong, f"{label} #wrong", where)]
    if groups == 1:
        timings += [math.nan] * 4
    return (size, count, desc["type"], desc.get("redop", ""), root, *timings)


def read_log(path: str | Path, *, collective: str | None = None,
             nranks: int | None = None) -> NcclTestsLog:
    """Read and parse a log file (see :func:`parse_log`); messages name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ValueError(f"{path}: log file not found") from None
    return parse_log(text, source=str(path), collective=collective, nranks=nranks)


def log_names() -> list[str]:
    """The logs shipped in ``data/nccl-tests/``, by file stem, sorted."""
    return sorted(p.stem for p in LOGS_DIR.glob("*.txt"))


def load_log(name: str, *, collective: str | None = None) -> NcclTestsLog:
    """A shipped log by its stem (``"nvidia_h100_8gpu_1node_nvswitch_all_reduce"``)."""
    name = str(name).removesuffix(".txt")
    name = check_choice("log_name", name, log_names())
    return read_log(LOGS_DIR / f"{name}.txt", collective=collective)


# =========================================================================== consistency
@dataclass(frozen=True)
class Consistency:
    """How far a log's printed bandwidths are from their definitions, beyond print rounding.

    Each figure is the worst, over rows and both placements, of
    ``max(0, |printed − expected| − rounding) / max(|expected|, 0.01 GB/s)``, where
    ``rounding`` is the most that printing to nccl-tests' precision (bandwidths to
    0.01 GB/s; times to 0.01, 0.1 or 1 µs) can explain. A faithful log scores 0.
    """

    busbw_rel: float
    algbw_rel: float
    avg_busbw_rel: float

    @property
    def worst(self) -> float:
        """The largest of the three."""
        return max(self.busbw_rel, self.algbw_rel, self.avg_busbw_rel)


def _time_rounding_us(t_us: np.ndarray) -> np.ndarray:
    """Half a unit of the last printed digit: nccl-tests prints times with 2, 1 or 0
    decimals below 100 µs, below 10,000 µs and above (src/common.cu)."""
    return np.where(t_us >= 10_000, 0.5, np.where(t_us >= 100, 0.05, 0.005))


def consistency(log: NcclTestsLog, op: str | None = None) -> Consistency:
    """Check ``busbw = algbw · F(n)`` and ``algbw = S / t`` row by row, and the average.

    ``F(n)`` is NCCL-tests' bus-bandwidth factor (:func:`scaleout.collectives.busbw_factor`)
    for ``op`` (default: the log's collective) and the log's ranks. The printed
    ``# Avg bus bandwidth`` is the mean of every busbw the run computed (both
    placements), so it must equal the mean of the printed ones within their rounding.
    """
    op = _op_of(log, op)
    n = _n_of(log)
    factor = collectives.busbw_factor(op, n)
    half = 0.005  # bandwidths are printed with two decimals
    busbw_rel = algbw_rel = 0.0
    sizes = log.size_bytes
    for placement in ("out_of_place", "in_place"):
        alg = log.column("algbw_gbytes_s", placement)
        bus = log.column("busbw_gbytes_s", placement)
        t_us = log.column("time_us", placement)
        ok = np.isfinite(alg)
        # busbw vs algbw · F: both printed, each off by up to half a unit
        expect = alg * factor
        excess = np.abs(bus - expect) - half * (1 + factor)
        busbw_rel = max(busbw_rel, _worst(excess[ok], expect[ok]))
        # algbw vs S / t, where t itself is rounded
        dt = _time_rounding_us(t_us)
        with np.errstate(divide="ignore"):
            hi = sizes / np.maximum(t_us - dt, 1e-9) / 1e3
            lo = sizes / (t_us + dt) / 1e3
        exact = sizes / np.maximum(t_us, 1e-9) / 1e3
        excess = np.maximum(lo - half - alg, alg - hi - half)
        algbw_rel = max(algbw_rel, _worst(excess[ok], exact[ok]))
    avg_rel = 0.0
    if log.avg_busbw_gbytes_s is not None:
        printed = np.concatenate([log.column("busbw_gbytes_s", p)
                                  for p in ("out_of_place", "in_place")])
        printed = printed[np.isfinite(printed)]
        excess = abs(printed.mean() - log.avg_busbw_gbytes_s) - half - 0.0005
        avg_rel = max(0.0, excess) / max(abs(log.avg_busbw_gbytes_s), 0.01)
    return Consistency(busbw_rel, algbw_rel, avg_rel)


def _worst(excess: np.ndarray, expected: np.ndarray) -> float:
    if excess.size == 0:
        return 0.0
    rel = np.maximum(excess, 0.0) / np.maximum(np.abs(expected), 0.01)
    return float(rel.max())


def worst_discrepancy(log: NcclTestsLog, op: str | None = None) -> float:
    """The worst relative discrepancy of :func:`consistency`: 0 for a faithful log."""
    return consistency(log, op).worst


def _op_of(log: NcclTestsLog, op: str | None) -> str:
    if op is not None:
        return check_choice("op", op, collectives.OPS)
    if log.collective is None:
        raise ValueError(f"{log.source}: the collective is not named in the log or its file "
                         f"name; pass op= one of {', '.join(map(repr, collectives.OPS))}")
    return log.collective


def _n_of(log: NcclTestsLog) -> int:
    if log.nranks is None:
        raise ValueError(f"{log.source}: the log lists no ranks ('# Using devices'); "
                         "parse it with nranks=")
    return log.nranks


# =========================================================================== the fit
@dataclass(frozen=True, eq=False)
class AlphaBetaFit:
    """α and β fitted to measured collective times, with the fit's errors.

    ``link`` is the fitted :class:`~scaleout.collectives.AlphaBeta`, usable
    wherever :mod:`scaleout.collectives` takes a link. Errors are relative,
    ``|predicted − measured| / measured``, over the rows with ``S > 0``; the
    ``bw_`` ones only over the bandwidth-bound sizes (``S ≥ bandwidth_bound_bytes``).
    """

    op: str
    algorithm: str
    n: int
    weighting: str
    latency_s: float
    bandwidth_bytes_s: float
    size_bytes: np.ndarray
    measured_s: np.ndarray
    bandwidth_bound_bytes: float
    source: str = ""

    @property
    def link(self) -> AlphaBeta:
        """The fitted link: α and B (one direction)."""
        return AlphaBeta(self.latency_s, self.bandwidth_bytes_s)

    @property
    def latency_us(self) -> float:
        """α in microseconds."""
        return self.latency_s * 1e6

    @property
    def bandwidth_gbytes_s(self) -> float:
        """B in GB/s (10**9 bytes/s), one direction."""
        return self.bandwidth_bytes_s / GB

    def predict(self, size_bytes, n: int | None = None):
        """Model times (s) at other sizes, or for another number of GPUs, with the fitted link."""
        return collectives.collective_time(self.op, size_bytes, self.n if n is None else n,
                                           self.link, self.algorithm)

    @property
    def predicted_s(self) -> np.ndarray:
        """Model times at the measured sizes."""
        return np.asarray(self.predict(self.size_bytes), dtype=float)

    @property
    def rel_error(self) -> np.ndarray:
        """``(predicted − measured) / measured`` per row (signed)."""
        return self.predicted_s / self.measured_s - 1.0

    @property
    def bandwidth_bound(self) -> np.ndarray:
        """Mask of the bandwidth-bound rows."""
        return self.size_bytes >= self.bandwidth_bound_bytes

    def _stat(self, fn, mask=None) -> float:
        err = np.abs(self.rel_error if mask is None else self.rel_error[mask])
        return float(fn(err)) if err.size else math.nan

    @property
    def median_rel_error(self) -> float:
        """Median relative error over every fitted row."""
        return self._stat(np.median)

    @property
    def max_rel_error(self) -> float:
        """Largest relative error over every fitted row."""
        return self._stat(np.max)

    @property
    def bw_median_rel_error(self) -> float:
        """Median relative error over the bandwidth-bound rows (NaN if there are none)."""
        return self._stat(np.median, self.bandwidth_bound)

    @property
    def bw_max_rel_error(self) -> float:
        """Largest relative error over the bandwidth-bound rows (NaN if there are none)."""
        return self._stat(np.max, self.bandwidth_bound)

    @property
    def crossover_bytes(self) -> float:
        """Size at which the fitted latency and bandwidth terms are equal."""
        return collectives.crossover_bytes(self.op, self.n, self.link, self.algorithm)

    def summary(self) -> str:
        """α, B and the errors in one line."""
        return (f"{self.op}/{self.algorithm}, n={self.n}: α = {self.latency_us:.3g} µs, "
                f"B = {self.bandwidth_gbytes_s:.4g} GB/s; relative error median "
                f"{self.median_rel_error:.1%} (max {self.max_rel_error:.0%}), on sizes ≥ "
                f"{_size_text(self.bandwidth_bound_bytes)} median {self.bw_median_rel_error:.1%} "
                f"(max {self.bw_max_rel_error:.1%})")


def fit_alpha_beta(size_bytes, time_s, op: str, n: int, algorithm: str = "ring", *,
                   weighting: str = "robust",
                   bandwidth_bound_bytes: float = BANDWIDTH_BOUND_BYTES,
                   source: str = "") -> AlphaBetaFit:
    """Fit α and B to measured times by least squares on ``steps · α + bytes_per_gpu · β``.

    Parameters
    ----------
    size_bytes, time_s
        Measured sizes (NCCL-tests' convention) and times; rows with ``S = 0``
        are left out (they carry no bandwidth information and nccl-tests prints
        them when a small size rounds down to zero elements).
    op, n, algorithm
        The collective, GPUs, and the algorithm whose ``steps`` and
        ``bytes_per_gpu`` (:func:`scaleout.collectives.cost_terms`) form the model.
    weighting
        One of :data:`WEIGHTINGS`: ``"robust"`` (least absolute relative error by
        iteratively reweighted least squares; the default), ``"relative"``
        (least squares on relative errors) or ``"absolute"``. See the module
        docstring for why.
    bandwidth_bound_bytes
        Sizes from which the ``bw_`` errors are computed (default 64 MiB).

    Raises
    ------
    ValueError
        Too few rows, arrays of different lengths, times not > 0, or times that
        do not grow with the bytes sent (no positive bandwidth fits).
    """
    op = check_choice("op", op, collectives.OPS)
    algorithm = check_choice("algorithm", algorithm, collectives.ALGORITHMS)
    n = check_int("n", n, minimum=2)
    weighting = check_choice("weighting", weighting, WEIGHTINGS)
    bandwidth_bound_bytes = check_positive("bandwidth_bound_bytes", bandwidth_bound_bytes)
    S = check_array("size_bytes", size_bytes, allow_empty=True).ravel()
    t = check_array("time_s", time_s, allow_zero=False, allow_empty=True).ravel()
    if S.shape != t.shape:
        raise ValueError(f"size_bytes and time_s must have the same length, got {S.size} "
                         f"and {t.size}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("time_s must be finite numbers > 0")
    if not np.all(np.isfinite(S)) or np.any(S < 0):
        raise ValueError("size_bytes must be finite numbers >= 0")
    keep = S > 0
    S, t = S[keep], t[keep]
    if np.unique(S).size < 2:
        raise ValueError(f"a fit needs at least two distinct sizes > 0, got {np.unique(S).size}")
    steps, sent = collectives.cost_terms(op, S, n, algorithm)
    A = np.column_stack([np.full_like(S, float(steps)), np.asarray(sent, dtype=float)])
    w = np.ones_like(t) if weighting == "absolute" else 1.0 / t
    alpha, beta = _weighted_fit(A, t, w)
    if weighting == "robust":
        for _ in range(_IRLS_PASSES):
            r = np.abs((A @ (alpha, beta)) / t - 1.0)
            new = _weighted_fit(A, t, 1.0 / (t * np.sqrt(np.maximum(r, _IRLS_FLOOR))))
            done = abs(new[1] / beta - 1) < 1e-12 and abs(new[0] - alpha) <= 1e-12 * t.min()
            alpha, beta = new
            if done:
                break
    if not beta > 0:
        raise ValueError(f"{source or 'the data'}: times do not grow with the bytes sent; "
                         "no positive bandwidth fits")
    return AlphaBetaFit(op=op, algorithm=algorithm, n=n, weighting=weighting,
                        latency_s=float(alpha), bandwidth_bytes_s=float(1.0 / beta),
                        size_bytes=S, measured_s=t,
                        bandwidth_bound_bytes=bandwidth_bound_bytes, source=source)


#: Passes of the robust fit, and the smallest relative residual its weights use (0.01 %).
_IRLS_PASSES = 200
_IRLS_FLOOR = 1e-4


def _weighted_fit(A: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(α, β) minimising ``Σ (w · (A·x − t))²`` with α >= 0 (β alone if α would be negative)."""
    alpha, beta = np.linalg.lstsq(A * w[:, None], t * w, rcond=None)[0]
    if alpha < 0:
        x = A[:, 1] * w
        alpha, beta = 0.0, float(x @ (t * w) / (x @ x))
    return float(alpha), float(beta)


def fit_log(log: NcclTestsLog, algorithm: str = "ring", *, op: str | None = None,
            placement: str = "best", weighting: str = "robust",
            bandwidth_bound_bytes: float = BANDWIDTH_BOUND_BYTES) -> AlphaBetaFit:
    """Fit α and B to a parsed log (its collective and ranks unless ``op`` is given).

    ``placement`` picks the timing column (:data:`PLACEMENTS`; default ``"best"``,
    per row the faster of out-of-place and in-place).
    """
    return fit_alpha_beta(log.size_bytes, log.time_s(placement), _op_of(log, op), _n_of(log),
                          algorithm, weighting=weighting,
                          bandwidth_bound_bytes=bandwidth_bound_bytes, source=log.source)
