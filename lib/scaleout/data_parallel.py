"""Data parallelism: replicas, the gradient all-reduce, bucketing and overlap, scaling efficiency.

Every GPU (every model-parallel rank of a replica) holds the whole model, runs
its own slice of the batch forward and backward, and then the replicas sum
their gradients with an **all-reduce** so that every copy takes the same
optimizer step. This module counts what that all-reduce costs and how much of
it the backward pass hides.

Sources
-------
* Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data
  Parallel Training" (VLDB 13(12), arXiv 2006.15704), Sec. 3.2 and 4.2:
  gradients are grouped into **buckets** (``bucket_cap_mb = 25``, i.e. 25 MiB,
  in ``torch.nn.parallel.DistributedDataParallel``); a bucket is all-reduced
  as soon as all its gradients are ready, so communication overlaps the rest
  of the backward pass. Tiny buckets pay the per-collective latency many
  times; one huge bucket cannot start before the backward pass ends.
* Communication times come from :mod:`scaleout.collectives` (α-β model: ring,
  tree, hierarchical all-reduce), links from ``data/links.toml``.
* Compute: PaLM (Chowdhery et al. 2022, arXiv 2204.02311, App. B) FLOPs per
  token, :func:`scaleout.compute.flops_per_token`; the backward pass is two
  of its three matrix-multiply passes (Kaplan et al. 2020, arXiv 2001.08361,
  Sec. 2.1: forward ``2N``, backward ``4N`` FLOPs per token).
* Memory: :func:`scaleout.memory.training_memory` (ZeRO Sec. 3.1: plain data
  parallelism keeps all 16 bytes per parameter on every GPU).

Weak scaling: every GPU keeps the same batch, so ``n`` GPUs ideally do ``n``
times the work per step in the same time. The **scaling efficiency** is the
one-GPU step time over the ``n``-GPU step time, ``compute / (compute + exposed
communication)``; ``n × efficiency`` is how many GPUs' worth of throughput the
cluster delivers.

Taught in ``notebooks/03_data_parallelism.ipynb``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import catalog, compute, memory
from .catalog import ModelSpec
from .checks import (
    MAX_TOKENS,
    MAX_WORK,
    check_array,
    check_bool,
    check_int,
    check_positive,
    check_work,
)
from .collectives import NodeNetwork
from .units import MIB

__all__ = [
    "ACHIEVED_TFLOPS",
    "BACKWARD_FRACTION",
    "DDP_BUCKET_BYTES",
    "BucketTimeline",
    "DPStep",
    "Fabric",
    "bucket_timeline",
    "bucketed_all_reduce_time",
    "compute_time",
    "dp_step",
    "exposed_comm_time",
    "gradient_all_reduce_time",
    "gradient_bytes",
    "n_buckets",
    "weak_scaling",
]

#: PyTorch DDP's default bucket: ``bucket_cap_mb=25`` is 25 MiB (Li et al. 2020, Sec. 4.2;
#: ``torch.nn.parallel.DistributedDataParallel``, which multiplies by 1024 * 1024).
DDP_BUCKET_BYTES = 25 * MIB

#: Share of a step's matrix-multiply FLOPs in the backward pass: 4N of 6N per token
#: (Kaplan et al. 2020, Sec. 2.1; PaLM App. B). Gradients appear during this part only.
BACKWARD_FRACTION = 2 / 3

#: A default achieved rate per GPU, TFLOP/s: Llama 3 405B trained at 380-430 TFLOP/s per
#: H100 in BF16 (Llama Team 2024, arXiv 2407.21783, Table 4), about 40% of the 989 peak.
ACHIEVED_TFLOPS = 400.0

#: The per-node network of earlier versions; the class is :class:`scaleout.collectives.NodeNetwork`.
Fabric = NodeNetwork


# =========================================================================== gradients
def gradient_bytes(params, recipe: str | memory.PrecisionRecipe = "mixed-adam"):
    """Bytes of gradients one GPU all-reduces per step: ``params × grad bytes of the recipe``.

    ``params`` are the parameters one model-parallel rank holds
    (:func:`scaleout.memory.stage_params`; the whole model without tensor or
    pipeline parallelism). Mixed-precision Adam keeps fp16/bf16 gradients,
    2 bytes each (ZeRO Sec. 3.1); Megatron-LM's bf16 recipe reduces fp32
    gradients, 4 bytes (:data:`scaleout.memory.RECIPES`). Array-friendly.
    """
    p = check_array("params", params, allow_zero=False)
    out = p * memory.get_recipe(recipe).grad_bytes
    return float(out) if out.ndim == 0 else out


def gradient_all_reduce_time(grad_bytes, n_gpus: int, fabric: NodeNetwork | None = None):
    """Seconds to all-reduce ``grad_bytes`` of gradients over ``n_gpus`` replicas (one bucket).

    Ring inside a node; across nodes hierarchical or flat as the
    :class:`NodeNetwork` says (:func:`scaleout.collectives.collective_time`,
    :func:`~scaleout.collectives.hierarchical_all_reduce_time`). A ring moves
    ``2(n−1)/n`` of the gradients per GPU: almost twice the gradients whatever
    ``n`` is, while its latency term ``2(n−1)α`` grows with ``n``.
    """
    grad_bytes = check_array("grad_bytes", grad_bytes)
    out = (fabric or NodeNetwork()).time("all_reduce", grad_bytes, n_gpus, name="n_gpus")
    return float(out) if np.ndim(out) == 0 else out


# =========================================================================== buckets
def _grad_and_bucket(grad_bytes, bucket_bytes):
    G = check_array("grad_bytes", grad_bytes, allow_zero=False)
    B = check_array("bucket_bytes", bucket_bytes, allow_zero=False)
    B = np.minimum(B, G)  # a bucket larger than the gradients holds them all
    return G, B


def n_buckets(grad_bytes, bucket_bytes):
    """Buckets of at most ``bucket_bytes``: ``ceil(grad_bytes / bucket_bytes)``. Array-friendly."""
    G, B = _grad_and_bucket(grad_bytes, bucket_bytes)
    k = np.ceil(G / B * (1 - 1e-12))
    return int(k) if k.ndim == 0 else k.astype(int)


def _bucket_parts(grad_bytes, bucket_bytes, n_gpus, fabric):
    """(k, full-bucket time, last-bucket time, bucket size): equal buckets and a remainder.

    One fabric call for both sizes when they are scalars (the common case).
    """
    G, B = _grad_and_bucket(grad_bytes, bucket_bytes)
    k = np.ceil(G / B * (1 - 1e-12))
    last = G - (k - 1) * B
    f = fabric or NodeNetwork()
    if np.ndim(k) == 0:
        full_s, last_s = np.asarray(f.time("all_reduce", np.array([B, last]), n_gpus,
                                           name="n_gpus"))
    else:
        full_s = np.asarray(f.time("all_reduce", B, n_gpus, name="n_gpus"))
        last_s = np.asarray(f.time("all_reduce", last, n_gpus, name="n_gpus"))
    return k, full_s, last_s, B


def _schedule(k, full_s, last_s, backward_s, delta_s, overlap: bool):
    """(all bucket all-reduces, exposed part) of the one-stream bucket schedule (array kernel).

    See :func:`exposed_comm_time` for the derivation.
    """
    comm = (k - 1) * full_s + last_s
    if not overlap:
        return comm, comm
    end_prev = delta_s + np.maximum(k - 2, 0) * np.maximum(delta_s, full_s) + full_s
    return comm, np.where(k > 1, np.maximum(0.0, end_prev - backward_s), 0.0) + last_s


def bucketed_all_reduce_time(grad_bytes, bucket_bytes, n_gpus: int,
                             fabric: NodeNetwork | None = None):
    """Total seconds of all bucket all-reduces, one after another: ``(k−1)·T(B) + T(last)``.

    ``k = ceil(G/B)`` buckets of ``B`` bytes (the last holds the remainder),
    each a separate collective that pays the full latency term (Li et al.
    2020, Sec. 3.2.3). Array-friendly in ``grad_bytes`` and ``bucket_bytes``.
    """
    k, full, last, _ = _bucket_parts(grad_bytes, bucket_bytes, n_gpus, fabric)
    out, _ = _schedule(k, full, last, 0.0, 0.0, overlap=False)
    return float(out) if np.ndim(out) == 0 else out


def exposed_comm_time(grad_bytes, bucket_bytes, backward_s, n_gpus: int,
                      fabric: NodeNetwork | None = None, overlap: bool = True):
    """Seconds of gradient communication the backward pass does NOT hide.

    Model (Li et al. 2020, Sec. 3.2.3 and Fig. 3): gradients appear at a steady
    rate during a backward pass of ``backward_s`` seconds; a bucket of ``B``
    bytes is ready every ``Δ = backward_s · B/G`` and is all-reduced (in
    ``c = T(B)``) as soon as it is ready and the previous bucket is done; the
    last bucket (``c_last``) is ready when the backward pass ends. Then

    ``exposed = max(0, end of bucket k−1 − backward_s) + c_last``,
    ``end of bucket k−1 = Δ + (k−2)·max(Δ, c) + c``,

    i.e. ``max(0, comm of the first k−1 buckets − backward time left after the
    first bucket) + c_last`` when communication is the slower of the two.
    Without overlap every bucket waits for the end of the backward pass:
    ``exposed = (k−1)·c + c_last``. Array-friendly in the sizes and
    ``backward_s``; :func:`bucket_timeline` simulates the same schedule bucket
    by bucket.
    """
    check_bool("overlap", overlap)
    back = check_array("backward_s", backward_s)
    k, full, last, B = _bucket_parts(grad_bytes, bucket_bytes, n_gpus, fabric)
    delta = back * B / np.asarray(grad_bytes, dtype=float)
    _, out = _schedule(k, full, last, back, delta, overlap)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class BucketTimeline:
    """One step's backward pass and bucket all-reduces, bucket by bucket (seconds from its start).

    ``ready_s[i]`` is when bucket ``i``'s gradients are all computed,
    ``start_s[i]``/``end_s[i]`` its all-reduce on the communication stream.
    """

    backward_s: float
    sizes_bytes: np.ndarray
    ready_s: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray

    @property
    def exposed_s(self) -> float:
        """Communication after the backward pass ends: ``end of the last bucket − backward_s``."""
        return float(self.end_s[-1] - self.backward_s)

    @property
    def comm_s(self) -> float:
        """Busy time of the communication stream (sum of all bucket all-reduces)."""
        return float(np.sum(self.end_s - self.start_s))


def bucket_timeline(grad_bytes: float, bucket_bytes: float, backward_s: float, n_gpus: int,
                    fabric: NodeNetwork | None = None, overlap: bool = True) -> BucketTimeline:
    """The schedule of :func:`exposed_comm_time`, simulated bucket by bucket (for figures).

    Bucket ``i`` is ready at ``backward_s × (bytes in buckets 1..i) / G`` and
    starts at ``max(ready, end of bucket i−1)`` (one communication stream, as
    in PyTorch DDP; Li et al. 2020, Sec. 3.2.3); without overlap no bucket
    starts before ``backward_s``.
    """
    check_bool("overlap", overlap)
    G = check_positive("grad_bytes", grad_bytes)
    B = min(check_positive("bucket_bytes", bucket_bytes), G)
    back = check_positive("backward_s", backward_s, allow_zero=True)
    k = n_buckets(G, B)
    check_work(f"a timeline of {k:,} buckets (grad_bytes / bucket_bytes)", k,
               "use larger buckets", limit=MAX_WORK // 100)
    sizes = np.full(k, B)
    sizes[-1] = G - (k - 1) * B
    comm = np.asarray((fabric or NodeNetwork()).time("all_reduce", sizes, n_gpus, name="n_gpus"),
                      dtype=float)
    ready = back * np.cumsum(sizes) / G
    ready[-1] = back
    start, end = np.empty(k), np.empty(k)
    free = 0.0 if overlap else back
    for i in range(k):
        start[i] = max(ready[i], free)
        end[i] = start[i] + comm[i]
        free = end[i]
    return BucketTimeline(back, sizes, ready, start, end)


# =========================================================================== step time
def compute_time(model: str | ModelSpec, tokens_per_gpu, achieved_tflops: float = ACHIEVED_TFLOPS,
                 seq_len: int | None = None, model_parallel: int = 1):
    """Seconds of forward + backward compute for ``tokens_per_gpu`` tokens on one GPU.

    :func:`scaleout.compute.flops_per_token` (PaLM App. B: ``6N + 12 l h s``)
    times the tokens, over the achieved FLOP/s (a measured rate, not the
    datasheet peak; see :data:`ACHIEVED_TFLOPS`), divided by the GPUs that
    share one replica (``model_parallel = tp × pp``). Array-friendly in
    ``tokens_per_gpu``.
    """
    rate = check_positive("achieved_tflops", achieved_tflops) * 1e12
    mp = check_int("model_parallel", model_parallel)
    tokens = check_array("tokens_per_gpu", tokens_per_gpu, allow_zero=False, maximum=MAX_TOKENS)
    out = compute.flops_per_token(model, seq_len) * tokens / mp / rate
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class DPStep:
    """One data-parallel training step on one GPU (seconds, bytes)."""

    n_gpus: int
    grad_bytes: float
    n_buckets: int
    compute_s: float
    backward_s: float
    comm_s: float
    exposed_comm_s: float

    @property
    def step_s(self) -> float:
        """Compute plus the communication the backward pass did not hide."""
        return self.compute_s + self.exposed_comm_s

    @property
    def efficiency(self) -> float:
        """Weak-scaling efficiency: one-GPU step time (compute only) over this step time."""
        return self.compute_s / self.step_s

    @property
    def effective_gpus(self) -> float:
        """``n_gpus × efficiency``: how many GPUs' worth of throughput the cluster delivers."""
        return self.n_gpus * self.efficiency


