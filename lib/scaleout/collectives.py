"""Collectives: the α-β cost of all-reduce and its relatives, by algorithm.

In the α-β (latency-bandwidth, or "Hockney") model a message of ``S`` bytes
between two GPUs takes ``α + S/B``: a fixed start-up latency α (seconds) and
``1/B`` seconds per byte at bandwidth B (bytes per second, **one direction**).
A collective algorithm is then counted by its *steps* (each pays α) and the
*bytes each GPU sends* (each pays 1/B):

``time = steps · α + bytes_per_gpu / B``

Sources
-------
* Thakur, Rabenseifner, Gropp 2005, "Optimization of Collective Communication
  Operations in MPICH" (IJHPCA 19(1)), Sec. 4: ring, recursive doubling,
  recursive halving, Rabenseifner's reduce-scatter + all-gather all-reduce.
* Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters
  of workstations" (JPDC 69(2)): no all-reduce moves less than
  ``2(n-1)/n · S`` per GPU; the ring reaches that bound.
* Sanders, Speck, Träff 2009, "Two-tree algorithms for full bandwidth
  broadcast, reduction and scan" (Parallel Computing 35(12)), and NCCL 2.4's
  double binary trees (Jeaugey 2019, NVIDIA developer blog "Massively Scale
  Your Deep Learning Training with NCCL 2.4"): logarithmic latency at full
  bandwidth.
* Graham et al. 2016, "Scalable Hierarchical Aggregation Protocol (SHArP)"
  (COMHPC@SC16): the switches reduce, so each GPU sends and receives S once.
* NCCL-tests, ``doc/PERFORMANCE.md``: algorithm bandwidth ``algbw = S / t``
  and bus bandwidth ``busbw = algbw · F`` with F per collective (see
  :data:`BUSBW_FACTORS`).

Sizes ``S`` follow NCCL-tests: for all-reduce, reduce-scatter's input,
broadcast and reduce, the buffer each GPU holds; for all-gather the gathered
output; for all-to-all the buffer each GPU sends in total.

Every function takes numpy arrays for ``size_bytes`` (and ``n`` where noted),
so a sweep over message sizes is one call.

Taught in ``notebooks/07_all_reduce_cost.ipynb``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import catalog, units
from .catalog import Link
from .checks import (
    MAX_QUANTITY,
    check_array,
    check_choice,
    check_divides,
    check_int,
    check_positive,
)

__all__ = [
    "ALGORITHMS",
    "BUSBW_FACTORS",
    "OPS",
    "AllReduceSchedule",
    "AlphaBeta",
    "DoubleBinaryTree",
    "NodeNetwork",
    "algbw",
    "algorithm_crossover_bytes",
    "busbw",
    "busbw_factor",
    "collective_time",
    "cost_terms",
    "crossover_bytes",
    "double_binary_tree",
    "halving_doubling_schedule",
    "hierarchical_all_reduce_time",
    "host_cpu_cores",
    "lower_bound_bytes",
    "nccl_tests_prediction",
    "ring_all_reduce_time",
    "ring_schedule",
]

#: Collective operations, named as NCCL names them.
OPS = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all")
#: Algorithms of :func:`collective_time`.
ALGORITHMS = ("ring", "tree", "halving_doubling", "sharp")


@dataclass(frozen=True)
class AlphaBeta:
    """A link as the α-β model sees it: start-up latency and one-direction bandwidth."""

    latency_s: float
    bandwidth_bytes_s: float

    def __post_init__(self) -> None:
        check_positive("latency_s", self.latency_s, allow_zero=True)
        # up to MAX_QUANTITY, not a physical bound: 1e30 B/s stands for "no bandwidth term"
        # in a what-if (a latency-only link)
        check_positive("bandwidth_bytes_s", self.bandwidth_bytes_s, maximum=MAX_QUANTITY)

    @property
    def beta_s_per_byte(self) -> float:
        """β = 1/B, seconds per byte."""
        return 1.0 / self.bandwidth_bytes_s


def _sizes(size_bytes, name: str = "size_bytes"):
    """Message sizes as a float array (finite, >= 0, at most :data:`scaleout.checks.MAX_BYTES`)."""
    return check_array(name, size_bytes)


def _link(link, name: str = "link") -> AlphaBeta:
    if isinstance(link, AlphaBeta):
        return link
    if isinstance(link, str):
        link = catalog.link(link, param=name)
    # catalog links (scaleout.catalog.Link) and anything with the two figures
    try:
        return AlphaBeta(link.latency_s, link.bandwidth_bytes_s)
    except AttributeError:
        raise ValueError(
            f"{name} must be a catalog link name, a catalog Link or an AlphaBeta, got {link!r}"
        ) from None


def _out(value):
    return float(value) if np.ndim(value) == 0 else value


# =========================================================================== bus bandwidth
#: NCCL-tests' bus-bandwidth factors F(n): busbw = algbw · F (doc/PERFORMANCE.md).
BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def busbw_factor(op: str, n: int) -> float:
    """F(n) of NCCL-tests: 2(n−1)/n for all-reduce, (n−1)/n for reduce-scatter,
    all-gather and all-to-all, 1 for broadcast and reduce."""
    op = check_choice("op", op, OPS)
    n = check_int("n", n)
    return float(BUSBW_FACTORS[op](n))


def algbw(size_bytes, time_s):
    """Algorithm bandwidth S / t in bytes per second (NCCL-tests); ``time_s`` must be > 0."""
    return _out(_sizes(size_bytes) / check_array("time_s", time_s, allow_zero=False))


def busbw(size_bytes, time_s, op: str, n: int):
    """Bus bandwidth algbw · F(n): comparable to the link's peak whatever n is (NCCL-tests)."""
    return _out(np.asarray(algbw(size_bytes, time_s)) * busbw_factor(op, n))


