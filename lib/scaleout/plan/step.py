"""The model of one training iteration: memory per GPU and seconds, for many layouts at once.

Every function takes the :class:`Context` (model, GPU, network, calibration, recipe, sequence,
batch, framework) and arrays of layouts (one entry per layout), and returns named arrays whose
keys carry their unit (``_bytes``, ``_s``). :func:`iteration` runs them in order: compute,
tensor-parallel communication, the pipeline stages' layers, memory, the pipeline's time,
data-parallel communication, optimizer. The busiest pipeline stage sets the pace;
``m = B / (dp b)`` micro-batches per replica.

* **Compute**: FLOPs of :func:`scaleout.compute.forward_flops` (PaLM App. B) divided by
  ``tp``, at ``η(x) × peak`` with ``x = min(h/tp, b s)`` (Narayanan et al. 2021 Sec. 3.3:
  thin shards run slower); memory-bound work as ``κ`` times the stored activation bytes at
  HBM bandwidth; recomputation (Korthikanti et al. 2022 Sec. 5).
* **Tensor-parallel communication**: four all-reduces of ``2bsh`` bytes per layer per
  micro-batch (six with full recomputation; Narayanan et al. 2021 Sec. 3.3, Korthikanti
  Sec. 4.2.2); exposed, or only beyond the GEMMs they are pipelined with
  (:attr:`Framework.tp_overlap`).
* **Stages**: layers split evenly when ``pp`` divides them; otherwise (``uneven_layers``) the
  split that makes the busiest stage fastest, the last stage also running the output layer
  (Megatron-Core's ``decoder_first/last_pipeline_num_layers``; Llama 3 gave its first and last
  stages one layer fewer).
* **Memory** (:mod:`scaleout.memory`): ZeRO model state and Korthikanti et al. Table 2
  activations for the micro-batches each stage holds, for the first and the last stage (the
  larger counts); plus :data:`RESERVE`: what a real run keeps besides (CUDA context, NCCL
  buffers, the allocator's slack, the fp32 logits of the loss, ZeRO-3's gathered layers).
* **Pipeline**: the bubble, ``(pp − 1)/v`` of an average stage's micro-batch time (Narayanan
  et al. 2021 Sec. 2.2); sends of ``2bsh/tp`` bytes, two per micro-batch per chunk
  (scatter/gather, Sec. 4.1), all exposed or one micro-batch's (:attr:`Framework.p2p_overlap`).
* **Data parallelism and ZeRO**, as the framework issues them (:mod:`scaleout.plan.frameworks`):
  gradients reduced in buckets, during the last backward pass where it overlaps; ZeRO-1/2's
  weights gathered after the step, during the next forward where it overlaps; ZeRO-3's
  weights gathered unit by unit (layer or tensor) for every micro-batch's forward and backward,
  the next unit prefetched while the current one computes, and gradients reduce-scattered per
  layer. Hybrid sharding (a plan's ``zero_shard``; Zhao et al. 2023 Sec. 3.2.2) runs those
  collectives inside each shard group and all-reduces the gradients' shards across the
  groups. Each call costs what NCCL's model predicts (:mod:`scaleout.nccl`), its latency
  included: a flat ring over many GPUs pays it at every step.
* **Optimizer**: Adam reads and writes its state once, memory-bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import catalog, compute, memory, pipeline
from ..catalog import GPU, ModelSpec
from ..checks import check_int, check_positive
from ..collectives import NodeNetwork
from ..units import GIB
from .calibration import DEFAULT_CALIBRATION, Calibration
from .frameworks import Framework, framework
from .network import (
    CollectiveModel,
    collective_model,
    default_network,
    derated_links,
    dp_ranks_per_node,
)

__all__ = [
    "ACTIVATION_BYTES",
    "ADAM_TRAFFIC_BYTES_PER_PARAM",
    "MEMORY_PARTS",
    "RESERVE",
    "STEP_PARTS",
    "TIGHT_SHARE",
    "Context",
    "compute_parts",
    "context",
    "data_parallel_parts",
    "iteration",
    "memory_parts",
    "optimizer_parts",
    "pipeline_parts",
    "stage_split",
    "tensor_parallel_parts",
]

#: Bytes per activation value sent between GPUs: 16-bit, as Korthikanti et al.'s Table 2 assumes.
ACTIVATION_BYTES = 2
#: HBM traffic of one Adam step, bytes per parameter: read fp32 master, momentum, variance and
#: the 16-bit gradient (4 + 4 + 4 + 2), write the three states and the 16-bit weight (12 + 2).
#: The 16 bytes per parameter of ZeRO Sec. 3.1, each moved once or twice.
ADAM_TRAFFIC_BYTES_PER_PARAM = 28
#: The parts of an iteration's time, in seconds (array keys add ``_s``).
STEP_PARTS = ("forward", "backward", "recompute", "tp_comm", "bubble", "p2p", "dp_comm",
              "optimizer")
#: The parts of a GPU's memory, in bytes (array keys add ``_bytes``).
MEMORY_PARTS = ("weights", "grads", "optimizer", "activations", "reserve")
#: A plan above this share of HBM is flagged as tight: fragmentation and peaks the model does
#: not see can push it over.
TIGHT_SHARE = 0.9
#: What a run holds besides model state and activations, per GPU. Each is a documented estimate,
#: not a fit: ``context_gib``, the CUDA context and the libraries' workspaces (PyTorch's CUDA
#: semantics notes: "the CUDA context ... takes a few hundred MB"; cuBLAS workspaces);
#: ``nccl_gib``, NCCL's buffers (NCCL_BUFFSIZE 4 MiB per channel and peer, for the few
#: communicators a 3D layout opens); ``allocator_share``, the PyTorch caching allocator's slack,
#: reserved but not allocated (the reserved-over-allocated ratio torchtitan's and Megatron's
#: memory logs show); ``logits_bytes``, the loss's fp32 logits and their gradient on the last
#: stage (Megatron's vocab-parallel cross entropy, ``2 × 4 × b s V / tp``).
RESERVE = {"context_gib": 0.75, "nccl_gib": 1.0, "allocator_share": 0.05, "logits_bytes": 8}


@dataclass(frozen=True)
class Context:
    """Everything a plan's time and memory depend on besides the plan itself."""

    model: ModelSpec
    gpu: GPU
    network: NodeNetwork
    calibration: Calibration
    recipe: memory.PrecisionRecipe
    seq_len: int
    global_batch: int
    framework: Framework
    collectives: CollectiveModel
    parts: dict[str, int]
    tensors: tuple[int, ...]
    reserve_bytes: float = (RESERVE["context_gib"] + RESERVE["nccl_gib"]) * GIB