def _step_parts(model, batch_per_gpu, seq_len, achieved_tflops, recipe, tp, pp):
    """(model spec, gradient bytes, compute seconds) of one replica: what does not depend on n."""
    b = check_int("batch_per_gpu", batch_per_gpu)
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    tp, pp = check_int("tp", tp), check_int("pp", pp)
    grads = gradient_bytes(memory.stage_params(m, tp, pp), recipe)
    return m, grads, compute_time(m, b * s, achieved_tflops, s, tp * pp)


def _comm(grads: float, bucket_bytes, backward_s: float, n: int, fabric: NodeNetwork,
          overlap: bool):
    """(buckets, all-reduce seconds of all buckets, exposed seconds) for one GPU count."""
    k, full, last, B = _bucket_parts(grads, bucket_bytes, n, fabric)
    comm, exposed = _schedule(k, full, last, backward_s, backward_s * B / grads, overlap)
    return int(k), float(comm), float(exposed)


def dp_step(
    model: str | ModelSpec,
    n_gpus: int,
    *,
    batch_per_gpu: int = 8,
    seq_len: int | None = None,
    achieved_tflops: float = ACHIEVED_TFLOPS,
    fabric: NodeNetwork | None = None,
    bucket_bytes: float = DDP_BUCKET_BYTES,
    overlap: bool = True,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tp: int = 1,
    pp: int = 1,
) -> DPStep:
    """A data-parallel step: compute, gradient all-reduce, and what of it stays exposed.

    * compute: :func:`compute_time` for ``batch_per_gpu × seq_len`` tokens in
      one micro-batch (no gradient accumulation: with it, only the last
      micro-batch's backward pass could hide the all-reduce); the backward
      pass is :data:`BACKWARD_FRACTION` of it;
    * gradients: :func:`gradient_bytes` of one model-parallel rank
      (:func:`scaleout.memory.stage_params` with ``tp``, ``pp``);
    * communication: ``n_gpus`` replicas (one per model-parallel rank group)
      all-reduce in buckets of ``bucket_bytes`` on ``fabric``
      (:func:`bucketed_all_reduce_time`, :func:`exposed_comm_time`).

    Weak scaling: ``batch_per_gpu`` stays fixed as ``n_gpus`` grows.
    """
    check_bool("overlap", overlap)
    n_gpus = check_int("n_gpus", n_gpus)
    _, grads, comp = _step_parts(model, batch_per_gpu, seq_len, achieved_tflops, recipe, tp, pp)
    back = comp * BACKWARD_FRACTION
    k, comm, exposed = _comm(grads, bucket_bytes, back, n_gpus, fabric or NodeNetwork(), overlap)
    return DPStep(n_gpus=n_gpus, grad_bytes=grads, n_buckets=k, compute_s=comp,
                  backward_s=back, comm_s=comm, exposed_comm_s=exposed)