# =========================================================================== lower bound
def lower_bound_bytes(op: str, size_bytes, n: int):
    """The fewest bytes one GPU must send for a collective (Patarasuk & Yuan 2009).

    All-reduce ``2(n−1)/n · S``; reduce-scatter, all-gather, all-to-all
    ``(n−1)/n · S``; broadcast and reduce ``S`` (the root's data must leave it,
    or every input must reach the root). This is what :func:`busbw` normalises by.
    """
    return _out(_sizes(size_bytes) * busbw_factor(op, n))


# =========================================================================== algorithms
def ring_all_reduce_time(size_bytes, n: int, latency_s: float, bandwidth_bytes_s: float):
    """Ring all-reduce: ``2(n−1)·α + 2(n−1)/n · S/B``.

    A reduce-scatter then an all-gather around a ring, each of ``n−1`` steps
    moving ``S/n`` per GPU per step (Thakur et al. 2005, Sec. 4.4; Patarasuk &
    Yuan 2009). Bandwidth-optimal; latency grows linearly with n.
    """
    return collective_time("all_reduce", size_bytes, n,
                           AlphaBeta(latency_s, bandwidth_bytes_s), "ring")


def _steps_and_bytes(op: str, algorithm: str, S, n: int):
    """(latency steps, bytes sent per GPU) of one algorithm (array-friendly in S)."""
    lg = math.ceil(math.log2(n)) if n > 1 else 0
    frac = (n - 1) / n
    if algorithm == "ring":
        table = {
            "all_reduce": (2 * (n - 1), 2 * frac * S),
            "reduce_scatter": (n - 1, frac * S),
            "all_gather": (n - 1, frac * S),
            "all_to_all": (n - 1, frac * S),
            # pipelined chain: bandwidth-optimal broadcast/reduce for large S
            "broadcast": (n - 1, S),
            "reduce": (n - 1, S),
        }
    elif algorithm == "tree":
        # double binary tree: each half of the data goes up one tree and down the other;
        # full bandwidth (every GPU sends about S in each phase), log n latency.
        table = {
            "all_reduce": (2 * lg, 2 * S),
            "broadcast": (lg, S),
            "reduce": (lg, S),
        }
    elif algorithm == "halving_doubling":
        # Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive
        # doubling; binomial-tree broadcast/reduce (Thakur et al. 2005, Sec. 4)
        table = {
            "all_reduce": (2 * lg, 2 * frac * S),
            "reduce_scatter": (lg, frac * S),
            "all_gather": (lg, frac * S),
            "broadcast": (lg, lg * S),
            "reduce": (lg, lg * S),
        }
    else:  # sharp: switches aggregate; each GPU sends S up and receives S down
        table = {
            "all_reduce": (2, S),
            "reduce": (1, S),
            "broadcast": (1, S),
        }
    if op not in table:
        raise ValueError(
            f"op={op!r} has no {algorithm!r} algorithm here; {algorithm!r} models "
            f"{', '.join(table)}"
        )
    if n == 1:  # one GPU: nothing to send (checked after the op/algorithm pair)
        return 0, S * 0.0
    return table[op]