def context(model, gpu, network, calibration, recipe, seq_len, global_batch,
            framework_spec=None, switches=None, reserve_gib=None) -> Context:
    """A :class:`Context`, every argument checked (defaults: the GPU's usual network, the
    shipped calibration, the model's sequence length, :data:`~scaleout.plan.frameworks.
    DEFAULT_FRAMEWORK` with all its switches, :data:`RESERVE`'s CUDA context and NCCL
    buffers as the fixed reserve)."""
    m = catalog.model(model)
    if m.is_moe:
        raise ValueError(f"model={m.name!r} is a mixture-of-experts model ({m.experts} experts, "
                         f"top-{m.top_k}): the planner models dense layers only and would "
                         "count every expert's FLOPs; scaleout.moe.step_estimate estimates "
                         "its step (notebook 13)")
    g = catalog.gpu(gpu)
    net = network if network is not None else default_network(g)
    if not isinstance(net, NodeNetwork):
        raise ValueError(f"network must be a scaleout.collectives.NodeNetwork, got {net!r}")
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    fw = framework(framework_spec, switches)
    fixed = (RESERVE["context_gib"] + RESERVE["nccl_gib"]) * GIB
    if reserve_gib is not None:
        fixed = check_positive("reserve_gib", reserve_gib, allow_zero=True) * GIB
        if fixed >= g.hbm_bytes:
            raise ValueError(f"reserve_gib={reserve_gib!r} leaves nothing of the "
                             f"{g.hbm_gib:g} GiB of {g.name}; allowed: 0 <= reserve_gib < "
                             f"{g.hbm_gib:g}")
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    links = derated_links(net, cal.collective_efficiency)
    return Context(m, g, net, cal, memory.get_recipe(recipe), s,
                   check_int("global_batch", global_batch), fw,
                   collective_model(net, links, g, fw.collectives == "nccl"),
                   memory.param_breakdown(m), memory.layer_tensors(m), fixed)