def weak_scaling(
    model: str | ModelSpec,
    n_gpus: Sequence[int],
    *,
    batch_per_gpu: int = 8,
    seq_len: int | None = None,
    achieved_tflops: float = ACHIEVED_TFLOPS,
    fabric: NodeNetwork | None = None,
    bucket_bytes: float = DDP_BUCKET_BYTES,
    overlap: bool = True,
    recipe: str | memory.PrecisionRecipe = "mixed-adam",
    tp: int = 1,
    pp: int = 1,
) -> dict[str, np.ndarray]:
    """:func:`dp_step` for each GPU count (same keywords), as arrays.

    Keys: ``n_gpus``, ``efficiency``, ``effective_gpus`` (``n × efficiency``),
    ``step_s``, ``exposed_comm_s``, ``comm_s``, ``compute_s``.
    """
    check_bool("overlap", overlap)
    _, grads, comp = _step_parts(model, batch_per_gpu, seq_len, achieved_tflops, recipe, tp, pp)
    back = comp * BACKWARD_FRACTION
    fab = fabric or NodeNetwork()
    if isinstance(n_gpus, str | bytes) or np.ndim(n_gpus) != 1 or len(n_gpus) == 0:
        raise ValueError(f"n_gpus must be a non-empty list of GPU counts, got {n_gpus!r}")
    ns = np.array([check_int("n_gpus", n) for n in n_gpus])
    parts = np.array([_comm(grads, bucket_bytes, back, int(n), fab, overlap)[1:] for n in ns])
    comm, exposed = parts[:, 0], parts[:, 1]
    step = comp + exposed
    return {
        "n_gpus": ns,
        "efficiency": comp / step,
        "effective_gpus": ns * comp / step,
        "step_s": step,
        "exposed_comm_s": exposed,
        "comm_s": comm,
        "compute_s": np.full(len(ns), comp),
    }