def collective_time(
    op: str,
    size_bytes,
    n: int,
    link,
    algorithm: str = "ring",
):
    """Time of one collective in the α-β model: ``steps · α + bytes_per_gpu / B``.

    ==================  ================================  ==============================
    algorithm           all-reduce steps                  all-reduce bytes per GPU
    ==================  ================================  ==============================
    ``ring``            ``2(n−1)``                        ``2(n−1)/n · S`` (optimal)
    ``tree``            ``2⌈log2 n⌉``                     ``2S`` (double binary tree)
    ``halving_doubling````2⌈log2 n⌉``                     ``2(n−1)/n · S`` (Rabenseifner)
    ``sharp``           ``2``                             ``S`` (in-network reduction)
    ==================  ================================  ==============================

    Parameters
    ----------
    op
        One of :data:`OPS`.
    size_bytes
        ``S`` in bytes (NCCL-tests' convention, see the module docstring); scalar or array.
    n
        GPUs taking part.
    link
        A catalog link name (``"InfiniBand NDR"``), a :class:`~scaleout.catalog.Link`
        or an :class:`AlphaBeta`: the slowest link of the ring or tree, one direction.
    algorithm
        One of :data:`ALGORITHMS`.
    """
    op = check_choice("op", op, OPS)
    algorithm = check_choice("algorithm", algorithm, ALGORITHMS)
    n = check_int("n", n)
    ab = _link(link)
    S = _sizes(size_bytes)
    steps, sent = _steps_and_bytes(op, algorithm, S, n)
    return _out(steps * ab.latency_s + sent / ab.bandwidth_bytes_s)


def hierarchical_all_reduce_time(
    size_bytes,
    n_nodes: int,
    gpus_per_node: int,
    intra,
    inter,
    inter_algorithm: str = "ring",
):
    """Two-level all-reduce: reduce-scatter inside each node, all-reduce across nodes, all-gather.

    Each of the ``gpus_per_node`` GPUs of a node ends the intra-node
    reduce-scatter owning ``S / gpus_per_node``; GPUs with the same local rank
    all-reduce that shard across the ``n_nodes`` nodes (one "rail" each, all
    rails at once), then each node all-gathers (Thakur et al. 2005; the
    structure of NCCL's and Horovod's hierarchical all-reduce). The slow
    inter-node links carry only ``1/gpus_per_node`` of the data per GPU.
    """
    n_nodes = check_int("n_nodes", n_nodes)
    g = check_int("gpus_per_node", gpus_per_node)
    intra, inter = _link(intra, "intra"), _link(inter, "inter")
    S = _sizes(size_bytes)
    t = collective_time("reduce_scatter", S, g, intra) if g > 1 else 0.0
    t = t + collective_time("all_reduce", S / g, n_nodes, inter, inter_algorithm)
    t = t + (collective_time("all_gather", S, g, intra) if g > 1 else 0.0)
    return _out(t)