@dataclass(frozen=True)
class _Shape:
    """The per-layout quantities every part needs (arrays), computed once."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    b: np.ndarray
    v: np.ndarray
    zero_stage: np.ndarray
    shard: np.ndarray
    sp: np.ndarray
    rc: np.ndarray
    flash: np.ndarray
    micro_batches: np.ndarray
    tokens: np.ndarray


def _shape(ctx: Context, a: dict[str, np.ndarray]) -> _Shape:
    tp, pp, dp, b, v, zero_stage, rc = (np.asarray(a[k]) for k in (
        "tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "rc"))
    shard = np.asarray(a.get("zero_shard", dp))
    shard = np.where(shard == 0, dp, shard)
    return _Shape(tp, pp, dp, b, v, zero_stage, shard, np.asarray(a["sp"], dtype=bool), rc,
                  np.asarray(a["flash"], dtype=bool), ctx.global_batch // (dp * b),
                  b * float(ctx.seq_len))


def _activations_per_layer(ctx: Context, x: _Shape, rc) -> np.ndarray:
    m, s = ctx.model, float(ctx.seq_len)
    return memory.activation_per_layer_arrays(
        s, x.b, m.hidden, m.n_heads, x.tp, x.sp, rc, x.flash, m.kv_heads / m.n_heads,
        m.ffn / m.hidden, m.gated_mlp)


# =========================================================================== compute
def compute_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Seconds of one layer's forward pass (and the part of it in GEMMs), its recomputation,
    and the output layer's forward + backward, for one micro-batch on one GPU."""
    m, g, cal, s = ctx.model, ctx.gpu, ctx.calibration, float(ctx.seq_len)
    h, a = m.hidden, m.n_heads
    rate = cal.matmul_efficiency(np.minimum(h / x.tp, x.tokens)) * g.bf16_dense_flops
    layer_params = ctx.parts["layers"] / m.n_layers
    dense = compute.forward_flops(x.tokens, layer_params, 0, h, s)  # one layer's matrices
    attention = compute.forward_flops(x.tokens, 0, 1, h, s)  # Q K^T and A V: 4 b s^2 h
    head = compute.forward_flops(x.tokens, ctx.parts["embedding"], 0, h, s)  # output layer
    stored = _activations_per_layer(ctx, x, 0)
    hbm = g.hbm_gbytes_s * 1e9
    mem_s = cal.nonmatmul_traffic * stored / hbm  # forward + backward, one layer
    gemm = dense / x.tp / rate
    fwd_layer = gemm + attention / x.tp / rate + mem_s / 3
    scores = np.where(x.flash, 0.0, 5 * a * s * s * x.b / x.tp)  # Korthikanti's 5as^2b bytes
    selective = np.where(x.flash, 0.0, attention / x.tp / rate + cal.nonmatmul_traffic * scores
                         / hbm / 3)
    rec_layer = np.where(x.rc == 2, fwd_layer, np.where(x.rc == 1, selective, 0.0))
    head_s = 3 * head / x.tp / rate  # forward + backward of the output layer, last stage
    return {"layer_forward_s": fwd_layer, "layer_gemm_s": gemm, "layer_recompute_s": rec_layer,
            "head_s": head_s}


def tensor_parallel_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    """Seconds of one layer's tensor-parallel all-reduces for one micro-batch: four of
    ``2bsh`` bytes (six with full recomputation), and the part of them left exposed."""
    tp_bytes = ACTIVATION_BYTES * x.tokens * ctx.model.hidden * np.ones_like(x.tp, dtype=float)
    per_node_tp = np.minimum(x.tp, ctx.network.gpus_per_node)
    one = ctx.collectives.seconds("all_reduce", tp_bytes, x.tp, per_node_tp)
    total = (4 + 2 * (x.rc == 2)) * one
    if ctx.framework.tp_overlap:
        # pipelined with the layer's GEMMs (forward, backward twice): only the excess shows
        exposed = np.where(x.tp > 1, np.maximum(total - 3 * c["layer_gemm_s"], 0.0), 0.0)
    else:
        exposed = total
    return {"layer_tp_comm_s": exposed}


