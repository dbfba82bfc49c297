"""ZeRO: what each stage shards, what it saves in memory, and what it moves over the network.

The Zero Redundancy Optimizer partitions the model state that plain data
parallelism replicates on every GPU, in three stages over the ``N_d``
data-parallel GPUs:

=====  ==============  ====================================  ==========================
stage  paper's name    shards                                traffic per GPU and step
=====  ==============  ====================================  ==========================
0      (plain DP)      nothing                               all-reduce of gradients: 2Ψ
1      ``P_os``        optimizer state                       reduce-scatter of gradients
                                                             + all-gather of weights: 2Ψ
2      ``P_os+g``      + gradients                           the same: 2Ψ
3      ``P_os+g+p``    + weights                             all-gather of weights in the
                                                             forward AND in the backward
                                                             pass + reduce-scatter: 3Ψ
=====  ==============  ====================================  ==========================

Traffic is in elements (parameters): Ψ of them per collective in the limit of
many GPUs, ``(N_d − 1)/N_d · Ψ`` exactly for a bandwidth-optimal ring. With
16-bit gradients and weights, 2 bytes each.

Sources
-------
* Rajbhandari, Rasley, Ruwase, He 2020, "ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models" (SC20, arXiv 1910.02054): Sec. 5
  (the stages) and Table 1 (memory per GPU, reproduced by
  :func:`scaleout.memory.model_state_bytes`); Sec. 7.2: data parallelism's
  all-reduce is a reduce-scatter plus an all-gather, ``2Ψ`` per GPU;
  ``P_os`` and ``P_os+g`` move the same ``2Ψ``; ``P_os+g+p`` adds one
  all-gather of the parameters, ``3Ψ``, "1.5x" of the baseline.
* Times: :mod:`scaleout.collectives` on a
  :class:`~scaleout.collectives.NodeNetwork` (a node's NVLink, the network between
  nodes).

Taught in ``notebooks/06_zero_stages.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import catalog, collectives, memory
from .catalog import GPU, ModelSpec
from .checks import check_array, check_choice, check_int, check_positive
from .collectives import NodeNetwork

__all__ = [
    "STAGE_NAMES",
    "STAGE_SHARDS",
    "STATE_PARTS",
    "ZeroComm",
    "ZeroPartition",
    "lowest_fitting_stage",
    "partition",
    "stage_collectives",
    "zero_comm",
    "zero_comm_bytes",
    "zero_comm_elements",
    "zero_memory_table",
]

#: The paper's names for stages 1-3 (Sec. 5), and plain data parallelism.
STAGE_NAMES = {0: "plain DP", 1: "P_os", 2: "P_os+g", 3: "P_os+g+p"}

#: What each stage shards (Sec. 5), for tables and widgets.
STAGE_SHARDS = {
    0: "nothing",
    1: "optimizer state",
    2: "optimizer state, gradients",
    3: "optimizer state, gradients, weights",
}

_COLLECTIVES = {
    0: (("all_reduce", "gradients"),),
    1: (("reduce_scatter", "gradients"), ("all_gather", "weights")),
    2: (("reduce_scatter", "gradients"), ("all_gather", "weights")),
    3: (("all_gather", "weights"), ("all_gather", "weights again, backward"),
        ("reduce_scatter", "gradients")),
}


def _stage(zero_stage) -> int:
    return check_int("zero_stage", zero_stage, minimum=0, maximum=3)


def stage_collectives(zero_stage: int) -> tuple[tuple[str, str], ...]:
    """The collectives of one step, ``((op, what it moves), ...)``, each over all Ψ parameters.

    ZeRO Sec. 7.2: stage 0 one all-reduce of the gradients; stages 1 and 2 a
    reduce-scatter of the gradients (each GPU keeps the sum of its shard),
    then an all-gather of the updated weights; stage 3 gathers each layer's
    weights before its forward and again before its backward computation,
    and reduce-scatters the gradients.
    """
    return _COLLECTIVES[_stage(zero_stage)]


def zero_comm_elements(params, zero_stage: int, dp: int | None = None):
    """Elements one GPU sends per step: ``2Ψ`` (stages 0-2) or ``3Ψ`` (stage 3).

    ZeRO Sec. 7.2, in the paper's large-``N_d`` limit when ``dp`` is None; with
    ``dp`` given, each collective's exact ring volume
    (:func:`scaleout.collectives.lower_bound_bytes`): an all-reduce sends
    ``2(N_d−1)/N_d · Ψ``, a reduce-scatter or all-gather ``(N_d−1)/N_d · Ψ``.
    Array-friendly in ``params``.
    """
    psi = check_array("params", params, allow_zero=False)
    ops = stage_collectives(zero_stage)
    if dp is None:
        factor = sum(2.0 if op == "all_reduce" else 1.0 for op, _ in ops)
    else:
        n = check_int("dp", dp)
        factor = sum(collectives.busbw_factor(op, n) for op, _ in ops)
    out = psi * factor
    return float(out) if out.ndim == 0 else out


def zero_comm_bytes(params, zero_stage: int, dp: int | None = None,
                    bytes_per_element: float = 2):
    """Bytes one GPU sends per step: :func:`zero_comm_elements` × 2 bytes (fp16/bf16)."""
    check_positive("bytes_per_element", bytes_per_element)
    out = np.asarray(zero_comm_elements(params, zero_stage, dp)) * bytes_per_element
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ZeroComm:
    """One step's ZeRO communication on one GPU: each collective's seconds, and the bytes sent."""

    zero_stage: int
    dp: int
    parts_s: dict[str, float]
    bytes_sent: float

    @property
    def total_s(self) -> float:
        """All collectives of the step, one after another."""
        return float(sum(self.parts_s.values()))


def zero_comm(params: float, zero_stage: int, dp: int, fabric: NodeNetwork | None = None,
              recipe: str | memory.PrecisionRecipe = "mixed-adam") -> ZeroComm:
    """Seconds of each collective of a ZeRO step over ``dp`` GPUs of ``fabric``.

    ``parts_s`` is keyed ``"reduce-scatter (gradients)"``, ``"all-gather (weights)"``,
    ``"all-gather (weights again, backward)"``, ``"all-reduce (gradients)"``.

    Each collective of :func:`stage_collectives` moves all Ψ gradients (at the
    recipe's gradient bytes) or all Ψ weights (at its weight bytes): 2 and 2
    for mixed-precision Adam, the paper's fp16 case, where ``bytes_sent``
    equals :func:`zero_comm_bytes`; Megatron-LM's bf16 recipe reduces fp32
    gradients, 4 bytes. Times come from ``NodeNetwork.time`` (ring inside a node,
    hierarchical or flat across nodes); ``bytes_sent`` is what each GPU sends
    in a ring (:func:`scaleout.collectives.lower_bound_bytes`). Overlap with
    computation is not subtracted.
    """
    psi = check_positive("params", params)
    stage = _stage(zero_stage)
    dp = check_int("dp", dp)
    r = memory.get_recipe(recipe)
    fab = fabric or NodeNetwork()
    parts, sent = {}, 0.0
    for op, what in stage_collectives(stage):
        size = psi * (r.grad_bytes if what == "gradients" else r.weight_bytes)
        parts[f"{op.replace('_', '-')} ({what})"] = float(fab.time(op, size, dp, name="dp"))
        sent += collectives.lower_bound_bytes(op, size, dp)
    return ZeroComm(stage, dp, parts, float(sent))


def zero_memory_table(params: float, dps: Sequence[int], stages: Sequence[int] = (0, 1, 2, 3),
                      recipe: str | memory.PrecisionRecipe = "mixed-adam") -> np.ndarray:
    """Model state per GPU in bytes, ``[len(dps), len(stages)]``: ZeRO Table 1's layout.

    Each cell is :func:`scaleout.memory.model_state_bytes` (ZeRO Sec. 5:
    ``16Ψ``, ``4Ψ + 12Ψ/N_d``, ``2Ψ + 14Ψ/N_d``, ``16Ψ/N_d`` with K = 12).
    ``zero_memory_table(7.5e9, [1, 4, 16, 64, 256, 1024], [1, 2, 3]) / 1e9`` is
    the 7.5B block of the paper's Table 1 in GB.
    """
    return np.array([[memory.model_state_bytes(params, s, d, recipe) for s in stages]
                     for d in dps])


def lowest_fitting_stage(model: str | ModelSpec, gpu: str | GPU, dp: int,
                         **training_memory_kw) -> int | None:
    """The lowest ZeRO stage (least communication) at which a layout fits on ``gpu``, or None.

    Tries stages 0 to 3 with :func:`scaleout.memory.training_memory` (other
    keywords as it takes them: ``tp``, ``pp``, ``micro_batch``, ``recompute``, ...).
    Stages 0-2 move ``2Ψ`` per step, stage 3 ``3Ψ``: the lowest stage that
    fits is the cheapest one.
    """
    g = catalog.gpu(gpu)
    for stage in range(4):
        if memory.training_memory(model, g, dp=dp, zero_stage=stage, **training_memory_kw).fits:
            return stage
    return None


# =========================================================================== who holds what
#: The three parts of the model state, in the order ZeRO shards them last to first.
STATE_PARTS = ("weights", "grads", "optimizer")


@dataclass(frozen=True, eq=False)
class ZeroPartition:
    """Which parameters' weights, gradients and optimizer state each of ``dp`` GPUs keeps.

    :attr:`ranges` maps each of :data:`STATE_PARTS` to a ``(dp, 2)`` array of
    ``[start, stop)`` parameter indices: ``[0, Ψ)`` on every GPU where the part
    is replicated, GPU ``i``'s own slice where it is sharded.
    """

    params: int
    zero_stage: int
    dp: int
    ranges: dict[str, np.ndarray]

    def sharded(self, part: str) -> bool:
        """Whether ``part`` is split over the GPUs (False where replicated, and for ``dp = 1``)."""
        r = self.ranges[check_choice("part", part, STATE_PARTS)]
        return bool(r[0, 1] - r[0, 0] < self.params)

    def count(self, part: str) -> np.ndarray:
        """Parameters of ``part`` each GPU keeps (one number per GPU)."""
        r = self.ranges[part]
        return r[:, 1] - r[:, 0]

    def bytes_per_gpu(self, recipe: str | memory.PrecisionRecipe = "mixed-adam") -> np.ndarray:
        """Model-state bytes each GPU keeps at the recipe's bytes per parameter."""
        r = memory.get_recipe(recipe)
        return (self.count("weights") * r.weight_bytes + self.count("grads") * r.grad_bytes
                + self.count("optimizer") * r.optimizer_bytes)


def partition(params: int, zero_stage: int, dp: int) -> ZeroPartition:
    """Who keeps which slice of the model state under a ZeRO stage.

    ZeRO Sec. 5.1: the state is cut "into N_d equal partitions, such that the
    i-th data parallel process only updates the optimizer states corresponding
    to the i-th partition"; stage 2 cuts the gradients and stage 3 the weights
    the same way (:func:`scaleout.memory.model_state_breakdown` counts the
    bytes: ``16Ψ``, ``4Ψ + 12Ψ/N_d``, ``2Ψ + 14Ψ/N_d``, ``16Ψ/N_d``). Slices
    are contiguous in the flattened parameters; when ``dp`` does not divide
    ``params`` the first ``params mod dp`` GPUs keep one more.
    """
    psi = check_int("params", params)
    stage = _stage(zero_stage)
    dp = check_int("dp", dp)
    if dp > psi:
        raise ValueError(f"dp={dp} exceeds params={psi}: every GPU needs at least one "
                         "parameter of each shard")
    w, g, o = (float(f) for f in memory._shard_factors(stage, dp))
    sizes = np.full(dp, psi // dp) + (np.arange(dp) < psi % dp)
    stops = np.cumsum(sizes)
    own = np.stack([stops - sizes, stops], axis=1)
    whole = np.tile([0, psi], (dp, 1))
    ranges = {part: own if factor < 1 else whole
              for part, factor in zip(STATE_PARTS, (w, g, o), strict=True)}
    for array in ranges.values():
        array.flags.writeable = False
    return ZeroPartition(params=psi, zero_stage=stage, dp=dp, ranges=ranges)