# =========================================================================== terms, crossovers
def cost_terms(op: str, size_bytes, n: int, algorithm: str = "ring"):
    """The two counts of the α-β model: ``(steps, bytes_per_gpu)`` of one collective.

    ``collective_time`` is ``steps · α + bytes_per_gpu / B``; these are the
    coefficients of α and of β = 1/B, the columns of a least-squares fit of α and
    β to measured times (:func:`scaleout.calibration.fit_alpha_beta`). ``steps``
    is an ``int``; ``bytes_per_gpu`` has the shape of ``size_bytes``.
    """
    op = check_choice("op", op, OPS)
    algorithm = check_choice("algorithm", algorithm, ALGORITHMS)
    n = check_int("n", n)
    steps, sent = _steps_and_bytes(op, algorithm, _sizes(size_bytes), n)
    return int(steps), _out(sent)


def crossover_bytes(op: str, n: int, link, algorithm: str = "ring") -> float:
    """The message size at which the latency and bandwidth terms are equal.

    Below it a collective is latency-bound (``steps · α`` dominates), above it
    bandwidth-bound. Every algorithm here sends bytes in proportion to ``S``
    (``bytes_per_gpu = c · S``), so ``S* = steps · α · B / c``. For a ring
    all-reduce ``S* = n · α · B``: it grows with the number of GPUs. ``inf``
    if the collective sends nothing (n = 1); 0 on a link without latency.
    """
    ab = _link(link)
    steps, per_byte = cost_terms(op, 1.0, n, algorithm)
    if per_byte == 0:
        return math.inf
    return steps * ab.latency_s * ab.bandwidth_bytes_s / per_byte


def algorithm_crossover_bytes(op: str, n: int, link, first: str, second: str) -> float:
    """The message size at which two algorithms take the same time (α-β model).

    With ``steps_i · α + c_i · S / B`` for each, ``S = (steps_2 − steps_1) · α · B / (c_1 − c_2)``.
    Returns ``nan`` when the lines do not cross at a positive size (one algorithm
    is faster, or as fast, at every size). Example: the double binary tree beats
    the ring below this size at large n (fewer steps), the ring wins above it
    (fewer bytes: ``2(n−1)/n · S`` against ``2S``).
    """
    ab = _link(link)
    s1, c1 = cost_terms(op, 1.0, n, first)
    s2, c2 = cost_terms(op, 1.0, n, second)
    if c1 == c2:
        return math.nan
    size = (s2 - s1) * ab.latency_s * ab.bandwidth_bytes_s / (c1 - c2)
    return size if size > 0 else math.nan