# =========================================================================== stages
def stage_split(ctx: Context, x: _Shape, per_layer: np.ndarray, head_s: np.ndarray,
                uneven: bool) -> dict[str, np.ndarray]:
    """Layers on the first (and every middle) stage, on the last, and the busiest stage's time
    per micro-batch.

    ``pp`` dividing the layers: an even split, the last stage also running the output layer
    (Megatron-LM's default). Otherwise, with ``uneven``: the last stage takes ``L`` layers and
    the output layer, the other ``pp - 1`` stages share the rest as evenly as whole layers
    allow (at most ``k = ceil((l - L)/(pp - 1))`` each), ``L`` chosen to make the busiest
    stage fastest (it may be 0: the last stage then runs the output layer alone, as Llama 3's
    last chunk does). One stage (``pp = 1``) holds everything.
    """
    l = ctx.model.n_layers
    pp = x.pp.astype(float)
    even = (l % x.pp == 0) | (not uneven) | (x.pp == 1)
    k_even = l / pp
    ratio = np.divide(head_s, per_layer, out=np.zeros_like(head_s), where=per_layer > 0)
    others = np.maximum(pp - 1, 1)
    balance = (l - (pp - 1) * ratio) / pp  # the real L at which both sides take equally long
    best_l = np.full(pp.shape, np.nan)
    best_t = np.full(pp.shape, np.inf)
    for shift in (-1, 0, 1, 2):
        last = np.clip(np.floor(balance) + shift, 0, np.maximum(l - (pp - 1), 0))
        k = np.ceil((l - last) / others)
        t = np.maximum(k * per_layer, last * per_layer + head_s)
        better = t < best_t
        best_l = np.where(better, last, best_l)
        best_t = np.where(better, t, best_t)
    last = np.where(even, k_even, best_l)
    k = np.where(even, k_even, np.ceil((l - best_l) / others))
    busiest = np.where(x.pp == 1, l * per_layer + head_s,
                       np.maximum(k * per_layer, last * per_layer + head_s))
    return {"first_layers": k, "last_layers": last, "busiest_s": busiest,
            "last_is_busiest": last * per_layer + head_s >= k * per_layer}


