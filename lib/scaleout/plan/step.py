"""The model of one training iteration: memory per GPU and seconds, for many layouts at once.

Every function takes the :class:`Context` (model, GPU, network, calibration, recipe,
sequence, batch) and arrays of layouts (one entry per layout), and returns named arrays whose
keys carry their unit (``_bytes``, ``_s``). :func:`iteration` runs them in order: memory,
compute, tensor-parallel communication, pipeline, data-parallel communication, optimizer.
The busiest pipeline stage sets the pace; ``m = B / (dp b)`` micro-batches per replica.

* **Memory** (:mod:`scaleout.memory`): ZeRO model state of the busiest stage's parameters
  (ZeRO Sec. 5) and Korthikanti et al. 2022 Table 2 activations for the micro-batches in
  flight (:func:`scaleout.pipeline.in_flight_arrays`).
* **Compute**: FLOPs of :func:`scaleout.compute.forward_flops` (PaLM App. B) divided by
  ``tp``, at ``η(x) × peak`` with ``x = min(h/tp, b s)`` (Narayanan et al. 2021 Sec. 3.3:
  thin shards run slower); memory-bound work as ``κ`` times the stored activation bytes at
  HBM bandwidth; recomputation (Korthikanti et al. 2022 Sec. 5).
* **Tensor-parallel communication**: four all-reduces of ``2bsh`` bytes per layer per
  micro-batch (six with full recomputation; Narayanan et al. 2021 Sec. 3.3, Korthikanti
  Sec. 4.2.2), not overlapped.
* **Pipeline**: the bubble, ``(pp − 1)/v`` of an average stage's micro-batch time
  (Narayanan et al. 2021 Sec. 2.2); sends of ``2bsh/tp`` bytes, two per micro-batch per
  chunk (scatter/gather, Sec. 4.1).
* **Data parallelism and ZeRO** (:func:`scaleout.zero.stage_collectives`), hierarchical
  across nodes; exposed but for ``Calibration.dp_overlap``.
* **Optimizer**: Adam reads and writes its state once, memory-bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import catalog, compute, memory, pipeline, zero
from ..catalog import GPU, ModelSpec
from ..checks import check_int
from ..collectives import NodeNetwork
from .calibration import DEFAULT_CALIBRATION, Calibration
from .network import Links, by_value, default_network, derated_links, dp_ranks_per_node
from .network import linear_cost as _linear_cost

__all__ = [
    "ACTIVATION_BYTES",
    "ADAM_TRAFFIC_BYTES_PER_PARAM",
    "MEMORY_PARTS",
    "STEP_PARTS",
    "Context",
    "compute_parts",
    "context",
    "data_parallel_parts",
    "iteration",
    "memory_parts",
    "optimizer_parts",
    "pipeline_parts",
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
MEMORY_PARTS = ("weights", "grads", "optimizer", "activations")


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
    links: Links
    parts: dict[str, int]


def context(model, gpu, network, calibration, recipe, seq_len, global_batch) -> Context:
    """A :class:`Context`, every argument checked (defaults: the GPU's usual network, the
    shipped calibration, the model's sequence length)."""
    m = catalog.model(model)
    g = catalog.gpu(gpu)
    net = network if network is not None else default_network(g)
    if not isinstance(net, NodeNetwork):
        raise ValueError(f"network must be a scaleout.collectives.NodeNetwork, got {net!r}")
    cal = calibration if calibration is not None else DEFAULT_CALIBRATION
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    return Context(m, g, net, cal, memory.get_recipe(recipe), s,
                   check_int("global_batch", global_batch),
                   derated_links(net, cal.collective_efficiency), memory.param_breakdown(m))


@dataclass(frozen=True)
class _Shape:
    """The per-layout quantities every part needs (arrays), computed once."""

    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    b: np.ndarray
    v: np.ndarray
    zero_stage: np.ndarray
    sp: np.ndarray
    rc: np.ndarray
    flash: np.ndarray
    micro_batches: np.ndarray
    stage_layers: np.ndarray
    avg_layers: np.ndarray
    tokens: np.ndarray


def _shape(ctx: Context, a: dict[str, np.ndarray], uneven: bool) -> _Shape:
    tp, pp, dp, b, v, zero_stage, rc = (np.asarray(a[k]) for k in (
        "tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "rc"))
    l = ctx.model.n_layers
    return _Shape(tp, pp, dp, b, v, zero_stage, np.asarray(a["sp"], dtype=bool), rc,
                  np.asarray(a["flash"], dtype=bool), ctx.global_batch // (dp * b),
                  np.ceil(l / pp) if uneven else l / pp, l / pp, b * float(ctx.seq_len))


def _activations_per_layer(ctx: Context, x: _Shape, rc) -> np.ndarray:
    m, s = ctx.model, float(ctx.seq_len)
    return memory.activation_per_layer_arrays(
        s, x.b, m.hidden, m.n_heads, x.tp, x.sp, rc, x.flash, m.kv_heads / m.n_heads,
        m.ffn / m.hidden, m.gated_mlp)


def memory_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Bytes per GPU of the busiest stage: ZeRO model state and activations in flight."""
    m = ctx.model
    params = memory.stage_params_arrays(ctx.parts, m.n_layers, m.tied_embeddings, x.tp, x.pp,
                                        x.stage_layers)
    weights, grads, optim = memory.model_state_arrays(params, x.zero_stage, x.dp, ctx.recipe)
    in_flight = np.where(x.pp > 1, pipeline.in_flight_arrays(x.pp, x.micro_batches, x.v), 1.0)
    activations = _activations_per_layer(ctx, x, x.rc) * x.stage_layers * in_flight
    return {"weights_bytes": weights, "grads_bytes": grads, "optimizer_bytes": optim,
            "activations_bytes": activations,
            "memory_bytes": weights + grads + optim + activations,
            "capacity_bytes": np.full(np.shape(weights), ctx.gpu.hbm_bytes),
            "params_per_gpu": params, "in_flight": in_flight}


def compute_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Seconds of one layer's forward pass, its recomputation, and the output layer's
    forward + backward, for one micro-batch on one GPU."""
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
    fwd_layer = (dense + attention) / x.tp / rate + mem_s / 3
    scores = np.where(x.flash, 0.0, 5 * a * s * s * x.b / x.tp)  # Korthikanti's 5as^2b bytes
    selective = np.where(x.flash, 0.0, attention / x.tp / rate + cal.nonmatmul_traffic * scores
                         / hbm / 3)
    rec_layer = np.where(x.rc == 2, fwd_layer, np.where(x.rc == 1, selective, 0.0))
    head_s = 3 * head / x.tp / rate  # forward + backward of the output layer, last stage
    return {"layer_forward_s": fwd_layer, "layer_recompute_s": rec_layer, "head_s": head_s}


def tensor_parallel_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Seconds of one layer's tensor-parallel all-reduces for one micro-batch: four of
    ``2bsh`` bytes (six with full recomputation)."""
    tp_bytes = ACTIVATION_BYTES * x.tokens * ctx.model.hidden * np.ones_like(x.tp, dtype=float)
    per_node_tp = np.minimum(x.tp, ctx.network.gpus_per_node)

    def all_reduce(t, size, per_node):
        alpha, per_byte = _linear_cost(ctx.links, "all_reduce", int(t), int(per_node[0]))
        return alpha + per_byte * size

    one = by_value(x.tp, all_reduce, tp_bytes, per_node_tp)
    return {"layer_tp_comm_s": (4 + 2 * (x.rc == 2)) * one}


def pipeline_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray],
                   t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Seconds of the busiest stage's ``m`` micro-batches by part, the bubble and the sends."""
    fwd, rec, head = c["layer_forward_s"], c["layer_recompute_s"], c["head_s"]
    tp_layer = t["layer_tp_comm_s"]
    n_mb = x.micro_batches
    per_layer = 3 * fwd + rec + tp_layer  # forward, backward (2x), recompute, TP
    average = x.avg_layers * per_layer + head / x.pp
    send_bytes = ACTIVATION_BYTES * x.tokens * ctx.model.hidden / x.tp
    links, gpn = ctx.links, ctx.network.gpus_per_node
    across = x.tp * x.dp >= gpn  # consecutive stages sit on different nodes
    link_bw = np.where(across, links.inter.bandwidth_bytes_s, links.intra.bandwidth_bytes_s)
    link_lat = np.where(across, links.inter.latency_s, links.intra.latency_s)
    return {
        "forward_s": n_mb * x.stage_layers * fwd + n_mb * head / 3,
        "backward_s": n_mb * 2 * x.stage_layers * fwd + n_mb * head * 2 / 3,
        "recompute_s": n_mb * x.stage_layers * rec,
        "tp_comm_s": n_mb * x.stage_layers * tp_layer,
        "bubble_s": (x.pp - 1) / x.v * average,
        "p2p_s": np.where(x.pp > 1, 2 * x.v * n_mb * (link_lat + send_bytes / link_bw), 0.0),
    }


def _dp_time(ctx: Context, dp: int, stage: int, per_node: int, grad_bytes, weight_bytes, n_mb):
    """Seconds of one step's data-parallel collectives (ZeRO Sec. 7.2, :mod:`scaleout.zero`).

    Stage 3 gathers the weights before every micro-batch's forward and backward pass.
    """
    total = np.zeros_like(grad_bytes)
    if dp == 1:
        return total
    for op, what in zero.stage_collectives(stage):
        size = grad_bytes if what == "gradients" else weight_bytes
        repeat = n_mb if (stage == 3 and what != "gradients") else 1
        alpha, per_byte = _linear_cost(ctx.links, op, dp, per_node)
        total = total + repeat * (alpha + per_byte * size)
    return total


def data_parallel_parts(ctx: Context, x: _Shape, params: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds of the step's data-parallel and ZeRO collectives, hierarchical across nodes."""
    gpn = ctx.network.gpus_per_node
    per_node_dp = dp_ranks_per_node(x.dp, np.maximum(1, gpn // np.minimum(x.tp, gpn)))
    key = (x.dp * 8 + x.zero_stage) * 1024 + per_node_dp  # one key per (dp, stage, per-node)
    comm = by_value(key, lambda k, d, z, pn, grad_b, w_b, mb: _dp_time(
        ctx, int(d[0]), int(z[0]), int(pn[0]), grad_b, w_b, mb),
        x.dp, x.zero_stage, per_node_dp, params * ctx.recipe.grad_bytes,
        params * ctx.recipe.weight_bytes, x.micro_batches)
    return {"dp_comm_s": comm * (1 - ctx.calibration.dp_overlap)}


def optimizer_parts(ctx: Context, x: _Shape, params: np.ndarray) -> dict[str, np.ndarray]:
    """Seconds of the Adam step: its state read and written once at HBM bandwidth, sharded
    over ``dp`` from ZeRO stage 1."""
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    return {"optimizer_s": params * ADAM_TRAFFIC_BYTES_PER_PARAM
            / np.where(x.zero_stage >= 1, x.dp, 1) / hbm}


def iteration(ctx: Context, a: dict[str, np.ndarray], uneven: bool = False
              ) -> dict[str, np.ndarray]:
    """Memory per GPU and iteration time of many layouts at once.

    ``a`` holds arrays of ``tp``, ``pp``, ``dp``, ``micro_batch``, ``interleave``,
    ``zero_stage``, ``sp``, ``rc`` (:func:`scaleout.memory.recompute_code`) and ``flash``.
    Returns the parts of :func:`memory_parts` (``*_bytes``), the :data:`STEP_PARTS` as
    ``*_s`` summing to ``step_s``, ``micro_batches`` and ``stage_layers``.
    """
    x = _shape(ctx, a, uneven)
    mem = memory_parts(ctx, x)
    comp = compute_parts(ctx, x)
    tp = tensor_parallel_parts(ctx, x)
    pipe = pipeline_parts(ctx, x, comp, tp)
    dp = data_parallel_parts(ctx, x, mem["params_per_gpu"])
    opt = optimizer_parts(ctx, x, mem["params_per_gpu"])
    fwd, rec, head = comp["layer_forward_s"], comp["layer_recompute_s"], comp["head_s"]
    busiest = x.stage_layers * (3 * fwd + rec + tp["layer_tp_comm_s"]) + head
    step = (x.micro_batches * busiest + pipe["bubble_s"] + pipe["p2p_s"] + dp["dp_comm_s"]
            + opt["optimizer_s"])
    return {**mem, **pipe, **dp, **opt, "step_s": step, "micro_batches": x.micro_batches,
            "stage_layers": x.stage_layers}