def nccl_tests_prediction(op: str, size_bytes, n: int, link, algorithm: str = "ring"):
    """What an nccl-tests run would print if the α-β model were exact.

    Returns a dict of arrays (or floats) shaped like ``size_bytes``: ``time_us``,
    ``algbw_gbytes_s`` (``S / t``) and ``busbw_gbytes_s`` (``algbw · F(n)``), the
    columns of an nccl-tests ``*_perf`` table (NCCL-tests, ``doc/PERFORMANCE.md``),
    so a model can be laid over a measured log column by column. A size of 0
    still pays the latency term and has bandwidths of 0.
    """
    t = np.asarray(collective_time(op, size_bytes, n, link, algorithm), dtype=float)
    S = _sizes(size_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg = np.where(t > 0, S / np.where(t > 0, t, 1.0), 0.0)
    return {
        "time_us": _out(t * 1e6),
        "algbw_gbytes_s": _out(alg / 1e9),
        "busbw_gbytes_s": _out(alg * busbw_factor(op, n) / 1e9),
    }


def host_cpu_cores(link, throughput_gbps: float | None = None, core_ghz: float = 3.0) -> float:
    """Host CPU cores a link's transfers keep busy: ``rate · cpu_ghz_per_gbps / core_ghz``.

    Kernel TCP/IP spends CPU on every byte (system calls, copies, interrupts):
    the catalog's ``cpu_ghz_per_gbps`` is about 0.1 GHz per Gb/s at best today
    (Cai et al. 2021, "Understanding Host Network Stack Overheads", SIGCOMM; see
    ``data/links.toml``), against about 0 for RDMA and NVLink, whose NIC or GPU
    moves the data. ``throughput_gbps`` defaults to the link's line rate.

    Parameters
    ----------
    link
        A catalog link name or :class:`~scaleout.catalog.Link` (an :class:`AlphaBeta`
        carries no CPU figure).
    throughput_gbps
        Gigabits per second moved (one direction); default: the link's rate.
    core_ghz
        Clock of one host core, GHz.
    """
    spec = catalog.link(link)
    core_ghz = check_positive("core_ghz", core_ghz)
    rate = (units.gbytes_s_to_gbps(spec.gbytes_s) if throughput_gbps is None
            else check_positive("throughput_gbps", throughput_gbps, allow_zero=True))
    return rate * spec.cpu_ghz_per_gbps / core_ghz


# =========================================================================== schedules
@dataclass(frozen=True, eq=False)
class AllReduceSchedule:
    """An all-reduce run step by step on ``n`` simulated GPUs: who sends which chunk to whom.

    Every GPU's buffer is cut into ``n`` chunks. Step ``s`` (``0 ≤ s < steps``)
    belongs to :attr:`phase` ``[s]`` (``"reduce-scatter"``: the receiver adds
    what arrives to its own copy; ``"all-gather"``: it replaces its copy with the
    finished chunk) and sends :attr:`sends` ``[s]``, a tuple of
    ``(source, destination, chunks)``. :attr:`contributors` ``[s, g, c]`` counts
    the GPUs whose input is summed into GPU ``g``'s copy of chunk ``c`` *before*
    step ``s`` (``[steps]`` is the end: ``n`` everywhere once the all-reduce is
    done). Built by :func:`ring_schedule` and :func:`halving_doubling_schedule`,
    which track every copy's contributors as a set and fail if a sum would count
    one GPU's input twice.
    """

    algorithm: str
    n: int
    phase: tuple[str, ...]
    sends: tuple[tuple[tuple[int, int, tuple[int, ...]], ...], ...]
    contributors: np.ndarray

    @property
    def steps(self) -> int:
        """Latency steps (the α count of :func:`cost_terms`)."""
        return len(self.phase)

    @property
    def n_chunks(self) -> int:
        """Chunks each GPU's buffer is cut into."""
        return int(self.contributors.shape[2])

    def chunks_sent(self) -> np.ndarray:
        """Chunks each GPU sends over the whole all-reduce (one number per GPU)."""
        out = np.zeros(self.n, dtype=np.int64)
        for step in self.sends:
            for src, _dst, chunks in step:
                out[src] += len(chunks)
        return out

    def bytes_per_gpu(self, size_bytes: float) -> float:
        """Bytes the busiest GPU sends for a buffer of ``size_bytes`` (the β count)."""
        return float(self.chunks_sent().max()) * _sizes(size_bytes) / self.n_chunks

    def sent_fraction(self, step: int) -> float:
        """Share of the buffer the busiest GPU has sent before ``step`` (``2(n−1)/n`` at the
        end, for the ring and halving-doubling)."""
        step = check_int("step", step, minimum=0, maximum=self.steps)
        out = np.zeros(self.n, dtype=np.int64)
        for sends in self.sends[:step]:
            for src, _dst, chunks in sends:
                out[src] += len(chunks)
        return float(out.max()) / self.n_chunks

    def complete(self, step: int) -> np.ndarray:
        """``(n, n_chunks)`` booleans: which copies hold the full sum before ``step``."""
        return self.contributors[check_int("step", step, minimum=0, maximum=self.steps)] == self.n


def _run_schedule(algorithm: str, n: int, plan) -> AllReduceSchedule:
    """Execute ``plan`` (``[(phase, [(src, dst, chunks), ...]), ...]``) on contributor sets.

    Sends of one step read the state before the step (they happen at once). A
    reduce-scatter send adds the source's set to the destination's and fails if
    they overlap (an input counted twice); an all-gather send must carry a
    complete chunk and replaces the destination's copy.
    """
    full = (1 << n) - 1
    state = [[1 << g for _ in range(n)] for g in range(n)]  # bit g: GPU g's input included
    history = [[[s.bit_count() for s in row] for row in state]]
    for phase, sends in plan:
        before = [row[:] for row in state]
        for src, dst, chunks in sends:
            for c in chunks:
                if phase == "reduce-scatter":
                    if before[src][c] & state[dst][c]:
                        raise RuntimeError(f"{algorithm}: chunk {c} from GPU {src} to GPU {dst} "
                                           "would count an input twice")
                    state[dst][c] |= before[src][c]
                else:
                    if before[src][c] != full:
                        raise RuntimeError(f"{algorithm}: GPU {src} forwards chunk {c} before "
                                           "it is complete")
                    state[dst][c] = full
        history.append([[s.bit_count() for s in row] for row in state])
    if any(s != full for row in state for s in row):  # pragma: no cover - the plans are correct
        raise RuntimeError(f"{algorithm}: the all-reduce did not finish")
    return AllReduceSchedule(
        algorithm=algorithm, n=n, phase=tuple(ph for ph, _ in plan),
        sends=tuple(tuple((s, d, tuple(c)) for s, d, c in sends) for _, sends in plan),
        contributors=np.array(history, dtype=np.int64))


def ring_schedule(n: int) -> AllReduceSchedule:
    """The ring all-reduce, step by step: a reduce-scatter, then an all-gather, around a ring.

    GPU ``g`` sends to ``g + 1`` (mod ``n``). In reduce-scatter step ``k``
    (``k = 0 … n−2``) it sends chunk ``(g − k) mod n``, to which the receiver
    adds its own; after ``n − 1`` steps GPU ``g`` holds the full sum of chunk
    ``(g + 1) mod n``. In all-gather step ``k`` it forwards the finished chunk
    ``(g + 1 − k) mod n``. ``2(n − 1)`` steps, each moving ``S/n`` per GPU:
    ``2(n−1)/n · S`` in all, the bound of Patarasuk & Yuan 2009 (Thakur et al.
    2005, Sec. 4.4; the order NCCL's ring uses).
    """
    n = check_int("n", n, minimum=2)
    ring = [(g, (g + 1) % n) for g in range(n)]
    plan = [("reduce-scatter", [(g, d, [(g - k) % n]) for g, d in ring]) for k in range(n - 1)]
    plan += [("all-gather", [(g, d, [(g + 1 - k) % n]) for g, d in ring]) for k in range(n - 1)]
    return _run_schedule("ring", n, plan)


def halving_doubling_schedule(n: int) -> AllReduceSchedule:
    """Rabenseifner's all-reduce, step by step: recursive halving, then recursive doubling.

    Reduce-scatter step ``j`` pairs GPU ``g`` with ``g XOR n/2^(j+1)``: each
    keeps half of the chunks it is still responsible for (the lower half if its
    bit is 0) and sends the other half, so the data halves at every step and
    GPU ``g`` ends with the full sum of chunk ``g``. The all-gather retraces the
    pairs in reverse, doubling what each holds. ``2 log2 n`` steps and
    ``2(n−1)/n · S`` per GPU (Thakur et al. 2005, Sec. 4). ``n`` must be a
    power of two (other sizes need an extra step first, not drawn here).
    """
    n = check_int("n", n, minimum=2)
    if n & (n - 1):
        lower = 1 << (n.bit_length() - 1)
        raise ValueError(f"n must be a power of two for halving-doubling, got {n}; "
                         f"try n={lower} or n={2 * lower}")
    owned = {g: list(range(n)) for g in range(n)}
    plan, pairs = [], []
    d = n // 2
    while d:
        sends, new = [], {}
        for g in range(n):
            half = len(owned[g]) // 2
            low, high = owned[g][:half], owned[g][half:]
            keep, give = (low, high) if not g & d else (high, low)
            sends.append((g, g ^ d, give))
            new[g] = keep
        plan.append(("reduce-scatter", sends))
        pairs.append(d)
        owned = new
        d //= 2
    for d in reversed(pairs):
        plan.append(("all-gather", [(g, g ^ d, list(owned[g])) for g in range(n)]))
        owned = {g: sorted(owned[g] + owned[g ^ d]) for g in range(n)}
    return _run_schedule("halving_doubling", n, plan)


@dataclass(frozen=True, eq=False)
class DoubleBinaryTree:
    """NCCL's two binary trees over ``n`` ranks: :attr:`parents` ``[t][r]`` (−1 at a root).

    Half of the buffer is reduced up tree 0 and broadcast down it, the other half
    on tree 1; a rank that is interior in one tree is a leaf in the other (for
    ``n`` even), so every rank sends and receives about ``S`` in each phase.
    """

    n: int
    parents: tuple[tuple[int, ...], tuple[int, ...]]

    def children(self, tree: int, rank: int) -> list[int]:
        """Ranks whose parent in ``tree`` is ``rank``, in rank order."""
        return [r for r, p in enumerate(self.parents[tree]) if p == rank]

    def root(self, tree: int) -> int:
        """The root rank of ``tree``."""
        return self.parents[tree].index(-1)

    def depth(self, tree: int) -> int:
        """Edges on the longest leaf-to-root path of ``tree``."""
        best = 0
        for r in range(self.n):
            k, p = 0, self.parents[tree][r]
            while p != -1:
                k, p = k + 1, self.parents[tree][p]
            best = max(best, k)
        return best


def _btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's in-order binary tree of ``n`` ranks rooted at 0."""
    if rank == 0:
        return -1
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < n else rank ^ bit


def double_binary_tree(n: int) -> DoubleBinaryTree:
    """The double binary tree of NCCL 2.4 (Sanders, Speck, Träff 2009; Jeaugey 2019).

    Tree 0 is the in-order binary tree on ranks ``0 … n−1`` (rank ``r``'s parent
    flips its lowest set bit and sets the next, NCCL's ``ncclGetBtree``); tree 1
    is its mirror image (``r → n−1−r``) for even ``n`` and tree 0 shifted by one
    rank for odd ``n`` (``ncclGetDtree``). Both have depth at most ``⌈log2 n⌉``,
    which is why the tree's latency term grows as ``log n`` (:func:`collective_time`).
    """
    n = check_int("n", n, minimum=2)
    first = tuple(_btree_parent(n, r) for r in range(n))
    if n % 2 == 0:
        second = tuple(-1 if (p := first[n - 1 - r]) == -1 else n - 1 - p for r in range(n))
    else:
        second = tuple(-1 if (p := first[(r - 1) % n]) == -1 else (p + 1) % n for r in range(n))
    return DoubleBinaryTree(n=n, parents=(first, second))


# =========================================================================== a network of nodes
#: Collectives a :class:`NodeNetwork` times.
_FABRIC_OPS = ("all_reduce", "reduce_scatter", "all_gather")


def _resolve_link(name: str, value) -> Link | AlphaBeta:
    if isinstance(value, AlphaBeta | Link):
        return value
    if isinstance(value, str | dict):
        return catalog.link(value, param=name)
    raise ValueError(
        f"{name} must be a catalog link name, a catalog Link or an AlphaBeta, got {value!r}"
    )


def _link_label(link: Link | AlphaBeta) -> str:
    if isinstance(link, Link):
        return link.name
    return f"α={link.latency_s * 1e6:g} µs, B={link.bandwidth_bytes_s / 1e9:g} GB/s"


@dataclass(frozen=True)
class NodeNetwork:
    """GPUs grouped in nodes: a scale-up link inside a node, a network port per GPU between nodes.

    ``gpus_per_node`` GPUs share one NVLink (scale-up) domain joined by
    ``intra``; every GPU has its own network port of type ``inter`` (one
    400 Gb/s NIC per GPU in a DGX H100). A collective over ``n`` GPUs stays on
    ``intra`` when ``n <= gpus_per_node``; otherwise it crosses the network:

    * ``hierarchical=True``: reduce-scatter inside each node, the collective
      across nodes on ``1/gpus_per_node`` of the data (all GPUs of a node in
      parallel, one per rail), all-gather inside each node
      (:func:`scaleout.hierarchical_all_reduce_time`);
    * ``hierarchical=False``: one flat ring (or tree) over all ``n`` GPUs,
      paced by its slowest link, the network.

    ``inter_algorithm`` is the algorithm across nodes (``"ring"``, ``"tree"``, ...,
    see :data:`scaleout.ALGORITHMS`). Links are catalog names
    (``"NVLink 4"``, ``"InfiniBand NDR"``, ``"RoCE v2 400GbE"``, ``"TCP/IP 100GbE"``),
    catalog :class:`~scaleout.catalog.Link` s or :class:`~scaleout.collectives.AlphaBeta` s.
    """

    intra: str | Link | AlphaBeta = "NVLink 4"
    inter: str | Link | AlphaBeta = "InfiniBand NDR"
    gpus_per_node: int = 8
    hierarchical: bool = True
    inter_algorithm: str = "ring"

    def __post_init__(self) -> None:
        object.__setattr__(self, "intra", _resolve_link("intra", self.intra))
        object.__setattr__(self, "inter", _resolve_link("inter", self.inter))
        object.__setattr__(self, "gpus_per_node", check_int("gpus_per_node", self.gpus_per_node))
        check_choice("inter_algorithm", self.inter_algorithm, ALGORITHMS)

    @property
    def label(self) -> str:
        """``"8 × NVLink 4 per node, InfiniBand NDR between nodes (hierarchical)"``."""
        how = "hierarchical" if self.hierarchical else f"flat {self.inter_algorithm}"
        return (f"{self.gpus_per_node} × {_link_label(self.intra)} per node, "
                f"{_link_label(self.inter)} between nodes ({how})")

    def crosses_network(self, n: int) -> bool:
        """Whether a group of ``n`` GPUs spans more than one node."""
        return check_int("n", n) > self.gpus_per_node

    def time(self, op: str, size_bytes, n: int, *, name: str = "n"):
        """Seconds for one collective of ``size_bytes`` over ``n`` GPUs of this network.

        ``op`` is ``"all_reduce"``, ``"reduce_scatter"`` or ``"all_gather"`` with
        sizes as :mod:`scaleout.collectives` takes them (the full buffer; the
        gathered output for all-gather). Array-friendly in ``size_bytes``.
        A group larger than a node must fill whole nodes: ``gpus_per_node``
        must divide ``n``. ``name`` is the caller's name for ``n`` (``"n_gpus"``, ``"dp"``),
        used in messages.
        """
        op = check_choice("op", op, _FABRIC_OPS)
        n = check_int(name, n)
        g = self.gpus_per_node
        if n <= g:
            return collective_time(op, size_bytes, n, self.intra)
        check_divides("gpus_per_node", g, f"{name} (GPUs in the group)", n)
        if not self.hierarchical:
            return collective_time(op, size_bytes, n, self.inter,
                                               self.inter_algorithm)
        nodes = n // g
        if op == "all_reduce":
            return hierarchical_all_reduce_time(
                size_bytes, nodes, g, self.intra, self.inter, self.inter_algorithm)
        S = np.asarray(size_bytes, dtype=float)
        inside = collective_time(op, S, g, self.intra) if g > 1 else 0.0
        across = collective_time(op, S / g, nodes, self.inter, self.inter_algorithm)
        total = np.asarray(inside) + np.asarray(across)
        return float(total) if total.ndim == 0 else total
