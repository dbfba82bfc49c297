"""Pipeline parallelism: schedules, their bubble, and the activations they keep in flight.

A model's layers are split into ``p`` consecutive *stages*, one per device; a
batch is cut into ``m`` *micro-batches* that flow through the stages like
parts on an assembly line. A *schedule* fixes, for every device, the order of
its forward (F) and backward (B) passes; :func:`simulate` then times every
pass as early as its inputs and its device allow, and reports the idle time
(the *bubble*) and the micro-batches whose activations each stage holds.

Sources
-------
* GPipe: Huang et al. 2019, "GPipe: Efficient Training of Giant Neural
  Networks using Pipeline Parallelism" (arXiv 1811.06965), Sec. 2.2-2.3 and
  Fig. 2: all forward passes, then all backward passes; the bubble is
  ``(p - 1)`` stage-times at each end, negligible "when M >= 4 x K".
* 1F1B (PipeDream-Flush) and its interleaved form: Narayanan et al. 2021,
  "Efficient Large-Scale Language Model Training on GPU Clusters Using
  Megatron-LM" (arXiv 2104.04473), Sec. 2.2.1 (bubble fraction
  ``(p - 1)/m``, at most ``p`` micro-batches in flight) and Sec. 2.2.2
  (``v`` model chunks per device: bubble ``(p - 1)/(v m)``, ``m`` a multiple
  of ``p``). The per-device orders follow Megatron-LM's
  ``forward_backward_pipelining_without_interleaving`` and
  ``..._with_interleaving`` (warm-up ``p - d - 1`` and
  ``2 (p - d - 1) + (v - 1) p`` forward passes on device ``d``).
* Activations in flight under interleaving: Korthikanti et al. 2022,
  "Reducing Activation Recomputation in Large Transformer Models" (arXiv
  2205.05198), Sec. 4.2.3: the first stage holds ``p + (p - 1)/v``
  micro-batches' worth.
* Zero bubble: Qi et al. 2023, "Zero Bubble Pipeline Parallelism" (arXiv
  2401.10241), Sec. 2-3: the backward pass is split into B (gradient of the
  input, on the critical path) and W (gradient of the weights, free to move);
  ZB-H1 keeps 1F1B's warm-up and memory and cuts the bubble to
  ``(p - 1)(T_F + T_B - T_W)``.
* Traffic between stages: Narayanan et al. 2021, Sec. 3.2 and 4.1: one
  ``b x s x h`` tensor per micro-batch crosses each stage boundary in each
  direction.

Times are seconds (``_s``), sizes bytes (``_bytes``). The simulator works on
integer arrays built once per schedule, not on per-task Python objects:
p = 64, m = 512, v = 4 (262,144 passes) takes tens of milliseconds.

Taught in ``notebooks/05_pipeline_parallelism.ipynb``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import catalog, compute, memory
from .catalog import ModelSpec
from .checks import (
    MAX_WORK,
    check_bool,
    check_choice,
    check_divides,
    check_int,
    check_positive,
    check_range,
    check_work,
)

__all__ = [
    "KINDS",
    "SCHEDULES",
    "B",
    "F",
    "LayerAssignment",
    "PipelineTimeline",
    "W",
    "activation_bytes_per_stage",
    "bubble_fraction",
    "dualpipe_bubble_s",
    "dualpipe_in_flight",
    "in_flight_arrays",
    "in_flight_closed_form",
    "layer_assignment",
    "micro_batches_for_utilisation",
    "one_f_one_b_period_s",
    "p2p_bytes",
    "p2p_seconds",
    "sends_per_micro_batch",
    "simulate",
    "stage_forward_s",
    "utilisation",
]

#: Schedule names accepted by :func:`simulate`.
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")
#: Kinds of pass, by their code in :attr:`PipelineTimeline.kind`: forward, backward
#: (the whole backward, or only its input-gradient half under zero bubble), weight gradient.
KINDS = ("F", "B", "W")
#: The codes of :data:`KINDS`, for selections such as ``timeline.kind == F``.
F, B, W = 0, 1, 2


# =========================================================================== closed forms
def bubble_fraction(schedule: str, p: int, m: int, v: int = 1, *,
                    forward_s: float = 1.0, backward_s: float | None = None,
                    weight_grad_share: float = 0.5) -> float:
    """Closed-form bubble fraction: idle time over ideal time, with balanced stages.

    ========================  =========================================  ==================
    ``"gpipe"``, ``"1f1b"``   ``(p - 1) / m``                            Narayanan Sec. 2.2.1
    ``"interleaved"``         ``(p - 1) / (v m)``                        Narayanan Sec. 2.2.2
    ``"zb-h1"``               ``(p - 1)(T_F + T_B - T_W) / (m T)``       Qi et al. Sec. 3.1
    ========================  =========================================  ==================

    The ideal time is ``m T`` per device with ``T = T_F + T_B + T_W`` the work
    of one micro-batch; the bubble of GPipe and 1F1B is ``(p - 1) T``, the same
    for both (1F1B saves memory, not time). For ``"zb-h1"``, ``T_W`` is
    ``weight_grad_share`` of the backward time and ``T_B`` the rest (the
    formula describes :func:`simulate`'s ZB-H1 exactly when ``m >= p`` and
    ``T_W <= min(T_F, T_B)``, the paper's setting); the other schedules
    ignore the times. GPipe (Huang et al. 2019, Sec. 2.3)
    states the same bubble as a share of the *total* time,
    ``(p - 1)/(m + p - 1)``; both describe the same schedule.
    """
    schedule = check_choice("schedule", schedule, SCHEDULES)
    p, m, v = _check_pmv(schedule, p, m, v)
    if schedule == "interleaved":
        return (p - 1) / (v * m)
    if schedule == "zb-h1":
        t_f = check_positive("forward_s", forward_s)
        t_b = 2 * t_f if backward_s is None else check_positive("backward_s", backward_s)
        share = _check_share(weight_grad_share)
        t_w = share * t_b
        return (p - 1) * max(t_f + (t_b - t_w) - t_w, 0.0) / (m * (t_f + t_b))
    return (p - 1) / m


def dualpipe_bubble_s(p, forward_s):
    """Idle seconds of DualPipe's bubble for ``p`` stages whose forward chunk takes
    ``forward_s`` (array-friendly; arguments unchecked).

    DeepSeek-V3 report (arXiv 2412.19437), Table 2: ``(p/2 - 1)(F&B + B - 3W)``, with ``F`` a
    forward chunk, ``B`` a full backward chunk, ``W`` its weight-gradient part and ``F&B``
    a forward and a backward chunk run as one overlapped pair. Taking the usual ``B = 2F``,
    ``W = F`` and ``F&B = F + B`` it is ``(p/2 - 1) × 2F`` (1F1B's, by the same count, is
    ``(p - 1) × 3F``); none for one or two stages.
    """
    p = np.asarray(p, dtype=float)
    return np.maximum(p / 2 - 1, 0.0) * 2 * np.asarray(forward_s, dtype=float)


def dualpipe_in_flight(p):
    """Micro-batches of activations a GPU holds under DualPipe: ``p + 1`` (DeepSeek-V3
    report, Table 2; 1F1B's first stage holds ``p``). Array-friendly."""
    return np.asarray(p, dtype=float) + 1


def utilisation(schedule: str, p: int, m: int, v: int = 1, **times) -> float:
    """Share of an iteration the GPUs spend on work: ideal time over actual time.

    ``1 / (1 + bubble)`` with :func:`bubble_fraction`'s bubble; for GPipe and 1F1B that is
    ``m / (m + p - 1)``, the complement of GPipe's idle share ``(p - 1)/(m + p - 1)``
    (Huang et al. 2019, Sec. 2.3); interleaving gives ``v m / (v m + p - 1)``. ``times``
    are passed on to :func:`bubble_fraction` (for ``"zb-h1"``).
    """
    return 1.0 / (1.0 + bubble_fraction(schedule, p, m, v, **times))


def micro_batches_for_utilisation(target: float, p: int, v: int = 1) -> int:
    """Fewest micro-batches ``m`` for which 1F1B (``v = 1``) or interleaved 1F1B reaches
    ``target`` utilisation.

    ``v m / (v m + p - 1) >= u`` holds when ``m >= u (p - 1) / ((1 - u) v)``: 90 % needs
    ``m >= 9 (p - 1)`` micro-batches per iteration without interleaving. Interleaved
    schedules also need ``m`` to be a multiple of ``p`` (Narayanan et al. 2021, Sec. 2.2.2),
    so with ``v > 1`` the result is rounded up to one.
    """
    u = check_range("target", target, 0.0, 1.0)
    if not 0 < u < 1:
        raise ValueError(f"target must be a number > 0 and < 1, got {target!r}")
    p = check_int("p", p)
    v = check_int("v", v)
    need = u * (p - 1) / ((1 - u) * v)
    m = max(1, math.ceil(need - 1e-9))
    if v > 1 and p > 1:
        m = math.ceil(m / p) * p
    return int(m)


def in_flight_closed_form(schedule: str, p: int, m: int, v: int = 1) -> np.ndarray:
    """Most micro-batches each stage holds activations for, by formula (micro-batch equivalents).

    * GPipe: every stage holds all ``m`` (Huang et al. 2019: all forwards run first).
    * 1F1B: stage ``i`` (0-based) holds ``min(p - i, m)``: its warm-up
      forwards plus one (Narayanan et al. 2021 Sec. 2.2.1).
    * ZB-H1: every stage holds ``min(p, m)``: postponed weight-gradient passes
      keep later stages' activations longer, up to 1F1B's peak and no more
      (Qi et al. 2023 Sec. 3.1).
    * Interleaved: stage ``i`` runs ``2 (p - i - 1) + (v - 1) p`` warm-up
      forward chunks, so holds that plus one chunk, at most ``v m``; a chunk
      is ``1/v`` of a micro-batch's activations on that device. Stage 0 holds
      ``p + (p - 1)/v`` (Korthikanti et al. 2022 Sec. 4.2.3) when ``m >= 2p``.
    """
    schedule = check_choice("schedule", schedule, SCHEDULES)
    p, m, v = _check_pmv(schedule, p, m, v)
    d = np.arange(p)
    if schedule == "gpipe":
        return np.full(p, float(m))
    if schedule == "zb-h1":
        return np.full(p, float(min(p, m)))
    return in_flight_arrays(p, m, v, d, interleaved=schedule == "interleaved")


def in_flight_arrays(p, m, v, stage=0, interleaved=None):
    """Micro-batch equivalents held by ``stage`` under 1F1B (``v = 1``) or interleaved 1F1B.

    Array-friendly kernel of :func:`in_flight_closed_form` (arguments unchecked):
    ``min(p - i, m)`` for 1F1B, ``min(2 (p - i - 1) + (v - 1) p + 1, v m) / v`` for the
    interleaved schedule
    (``interleaved`` defaults to ``v > 1``).
    """
    p, m, v, i = (np.asarray(x, dtype=float) for x in (p, m, v, stage))
    interleaved = v > 1 if interleaved is None else np.asarray(interleaved, dtype=bool)
    chunks = np.minimum(2 * (p - i - 1) + (v - 1) * p + 1, v * m) / v
    return np.where(interleaved, chunks, np.minimum(p - i, m))


def one_f_one_b_period_s(p: int, forward_s: float, backward_s: float | None = None,
                         transfer_s: float = 0.0) -> float:
    """Time per micro-batch of 1F1B's steady state when sends take ``transfer_s``.

    The first stage keeps ``p`` micro-batches in flight and gets each one back
    after a round trip of ``p (t_f + t_b) + 2 (p - 1) t``: forward through
    every stage, backward through every stage, one send per boundary each
    way. By Little's law (throughput = in flight / time in the system; Little
    1961, "A Proof for the Queuing Formula L = λW") a micro-batch costs
    ``t_f + t_b + 2 (p - 1) t / p``: unlike GPipe, which pays each send once per
    iteration, 1F1B pays the sends on every round trip. With ``t = 0`` this is
    the ideal ``t_f + t_b``. (:func:`simulate` reproduces it exactly for
    ``m >= p``: ``p`` more micro-batches cost ``p`` times this.)
    """
    p = check_int("p", p)
    t_f = check_positive("forward_s", forward_s)
    t_b = 2 * t_f if backward_s is None else check_positive("backward_s", backward_s)
    t = check_positive("transfer_s", transfer_s, allow_zero=True)
    return t_f + t_b + 2 * (p - 1) * t / p


# =========================================================================== the simulator
@dataclass(frozen=True, eq=False)
class PipelineTimeline:
    """Every pass of one pipelined iteration, timed; plus the bubble and the memory it implies.

    Task arrays (all of one length, device by device, each device's passes in
    the order it runs them): :attr:`device`, :attr:`kind` (codes of
    :data:`KINDS`), :attr:`micro_batch`, :attr:`chunk` (model chunk on that
    device; the virtual stage is ``chunk * p + device``), :attr:`start_s`,
    :attr:`end_s`.
    """

    schedule: str
    p: int
    m: int
    v: int
    device: np.ndarray
    kind: np.ndarray
    micro_batch: np.ndarray
    chunk: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    #: Work of each device for the whole iteration (seconds): ``m (t_f + t_b)``.
    busy_s: np.ndarray
    #: The most micro-batch *chunks* each device holds activations for at once.
    peak_in_flight: np.ndarray
    #: The formula's bubble fraction (:func:`bubble_fraction`) for these inputs.
    bubble_closed_form: float
    transfer_s: float

    @property
    def n_tasks(self) -> int:
        """Number of passes (F, B and W) in the iteration."""
        return int(self.device.size)

    @property
    def makespan_s(self) -> float:
        """Time from the first forward to the last backward (seconds)."""
        return float(self.end_s.max()) if self.end_s.size else 0.0

    @property
    def ideal_s(self) -> float:
        """Time without a bubble: the busiest device's work, ``m (t_f + t_b)`` when balanced."""
        return float(self.busy_s.max())

    @property
    def bubble_s(self) -> float:
        """Makespan minus the ideal time (seconds)."""
        return self.makespan_s - self.ideal_s

    @property
    def bubble_fraction(self) -> float:
        """Measured bubble: ``(makespan - ideal) / ideal``, comparable to the closed form."""
        return self.bubble_s / self.ideal_s

    @property
    def idle_fraction(self) -> np.ndarray:
        """Per device, the share of the makespan it sits idle."""
        return 1.0 - self.busy_s / self.makespan_s

    @property
    def peak_in_flight_mb(self) -> np.ndarray:
        """:attr:`peak_in_flight` in micro-batch equivalents (a chunk is ``1/v`` of one)."""
        return self.peak_in_flight / self.v

    def tasks_of(self, device: int) -> slice:
        """The slice of the task arrays that holds ``device``'s passes, in order."""
        device = check_int("device", device, minimum=0, maximum=self.p - 1)
        n = self.n_tasks // self.p
        return slice(device * n, (device + 1) * n)


def _check_pmv(schedule: str, p, m, v) -> tuple[int, int, int]:
    p = check_int("p", p)
    m = check_int("m", m)
    v = check_int("v", v)
    if schedule != "interleaved" and v != 1:
        raise ValueError(f"v={v} model chunks per device needs schedule 'interleaved'; "
                         f"schedule {schedule!r} takes v=1")
    if schedule == "interleaved" and m % p:
        lower = m // p * p
        near = [n for n in (lower, lower + p) if n >= p]
        raise ValueError(
            f"m={m} must be a multiple of p={p} for the interleaved schedule (as in "
            f"Megatron-LM); try m={' or m='.join(map(str, near))}")
    return p, m, v


#: The most passes (forward, backward, weight-gradient) :func:`simulate` times in one call,
#: over all devices, and per device (the number of its event rounds); about a second each.
MAX_PASSES = MAX_WORK // 10
MAX_PASSES_PER_DEVICE = 200_000


def _check_size(schedule: str, p: int, m: int, v: int) -> None:
    """Refuse a schedule too large to simulate before allocating it (p x 2vm passes)."""
    per_device = 3 * m if schedule == "zb-h1" else 2 * v * m
    hint = "use fewer stages (p), micro-batches (m) or chunks (v); bubble_fraction() gives " \
           "the closed form at any size"
    check_work(f"simulating {schedule} with p={p}, m={m}, v={v}", p * per_device, hint,
               MAX_PASSES)
    check_work(f"simulating {schedule} with p={p}, m={m}, v={v} (passes per device)",
               per_device + p, hint, MAX_PASSES_PER_DEVICE)


def _check_share(share) -> float:
    share = check_range("weight_grad_share", share, 0.0, 1.0)
    if share in (0.0, 1.0):
        raise ValueError(f"weight_grad_share must be strictly between 0 and 1, got {share!r}")
    return share


def _per_stage(name: str, value, p: int) -> np.ndarray:
    """A time given once for all stages, or once per stage, as an array of ``p`` floats > 0."""
    if np.ndim(value) == 0:
        return np.full(p, check_positive(name, value))
    values = list(np.asarray(value, dtype=object).ravel())
    if len(values) != p:
        raise ValueError(f"{name} must be one number or {p} numbers (one per stage), "
                         f"got {len(values)}")
    return np.array([check_positive(f"{name}[{i}]", x) for i, x in enumerate(values)])


def _orders(schedule: str, p: int, m: int, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each device's passes in the order it runs them: ``kind``, ``micro_batch``, ``chunk``.

    Arrays of shape ``(p, n)`` with ``n = 2 v m`` (``3 m`` for zero bubble). Device ``d``
    runs ``w_d`` warm-up forwards, then pairs of one forward and one backward, then the
    remaining backwards (GPipe: ``w_d = v m``, all forwards first).
    """
    if schedule == "zb-h1":
        return _zb_h1_orders(p, m)
    n_virtual = v * m
    k = np.arange(n_virtual)
    # Megatron-LM's order of (micro-batch, chunk) pairs: groups of p micro-batches go
    # through chunk 0, then chunk 1, ...; backward passes take the chunks in reverse.
    f_chunk = (k % (p * v)) // p
    f_mb = (k // (p * v)) * p + k % p
    b_chunk = v - 1 - f_chunk
    b_mb = m - 1 - f_mb if schedule == "gpipe" else f_mb  # GPipe: last in, first back
    d = np.arange(p)[:, None]
    if schedule == "gpipe":
        warmup = np.full((p, 1), n_virtual)
    elif schedule == "1f1b":
        warmup = np.minimum(p - 1 - d, m)
    else:  # interleaved
        warmup = np.minimum(2 * (p - 1 - d) + (v - 1) * p, n_virtual)
    q = np.arange(2 * n_virtual)[None, :]  # position in the device's order
    steady = (q >= warmup) & (q < 2 * n_virtual - warmup)
    forward = (q < warmup) | (steady & ((q - warmup) % 2 == 0))
    index = np.where(q < warmup, q,
                     np.where(steady, np.where(forward, warmup + (q - warmup) // 2,
                                               (q - warmup) // 2), q - n_virtual))
    kind = np.where(forward, F, B).astype(np.int8)
    mb = np.where(forward, f_mb[index], b_mb[index]).astype(np.int32)
    chunk = np.where(forward, f_chunk[index], b_chunk[index]).astype(np.int16)
    return kind, mb, chunk


def _zb_h1_orders(p: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ZB-H1 (Qi et al. 2023, Sec. 3.1): 1F1B's order with each backward split into B and W.

    Device ``d`` runs 1F1B's ``min(p - d - 1, m)`` warm-up forwards, then F B
    pairs, then the remaining B passes; each W pass follows the B pass ``d``
    places after its own (the first stage computes weight gradients at once,
    the last stage, which 1F1B leaves holding one micro-batch, postpones them
    most), and the W passes still owed run at the end, filling the cool-down
    bubbles. Every stage then holds at most ``p`` micro-batches (1F1B's
    peak), and with ``T_W <= min(T_F, T_B)`` and ``m >= p`` the bubble is the
    paper's ``(p - 1)(T_F + T_B - T_W)`` (the tests check both).
    """
    d = np.arange(p)[:, None]
    j = np.arange(m)[None, :]
    warmup = np.minimum(p - 1 - d, m)
    # sort keys: step t of the 1F1B loop (warm-up steps negative), then F < B < W within it
    t_f = np.broadcast_to(j - warmup, (p, m))
    t_b = np.broadcast_to(j, (p, m))
    t_w = np.where(j + d < m, j + d, m + j)
    key = np.concatenate([3 * t_f, 3 * t_b + 1, 3 * t_w + 2], axis=1)
    order = np.argsort(key, axis=1, kind="stable")
    return ((order // m).astype(np.int8), (order % m).astype(np.int32),
            np.zeros(order.shape, dtype=np.int16))


def _layout(p: int, m: int, v: int, kind: np.ndarray, mb: np.ndarray, chunk: np.ndarray,
            f_s: np.ndarray, b_s: np.ndarray, transfer_s: float, share: float):
    """Dependencies and durations of every pass, on a grid padded with a stop cell per device.

    Cell ``d * (n + 1) + q`` is device ``d``'s ``q``-th pass; ``d * (n + 1) + n`` is its stop
    cell, which waits for itself (never ready). Returns ``dep`` (the cell each pass waits
    for on its own or another stage; ``-1``, an extra cell done at time 0, for none),
    ``lag`` (transfer time added to that cell's end) and ``dur``.
    """
    n = kind.shape[1]
    width = n + 1
    n_stages = v * p
    d = np.arange(p)[:, None]
    cell = d * width + np.arange(n)[None, :]
    stage = chunk.astype(np.int64) * p + d  # virtual stage
    # one lookup table: (kind, virtual stage, micro-batch) -> cell
    table = np.empty(len(KINDS) * n_stages * m, dtype=np.int64)
    table[(kind.astype(np.int64) * n_stages + stage) * m + mb] = cell
    is_f, is_b = kind == F, kind == B
    last = is_b & (stage == n_stages - 1)
    # a forward waits for the previous stage's forward, a backward for the next stage's
    # backward (the last stage's for its own forward), a weight-gradient pass for its own B
    dep_kind = np.where(is_f | last, F, B)
    dep_stage = stage + np.where(is_f, -1, np.where(is_b & ~last, 1, 0))
    dep = table[(dep_kind * n_stages + np.maximum(dep_stage, 0)) * m + mb]
    dep[is_f & (stage == 0)] = -1
    hop = transfer_s if p > 1 else 0.0
    lag = np.where(dep_stage != stage, hop, 0.0)
    lag[is_f & (stage == 0)] = 0.0
    f_chunk, b_chunk = (f_s / v)[:, None], (b_s / v)[:, None]
    if (kind == W).any():
        dur = np.where(is_f, f_chunk, np.where(is_b, (1 - share) * b_chunk, share * b_chunk))
    else:
        dur = np.where(is_f, f_chunk, b_chunk)
    pad = np.arange(p) * width + n  # the stop cells
    dep = np.concatenate([dep, pad[:, None]], axis=1).ravel()
    lag = np.concatenate([lag, np.zeros((p, 1))], axis=1).ravel()
    dur = np.concatenate([dur, np.zeros((p, 1))], axis=1).ravel()
    return dep, lag, dur


def _run(dep: np.ndarray, lag: np.ndarray, dur: np.ndarray, p: int, width: int) -> np.ndarray:
    """End time of every cell: ``end = max(device free, end[dep] + lag) + dur``.

    Returns ``p * width + 1`` values; the last is the "no dependency" cell (0).

    Works in rounds, all devices at once: in each round every device runs its
    next pass if that pass's dependency has already been timed (a cell not yet
    timed holds NaN, which ``np.maximum`` carries, so a blocked device simply
    does not advance). Any order that respects the dependencies gives the same
    earliest times; rounds number about the passes per device plus the
    pipeline's depth, so the Python loop is short and each step is a handful
    of numpy calls on ``p`` values.
    """
    end = np.full(p * width + 1, np.nan)
    end[-1] = 0.0  # cell -1: "no dependency", done at time 0
    free = np.zeros(p)
    ptr = np.arange(p) * width  # each device's next cell
    stop = ptr + width - 1
    rounds = 0
    moved = -1
    while True:
        after = np.maximum(free, end[dep[ptr]] + lag[ptr]) + dur[ptr]  # NaN: not ready
        end[ptr] = after
        free = np.fmax(after, free)
        ptr += after == after
        rounds += 1
        if rounds % 32 == 0:
            if (ptr == stop).all():
                return end
            if ptr.sum() == moved:  # pragma: no cover - the schedules cannot deadlock
                raise RuntimeError("pipeline schedule deadlocked: passes wait for each other")
            moved = ptr.sum()


def simulate(
    schedule: str = "1f1b",
    p: int = 4,
    m: int = 8,
    v: int = 1,
    *,
    forward_s: float | Sequence[float] = 1.0,
    backward_s: float | Sequence[float] | None = None,
    transfer_s: float = 0.0,
    weight_grad_share: float = 0.5,
    n_layers: int | None = None,
) -> PipelineTimeline:
    """Time one iteration of a pipeline schedule, every pass as early as allowed.

    Each device runs its passes in the schedule's fixed order (see the module
    sources). A pass starts when its device is free and its input has
    arrived: a forward needs the previous stage's forward of the same
    micro-batch, a backward the next stage's backward (the last stage: its own
    forward), a weight-gradient pass its own B; crossing to another device
    adds ``transfer_s``.

    Parameters
    ----------
    schedule
        ``"gpipe"``, ``"1f1b"``, ``"interleaved"`` or ``"zb-h1"`` (:data:`SCHEDULES`).
    p, m, v
        Stages (devices), micro-batches, model chunks per device (``v > 1``
        only with ``"interleaved"``, which also needs ``m`` a multiple of ``p``).
    forward_s, backward_s
        Time of one micro-batch's forward (backward) pass through *all* the
        layers of a device, seconds: one number, or one per stage. A chunk
        takes ``1/v`` of it. Backward defaults to twice the forward.
    transfer_s
        Point-to-point time to send a micro-batch's activations (or their
        gradients) to the neighbouring stage, seconds (default 0).
    weight_grad_share
        Zero bubble only: the share of the backward time spent on weight gradients (W).
    n_layers
        If given, ``p`` must divide it and ``v`` must divide the layers per stage.
    """
    schedule = check_choice("schedule", schedule, SCHEDULES)
    p, m, v = _check_pmv(schedule, p, m, v)
    f_s = _per_stage("forward_s", forward_s, p)
    b_s = 2 * f_s if backward_s is None else _per_stage("backward_s", backward_s, p)
    transfer_s = check_positive("transfer_s", transfer_s, allow_zero=True)
    share = _check_share(weight_grad_share)
    if n_layers is not None:
        n_layers = check_int("n_layers", n_layers)
        check_divides("p", p, "n_layers", n_layers)
        check_divides("v", v, "layers per stage", n_layers // p)
    _check_size(schedule, p, m, v)
    kind, mb, chunk = _orders(schedule, p, m, v)
    n = kind.shape[1]
    dep, lag, dur = _layout(p, m, v, kind, mb, chunk, f_s, b_s, transfer_s, share)
    ends = _run(dep, lag, dur, p, n + 1)
    # start = max(device free, input ready): the same floating-point sums as in the rounds
    free = np.concatenate([[0.0], ends[:-2]])
    free[:: n + 1] = 0.0
    start = np.maximum(free, ends[dep] + lag).reshape(p, n + 1)[:, :-1]
    end = ends[:-1].reshape(p, n + 1)[:, :-1]
    release = W if schedule == "zb-h1" else B
    held = np.cumsum((kind == F).astype(np.int32) - (kind == release), axis=1)
    closed = bubble_fraction(schedule, p, m, v, forward_s=float(f_s.mean()),
                             backward_s=float(b_s.mean()), weight_grad_share=share)
    arrays = {
        "device": np.repeat(np.arange(p, dtype=np.int32), n), "kind": kind.ravel(),
        "micro_batch": mb.ravel(), "chunk": chunk.ravel(), "start_s": start.ravel(),
        "end_s": end.ravel(), "busy_s": m * (f_s + b_s), "peak_in_flight": held.max(axis=1),
    }
    for array in arrays.values():
        array.flags.writeable = False
    return PipelineTimeline(schedule=schedule, p=p, m=m, v=v, bubble_closed_form=closed,
                            transfer_s=transfer_s, **arrays)


# =========================================================================== layers to stages
@dataclass(frozen=True, eq=False)
class LayerAssignment:
    """Which device and model chunk runs each layer: arrays of ``n_layers`` ints, layer order."""

    n_layers: int
    p: int
    v: int
    virtual_stage: np.ndarray
    device: np.ndarray
    chunk: np.ndarray

    @property
    def layers_per_chunk(self) -> int:
        """Consecutive layers in one model chunk: ``n_layers / (p v)``."""
        return self.n_layers // (self.p * self.v)

    def layers_of(self, device: int) -> list[range]:
        """The layer ranges ``device`` holds, one per chunk, in chunk order."""
        device = check_int("device", device, minimum=0, maximum=self.p - 1)
        k = self.layers_per_chunk
        return [range((c * self.p + device) * k, (c * self.p + device + 1) * k)
                for c in range(self.v)]


def layer_assignment(n_layers: int, p: int, v: int = 1) -> LayerAssignment:
    """Layers to pipeline stages and devices, as :func:`simulate` runs them.

    The ``n_layers`` layers are cut into ``p v`` *virtual stages* of
    ``n_layers / (p v)`` consecutive layers; virtual stage ``s`` runs on device
    ``s mod p`` as its model chunk ``s // p``. With ``v = 1`` device ``d`` holds
    one block of consecutive layers; with ``v > 1`` it holds ``v`` blocks spread
    through the model (device 0 of 4 with ``v = 2``: the first and the fifth of
    eight blocks), so a micro-batch visits every device ``v`` times (Narayanan
    et al. 2021, Sec. 2.2.2 and Fig. 4; Megatron-LM's interleaved schedule).
    """
    n_layers = check_int("n_layers", n_layers)
    p = check_int("p", p)
    v = check_int("v", v)
    check_divides("p", p, "n_layers", n_layers)
    check_divides("v", v, "layers per stage", n_layers // p)
    virtual = np.arange(n_layers) // (n_layers // (p * v))
    arrays = {"virtual_stage": virtual, "device": virtual % p, "chunk": virtual // p}
    for array in arrays.values():
        array.flags.writeable = False
    return LayerAssignment(n_layers=n_layers, p=p, v=v, **arrays)


# =========================================================================== memory and traffic
def activation_bytes_per_stage(
    timeline: PipelineTimeline,
    model: str | ModelSpec,
    micro_batch: int = 1,
    seq_len: int | None = None,
    tp: int = 1,
    sp: bool = False,
    recompute: str = "none",
    *,
    flash_attention: bool = False,
) -> np.ndarray:
    """Peak activation bytes per GPU of each stage under a simulated schedule.

    ``timeline.peak_in_flight_mb`` (micro-batches held at once, in
    micro-batch equivalents) times one micro-batch's activations over the
    stage's ``n_layers / p`` layers, :func:`scaleout.memory.activation_bytes`
    (Korthikanti et al. 2022, Table 2). GPipe holds ``m`` micro-batches on
    every stage; 1F1B holds ``p`` on the first, fewer on later stages.
    """
    check_bool("sp", sp)
    check_bool("flash_attention", flash_attention)
    m = catalog.model(model)
    one = memory.activation_bytes(m, micro_batch, seq_len, tp, sp, recompute, pp=timeline.p,
                                  flash_attention=flash_attention)  # checks p | n_layers
    check_divides("v", timeline.v, "layers per stage", m.n_layers // timeline.p)
    return timeline.peak_in_flight_mb * one


def p2p_bytes(
    model: str | ModelSpec,
    micro_batch: int = 1,
    seq_len: int | None = None,
    tp: int = 1,
    *,
    scatter_gather: bool = False,
    bytes_per_value: int = 2,
) -> float:
    """Bytes one micro-batch sends across one stage boundary, in one direction.

    Narayanan et al. 2021 (arXiv 2104.04473), Sec. 3.2: the tensor passed
    between consecutive stages has ``b s h`` values (activations forward, their
    gradients backward; 16-bit by default). With the scatter/gather
    optimisation of Sec. 4.1 each of the ``t`` tensor-parallel ranks sends
    only its ``1/t`` share and the receiving side all-gathers it over NVLink.
    """
    check_bool("scatter_gather", scatter_gather)
    m = catalog.model(model)
    b = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    tp = check_int("tp", tp)
    check_positive("bytes_per_value", bytes_per_value)
    values = b * s * m.hidden
    return float(values * bytes_per_value / (tp if scatter_gather else 1))


def sends_per_micro_batch(p: int, v: int = 1) -> int:
    """Point-to-point messages one micro-batch causes per iteration: ``2 (v p - 1)``.

    It visits ``v p`` (virtual) stages in turn, crossing ``v p - 1`` boundaries
    forward and as many backward. Interleaving multiplies the messages by
    about ``v`` (Narayanan et al. 2021, Sec. 2.2.2: "the amount of
    communication also increases by v"). With ``p = 1`` the chunks share one
    GPU and these hand-overs stay local.
    """
    p = check_int("p", p)
    v = check_int("v", v)
    return 2 * (v * p - 1)


def p2p_seconds(n_bytes: float, link_gbytes_s: float, latency_s: float = 0.0) -> float:
    """Time to send ``n_bytes`` over one link: ``latency + bytes / bandwidth``.

    ``link_gbytes_s`` is the link's rate per direction in GB/s (10**9 bytes
    per second; see :mod:`scaleout.units` for Gb/s). Only the two neighbours
    talk, so the link is not shared with other pairs.
    """
    check_positive("n_bytes", n_bytes, allow_zero=True)
    rate = check_positive("link_gbytes_s", link_gbytes_s)
    latency_s = check_positive("latency_s", latency_s, allow_zero=True)
    return latency_s + n_bytes / (rate * 1e9)


def stage_forward_s(
    model: str | ModelSpec,
    micro_batch: int,
    p: int,
    tp: int = 1,
    seq_len: int | None = None,
    *,
    achieved_tflops: float = 150.0,
) -> float:
    """Forward time of one micro-batch on one stage (one GPU of its ``tp`` group), seconds.

    The forward pass is a third of a training step's FLOPs (backward twice the
    forward, Kaplan et al. 2020), i.e. ``(2N + 4 l h s)`` per token with
    :func:`scaleout.compute.flops_per_token` (PaLM, App. B); a stage does
    ``1/p`` of it for ``b s`` tokens, split over ``tp`` GPUs, at
    ``achieved_tflops`` per GPU. Embedding and output layers are spread evenly
    (in practice they make the first and last stages a little slower).
    """
    m = catalog.model(model)
    b = check_int("micro_batch", micro_batch)
    p = check_int("p", p)
    tp = check_int("tp", tp)
    rate = check_positive("achieved_tflops", achieved_tflops) * 1e12
    s = seq_len if seq_len is not None else m.seq_len
    forward_flops = compute.flops_per_token(m, s) / 3 * b * s
    return forward_flops / (p * tp * rate)