# =========================================================================== memory
def memory_parts(ctx: Context, x: _Shape, st: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bytes per GPU of the first and last stage (the larger counts): ZeRO model state of its
    parameters, activations of the micro-batches it holds, and :data:`RESERVE`."""
    m, fw = ctx.model, ctx.framework
    act = _activations_per_layer(ctx, x, x.rc)
    out = {}
    for which, layers in (("first", st["first_layers"]), ("last", st["last_layers"])):
        params = memory.stage_params_arrays(ctx.parts, m.n_layers, m.tied_embeddings, x.tp,
                                            x.pp, st["first_layers"], st["last_layers"],
                                            which=which)
        w, g, o = memory.model_state_arrays(params, x.zero_stage, x.shard, ctx.recipe)
        stage = 0 if which == "first" else x.pp - 1
        flight = np.where(x.pp > 1, pipeline.in_flight_arrays(x.pp, x.micro_batches, x.v,
                                                              stage), 1.0)
        a = act * layers * flight
        extra = np.zeros_like(a)
        if which == "last":  # the loss's fp32 logits and their gradient, vocab-parallel
            extra = RESERVE["logits_bytes"] * x.tokens * m.vocab / x.tp
        # ZeRO-3 keeps the unit being computed and the prefetched ones whole
        unit = ctx.parts["layers"] / m.n_layers / x.tp * ctx.recipe.weight_bytes
        extra = extra + np.where(x.zero_stage == 3, (fw.zero3_prefetch + 1) * unit, 0.0)
        held = w + g + o + a
        reserve = ctx.reserve_bytes + RESERVE["allocator_share"] * held + extra
        out[which] = (w, g, o, a, reserve, params, flight)
    first_total = sum(out["first"][:5])
    last_total = sum(out["last"][:5])
    pick_last = last_total > first_total
    w, g, o, a, reserve, params, flight = (np.where(pick_last, lv, fv) for fv, lv in zip(
        out["first"], out["last"], strict=True))
    return {"weights_bytes": w, "grads_bytes": g, "optimizer_bytes": o,
            "activations_bytes": a, "reserve_bytes": reserve,
            "memory_bytes": w + g + o + a + reserve,
            "capacity_bytes": np.full(np.shape(w), ctx.gpu.hbm_bytes),
            "first_stage_bytes": first_total, "last_stage_bytes": last_total,
            "params_per_gpu": np.maximum(out["first"][5], out["last"][5]),
            "in_flight": flight}


# =========================================================================== pipeline
def pipeline_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray],
                   t: dict[str, np.ndarray], st: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Seconds of the busiest stage's ``m`` micro-batches by part, the bubble and the sends."""
    fwd, rec, head = c["layer_forward_s"], c["layer_recompute_s"], c["head_s"]
    tp_layer = t["layer_tp_comm_s"]
    n_mb = x.micro_batches
    per_layer = 3 * fwd + rec + tp_layer  # forward, backward (2x), recompute, TP
    l = ctx.model.n_layers
    average = (l * per_layer + head) / x.pp
    layers = np.where(st["last_is_busiest"], st["last_layers"], st["first_layers"])
    head_on = np.where(st["last_is_busiest"], 1.0, 0.0)
    send_bytes = ACTIVATION_BYTES * x.tokens * ctx.model.hidden / x.tp
    links, gpn = ctx.collectives.links, ctx.network.gpus_per_node
    across = x.tp * x.dp >= gpn  # consecutive stages sit on different nodes
    link_bw = np.where(across, links.inter.bandwidth_bytes_s, links.intra.bandwidth_bytes_s)
    link_lat = np.where(across, links.inter.latency_s, links.intra.latency_s)
    sends = 2 * x.v * n_mb * (link_lat + send_bytes / link_bw)
    if ctx.framework.p2p_overlap:
        sends = sends / n_mb  # one micro-batch's sends stay on the critical path
    return {
        "forward_s": n_mb * layers * fwd + n_mb * head_on * head / 3,
        "backward_s": n_mb * 2 * layers * fwd + n_mb * head_on * head * 2 / 3,
        "recompute_s": n_mb * layers * rec,
        "tp_comm_s": n_mb * layers * tp_layer,
        "bubble_s": (x.pp - 1) / x.v * average,
        "p2p_s": np.where(x.pp > 1, sends, 0.0),
    }


# =========================================================================== data parallelism
def _bucketed(total_s_of, size: np.ndarray, bucket: float | None, window: np.ndarray | None
              ) -> np.ndarray:
    """Exposed seconds of a collective over ``size`` bytes issued in buckets of ``bucket``
    bytes, the buckets becoming ready evenly over ``window`` seconds of compute (None: after
    it). Bucket ``i`` of ``k`` is ready at ``window · i/k`` and the calls run one after
    another, so what shows after the window is ``max(t, k t - window (k-1)/k)`` for ``k``
    buckets of ``t`` seconds each (Li et al. 2020, PyTorch DDP, Sec. 3.2.3)."""
    k = np.ones_like(size) if not bucket else np.maximum(np.ceil(size / bucket), 1.0)
    each = total_s_of(size / k)
    if window is None:
        return k * each
    return np.maximum(each, k * each - window * (k - 1) / k)


def _prefetched(units: np.ndarray, comp: np.ndarray, comm: np.ndarray, prefetch: int
                ) -> np.ndarray:
    """Seconds for ``units`` identical units of ``comp`` compute each needing ``comm`` of
    communication first, the communication running ahead by ``prefetch`` units on its own
    stream: ``comm + (U - 1) max(comp, comm) + comp`` (none ahead: ``U (comm + comp)``)."""
    if prefetch <= 0:
        return units * (comm + comp)
    return comm + np.maximum(units - 1, 0) * np.maximum(comp, comm) + comp


def data_parallel_parts(ctx: Context, x: _Shape, params: np.ndarray, c: dict[str, np.ndarray],
                        t: dict[str, np.ndarray], st: dict[str, np.ndarray]
                        ) -> dict[str, np.ndarray]:
    """Exposed seconds of the step's data-parallel and ZeRO collectives, as the framework
    issues them (see the module docstring)."""
    gpn = ctx.network.gpus_per_node
    per_node_dp = dp_ranks_per_node(x.dp, np.maximum(1, gpn // np.minimum(x.tp, gpn)))
    # hybrid sharding: shard groups of consecutive data-parallel ranks, replicas across them
    per_node_shard = dp_ranks_per_node(x.shard, per_node_dp)
    replicas = x.dp // x.shard
    per_node_replica = dp_ranks_per_node(replicas, np.maximum(per_node_dp // per_node_shard, 1))
    per_layer = 3 * c["layer_forward_s"] + c["layer_recompute_s"] + t["layer_tp_comm_s"]
    layers = np.where(st["last_is_busiest"], st["last_layers"], st["first_layers"])
    shape = np.shape(x.dp)
    full_arrays = {
        "dp": x.dp, "shard": x.shard, "per_node_dp": per_node_dp,
        "per_node_shard": per_node_shard, "replicas": replicas,
        "per_node_replica": per_node_replica, "tp": x.tp, "pp": x.pp,
        "micro_batches": x.micro_batches, "params": params, "per_layer": per_layer,
        "layers": layers}
    comm = np.zeros(shape)
    # each branch is priced only for the plans that take it
    for branch, mask in ((_dp_plain, (x.zero_stage == 0) & (x.dp > 1)),
                         (_dp_sharded, (x.zero_stage >= 1) & (x.zero_stage <= 2) & (x.dp > 1)),
                         (_dp_full, (x.zero_stage == 3) & (x.dp > 1))):
        idx = np.flatnonzero(np.broadcast_to(mask, shape))
        if idx.size:
            sub = {k: np.broadcast_to(v, shape).ravel()[idx] for k, v in full_arrays.items()}
            comm.ravel()[idx] = branch(ctx, sub)
    return {"dp_comm_s": comm * (1 - ctx.calibration.dp_overlap)}


def _colls(ctx: Context, a: dict[str, np.ndarray]):
    """The two ways a data-parallel collective is issued, over the plans of ``a``: over the
    whole group (``coll``), or inside the shard groups with the reduce-scatter's shard then
    all-reduced across the replicas (``sharded``; nothing added without hybrid sharding)."""
    flat = not ctx.framework.flat_dp_rings

    def coll(op: str, size: np.ndarray) -> np.ndarray:
        return ctx.collectives.seconds(op, size, a["dp"], a["per_node_dp"], node_aggregate=flat)

    hybrid = bool(np.any(a["replicas"] > 1))

    def sharded(op: str, size: np.ndarray) -> np.ndarray:
        out = ctx.collectives.seconds(op, size, a["shard"], a["per_node_shard"],
                                      node_aggregate=flat)
        if op == "reduce_scatter" and hybrid:
            out = out + ctx.collectives.seconds("all_reduce", size / a["shard"], a["replicas"],
                                                a["per_node_replica"], node_aggregate=flat)
        return out

    return coll, sharded


def _windows(ctx: Context, a: dict[str, np.ndarray]):
    """The compute a gradient reduction (the last micro-batch's backward) and a weight gather
    (the first micro-batch's forward) can hide behind, or None where the framework does not
    overlap them."""
    fw = ctx.framework
    backward = a["layers"] * a["per_layer"] * 2 / 3
    forward = a["layers"] * a["per_layer"] / 3
    return (backward if fw.grad_overlap else None), (forward if fw.param_gather_overlap else None)


def _dp_plain(ctx: Context, a: dict[str, np.ndarray]) -> np.ndarray:
    """Plain data parallelism: the gradients all-reduced in buckets."""
    coll, _ = _colls(ctx, a)
    grad_window, _ = _windows(ctx, a)
    return _bucketed(lambda s: coll("all_reduce", s), a["params"] * ctx.recipe.grad_bytes,
                     ctx.framework.grad_bucket_bytes, grad_window)


def _dp_sharded(ctx: Context, a: dict[str, np.ndarray]) -> np.ndarray:
    """ZeRO-1/2: gradients reduce-scattered in buckets, the updated weights all-gathered."""
    _, sharded = _colls(ctx, a)
    grad_window, gather_window = _windows(ctx, a)
    bucket, rec = ctx.framework.grad_bucket_bytes, ctx.recipe
    return (_bucketed(lambda s: sharded("reduce_scatter", s), a["params"] * rec.grad_bytes,
                      bucket, grad_window)
            + _bucketed(lambda s: sharded("all_gather", s), a["params"] * rec.weight_bytes,
                        bucket, gather_window))


def _dp_full(ctx: Context, a: dict[str, np.ndarray]) -> np.ndarray:
    """ZeRO-3 / FSDP: every micro-batch gathers each unit's weights before its forward and
    its backward (once, kept for the backward, under pipelining) and reduce-scatters its
    gradients; the rest of the stage (embedding, output layer) as one more unit."""
    fw, rec = ctx.framework, ctx.recipe
    _, sharded = _colls(ctx, a)
    tp, layers, per_layer = a["tp"], a["layers"], a["per_layer"]
    layer_params = ctx.parts["layers"] / ctx.model.n_layers / tp
    if fw.zero3_unit == "tensor":
        gather = sum(sharded("all_gather", np.broadcast_to(n / tp * rec.weight_bytes,
                                                           tp.shape).astype(float))
                     for n in ctx.tensors)
    else:
        gather = sharded("all_gather", layer_params * rec.weight_bytes)
    scatter = sharded("reduce_scatter", layer_params * rec.grad_bytes)
    rest = np.maximum(a["params"] - layers * layer_params, 0.0)
    rest_s = (sharded("all_gather", rest * rec.weight_bytes)
              + sharded("reduce_scatter", rest * rec.grad_bytes))
    gathers_back = np.where(a["pp"] > 1, 0.0, 1.0)  # resharded after forward only without PP
    c_f = per_layer / 3
    c_b = per_layer * 2 / 3
    fwd = _prefetched(layers, c_f, gather, fw.zero3_prefetch)
    bwd = _prefetched(layers, c_b, gathers_back * gather + scatter, fw.zero3_prefetch)
    return a["micro_batches"] * (fwd + bwd - layers * (c_f + c_b) + rest_s)


def optimizer_parts(ctx: Context, x: _Shape, params: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds of the Adam step: its state read and written once at HBM bandwidth, sharded
    over the shard group (``dp`` without hybrid sharding) from ZeRO stage 1."""
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    return {"optimizer_s": params * ADAM_TRAFFIC_BYTES_PER_PARAM
            / np.where(x.zero_stage >= 1, x.shard, 1) / hbm}


def iteration(ctx: Context, a: dict[str, np.ndarray], uneven: bool = False
              ) -> dict[str, np.ndarray]:
    """Memory per GPU and iteration time of many layouts at once.

    ``a`` holds arrays of ``tp``, ``pp``, ``dp``, ``micro_batch``, ``interleave``,
    ``zero_stage``, ``sp``, ``rc`` (:func:`scaleout.memory.recompute_code`) and ``flash``,
    and may hold ``zero_shard`` (the shard group's size; ``dp`` where absent).
    Returns the parts of :func:`memory_parts` (``*_bytes``), the :data:`STEP_PARTS` as
    ``*_s`` summing to ``step_s``, ``micro_batches``, ``first_layers`` and ``last_layers``.
    """
    x = _shape(ctx, a)
    comp = compute_parts(ctx, x)
    tp = tensor_parallel_parts(ctx, x, comp)
    per_layer = 3 * comp["layer_forward_s"] + comp["layer_recompute_s"] + tp["layer_tp_comm_s"]
    st = stage_split(ctx, x, per_layer, comp["head_s"], uneven)
    mem = memory_parts(ctx, x, st)
    pipe = pipeline_parts(ctx, x, comp, tp, st)
    dp = data_parallel_parts(ctx, x, mem["params_per_gpu"], comp, tp, st)
    opt = optimizer_parts(ctx, x, mem["params_per_gpu"])
    step = (x.micro_batches * st["busiest_s"] + pipe["bubble_s"] + pipe["p2p_s"]
            + dp["dp_comm_s"] + opt["optimizer_s"])
    return {**mem, **pipe, **dp, **opt, "step_s": step, "micro_batches": x.micro_batches,
            "first_layers": st["first_layers"], "last_layers": st["last_layers"]}
