"""What one checkpoint writes, who writes it, and how long writing and reading take.

A checkpoint holds the same bytes per parameter as GPU memory without the gradients
(:func:`scaleout.memory.model_state_breakdown`: 2 + 12 bytes for mixed-precision Adam,
Rajbhandari et al. 2020, "ZeRO", arXiv 1910.02054, Sec. 3.1), written by one GPU, by one
data-parallel replica, or by every GPU for its ZeRO-3 shard. The write time is a bottleneck model:
the storage's aggregate bandwidth against one writer's own path. Its blocking part is
the ``delta`` of Young and Daly (:mod:`scaleout.reliability.intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import catalog, memory
from ..checks import MAX_PARAMS, check_bool, check_choice, check_int, check_positive
from ..units import GB
from ._common import _check_gpus

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
