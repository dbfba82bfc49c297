"""The model of one training iteration: memory per GPU and seconds, for many layouts at once.

Every function takes the :class:`Context` (model, GPU, network, calibration, recipe, sequence,
batch, framework) and arrays of layouts (one entry per layout), and returns named arrays whose
keys carry their unit (``_bytes``, ``_s``). :func:`iteration` runs them in order: compute,
tensor-parallel communication, the pipeline stages' layers, memory, the pipeline's time,
data-parallel communication, optimizer. The busiest pipeline stage sets the pace;
``m = B / (dp b)`` micro-batches per replica.

* **Compute**: FLOPs of :func:`scaleout.compute.forward_flops` (PaLM App. B) divided by
  ``tp``, at ``η(x) × peak`` with ``x = min(h/tp, b s)`` (Narayanan et al. 2021 Sec. 3.3:
  thin shards run slower); memory-bound work as ``κ`` times the stored activation bytes (at
  16 bits, whatever the recipe) at HBM bandwidth; recomputation (Korthikanti et al. 2022
  Sec. 5).
* **The GPU's achievable matmul rate**: ``η`` was fitted on A100s
  (:attr:`Calibration.reference_gpu`); on another GPU, and in FP8, it is scaled by the ratio
  of the measured maximum achievable matmul FLOP/s over the datasheet peak, that GPU's in
  that format over the A100's in BF16 (:meth:`Calibration.achievable_ratio`; the MAMF
  table of stas00/ml-engineering, ``mamf_*_tflops`` in ``data/gpus.toml``): an H100
  reaches 80% of its BF16 peak and 71% of its FP8 peak where an A100 reaches 87% of its
  BF16 one, so FP8 is 1.77x BF16 there, not the datasheet's 2x.
* **FP8 casts** (:attr:`scaleout.memory.PrecisionRecipe.quantize_bytes`): every Linear
  input is quantized in the forward pass and every Linear output's gradient in the
  backward pass (:func:`scaleout.compute.linear_io_per_token`), memory-bound kernels a
  16-bit run does not have: the BF16 tensor read, its row- and column-wise FP8 copies
  written, plus an amax pass under current scaling (Transformer Engine's
  ``Float8CurrentScalingQuantizer``), MXFP8's block scales, DeepSeek-V3's tile
  transposition (:data:`scaleout.memory.FP8_QUANTIZE_BYTES`), at HBM bandwidth. The
  weights' casts, once per step, are left out.
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
  buffers, the allocator's slack, the loss's logits as the framework keeps them, ZeRO-3's
  gathered layers).
* **Pipeline**: the bubble, ``(pp − 1)/v`` of an average stage's micro-batch time (Narayanan
  et al. 2021 Sec. 2.2); sends of ``2bsh/tp`` bytes, two per micro-batch per chunk
  (scatter/gather, Sec. 4.1), all exposed or one micro-batch's (:attr:`Framework.p2p_overlap`).
* **Data parallelism and ZeRO**, as the framework issues them (:mod:`scaleout.plan.frameworks`):
  gradients reduced in buckets, during the last backward pass where it overlaps; ZeRO-1/2's
  weights gathered after the step, during the next forward where it overlaps; ZeRO-3's
  weights gathered unit by unit (layer or tensor) for every micro-batch's forward and backward,
  the next unit prefetched while the current one computes, and gradients reduce-scattered per
  layer; where the framework's host blocks at every unit (DeepSpeed's ZeRO-3 of 2021), tensor
  by tensor as :func:`tensor_fetch_chain_s` times it, each gather hidden behind one tensor's
  computation at most. Hybrid sharding (a plan's ``zero_shard``; Zhao et al. 2023
  Sec. 3.2.2) runs those collectives inside each shard group and all-reduces the gradients'
  shards across the groups. Where the pipelining schedule defers the gradient sync to the
  step's end (torchtitan, :attr:`Framework.pp_defers_grad_sync`), ZeRO-2 and ZeRO-3 run
  alike under pipelining: gathered and reduced once a step, weights and float32 gradients
  held whole through it. Each call costs what NCCL's model predicts
  (:mod:`scaleout.nccl`), its latency included: a flat ring over many GPUs pays it at every
  step.
* **Optimizer**: Adam reads and writes its state once, memory-bound.
* **Mixtures of experts** (:mod:`scaleout.moe`): the SwiGLU on the ``k`` routed copies and
  the router's softmax are memory-bound work counted by ``κ`` times the stored activations,
  which hold the ``k`` routed copies and the routed MLPs' widths; the token permutations
  outside the communication kernels (each token's ``k`` copies laid out by expert and summed
  back, as the framework's dispatcher does it, :attr:`Framework.moe_dispatcher`; forward and
  backward) are kernels of their own, their bytes (:func:`permutation_parts`,
  :func:`scaleout.moe.permutation_bytes`) at HBM bandwidth. FLOPs from the *active* parameters
  (:func:`scaleout.memory.layers_params` with ``active=True``), memory from all of them; the
  routed experts' GEMMs at their own shape (:func:`expert_gemm_parts`: ``t ep k / E`` rows per
  local expert, the roofline on reading the local experts' weights in each GEMM pass, the
  busiest rank of a balanced random router); where the framework issues those GEMMs one per
  local expert from the host (:attr:`Framework.expert_gemm_loop`), the host's issue time
  beyond the GPU's work (:func:`scaleout.moe.expert_loop_exposed_s`, a measured cost per
  GEMM from ``data/host_overheads.toml``), and where its dropless layer makes the host wait
  for the GPU once per MoE layer's forward pass (:attr:`Framework.moe_host_sync`), the whole
  stretch between two waits (:attr:`Framework.moe_host_layer`): the GPU runs each launch only
  as the host issues it, so the host's calls of one whole layer (the MoE part after the wait,
  then the next layer's attention block, router and dispatcher preprocessing: Transformer
  Engine modules and eager operators counted from Megatron-Core, :func:`scaleout.moe.
  layer_host_calls`, each at the host time measured on that system's CPU, :func:`scaleout.moe.
  host_call_s`: Grace on GB200, x86 elsewhere; the calls a run captures in CUDA graphs,
  :attr:`Framework.cuda_graph_scopes`, as one launch) are laid out in issue order against the
  GPU's work of the whole layer (the dispatch all-to-all, the expert GEMMs, the combine
  all-to-all, the rest of the layer; :func:`scaleout.moe.host_stretch_exposed_s`), and the
  backward's
  calls against the layer's backward; without that switch, the launches after the wait in the
  MoE part alone (:func:`scaleout.moe.moe_host_ops`) against the expert GEMMs and the dispatch
  behind them. The GPU's idle time is added to the layer's forward and backward; the
  dispatch and combine all-to-alls of every MoE layer and micro-batch
  (:func:`scaleout.moe.layer_comm_time` over the ``ep`` GPUs of the expert group, for the
  ``b s/(cp tp)`` tokens a GPU routes, as the framework's dispatcher sends them: one copy per
  expert, or once per destination GPU and node), exposed, or only beyond the layer's
  computation where the framework overlaps them (:attr:`Framework.a2a_overlap`); the experts'
  model state sharded by ZeRO over their ``edp = tp cp dp / ep`` copies, the rest over ``dp cp``
  (:func:`scaleout.moe.model_state_per_gpu`); their gradients reduced over ``edp``. Dense
  and MoE layers are counted where they sit: a stage's MoE layers are those among its own
  layers (the first stage's, the last's; for the stages between, the most any run of that
  many layers holds).
* **Context parallelism** (:mod:`scaleout.context_parallel`): every GPU computes and stores
  ``b s/cp`` tokens (attention's FLOPs and the activations divided by ``cp``); ring
  attention's key/value exchange shows where it outlasts the attention block it hides behind
  (:func:`scaleout.context_parallel.ring_attention_time`, ``exposed_s``); the non-expert
  gradients are reduced, and sharded, over ``dp × cp`` (Megatron-Core reduces over DP × CP).
* **Precision** (:data:`scaleout.memory.RECIPES`): the FP8 share of the layers' FLOPs
  (:func:`scaleout.compute.flops_by_format`) at the FP8 peak
  (:func:`scaleout.compute.matmul_peak_flops`), the rest at the BF16 peak; the recipe's bytes
  for weights, gradients, optimizer state, stored Linear inputs, communicated activations,
  the all-to-all and the gradient reduction and weight gather.
* **Multi-token prediction** (:attr:`scaleout.catalog.ModelSpec.mtp_layers`; DeepSeek-V3
  Sec. 2.2): each module is one more transformer layer (with its all-to-alls where the
  model's last layer is MoE), a ``2h × h`` projection and one more pass through the shared
  output layer, all on the last stage with the output layer, which the stage split then
  balances. Their parameters (a layer like the model's last, with its routed experts, and the
  projection: 11.6B for DeepSeek-V3) and one more layer of activations are counted in the last
  stage's memory; the embedding and output layer they share are not counted twice.
* **Per-operator selective recomputation** (:attr:`Framework.sac_every_other_matmul`;
  torchtitan's ``"op"`` policy): every second matmul of a block rerun in the backward pass
  (:func:`every_other_matmul_params`), its share of the layer's GEMM time.
* **Framework recomputation** (:attr:`Framework.recompute_kinds`; DeepSeek-V3 Sec. 3.2.3
  and 3.3.3): below full recomputation, the tensor kinds a framework recomputes besides
  (normalisations, MLA's up-projections, the MoE SwiGLU;
  :func:`scaleout.memory.recomputed_kinds_per_layer`) add their forward work to the
  recomputation (the up-projections' FLOPs at the layers' FP8/BF16 rates, the rest as
  memory-bound traffic, ``κ`` times the 16-bit bytes over three) and leave memory.
* **DualPipe** (:attr:`Framework.pipeline_schedule`, DeepSeek-V3 Sec. 3.2.1): each GPU holds
  stages ``i`` and ``pp - 1 - i`` (two stages' parameters, ``pp + 1`` micro-batches of
  activations) and runs half the micro-batches through each, so its pace is their mean; the
  bubble of :func:`scaleout.pipeline.dualpipe_bubble_s`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import catalog, compute, context_parallel, layout, memory, moe, pipeline
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
    "Experts",
    "busiest_gpu",
    "compute_parts",
    "context",
    "context_parallel_parts",
    "data_parallel_parts",
    "every_other_matmul_params",
    "expert_gemm_parts",
    "expert_parallel_parts",
    "experts_of",
    "iteration",
    "memory_parts",
    "optimizer_parts",
    "permutation_parts",
    "pipeline_parts",
    "stage_split",
    "tensor_fetch_chain_s",
    "tensor_parallel_parts",
]

#: Bytes per activation value sent between GPUs under a 16-bit recipe, as Korthikanti et al.'s
#: Table 2 assumes (the planner uses the recipe's ``activation_comm_bytes``).
ACTIVATION_BYTES = 2
#: HBM traffic of one Adam step, bytes per parameter: read fp32 master, momentum, variance and
#: the 16-bit gradient (4 + 4 + 4 + 2), write the three states and the 16-bit weight (12 + 2).
#: The 16 bytes per parameter of ZeRO Sec. 3.1, each moved once or twice.
ADAM_TRAFFIC_BYTES_PER_PARAM = 28
#: The parts of an iteration's time, in seconds (array keys add ``_s``).
STEP_PARTS = ("forward", "backward", "recompute", "tp_comm", "cp_comm", "ep_comm", "bubble",
              "p2p", "dp_comm", "optimizer")
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
#: memory logs show). The loss's logits on the last stage come on top, at the framework's
#: :attr:`~scaleout.plan.frameworks.Framework.logits_bytes` per logit.
RESERVE = {"context_gib": 0.75, "nccl_gib": 1.0, "allocator_share": 0.05}


@dataclass(frozen=True)
class Experts:
    """A mixture of experts' layers as the planner counts them (see :func:`experts_of`).

    ``moe_first[k]``, ``moe_last[k]``: MoE layers among the first and the last ``k`` layers;
    ``moe_window[k]``: the most MoE layers any ``k`` consecutive layers hold (a middle stage's
    count, an upper bound); ``nonexpert``: :func:`scaleout.memory.param_breakdown` without the
    routed experts; ``routed_per_layer``: the routed experts' parameters of one MoE layer;
    ``dense_extra``: what a dense layer's MLP holds beyond an MoE layer's non-routed parts
    (shared experts and router), per layer.
    """

    moe_first: np.ndarray
    moe_last: np.ndarray
    moe_window: np.ndarray
    nonexpert: dict[str, int]
    routed_per_layer: float
    dense_extra: float
    moe_share: float


def experts_of(m: ModelSpec) -> Experts | None:
    """The layer counts and parameters of :class:`Experts` for ``m`` (None: a dense model)."""
    if not m.is_moe:
        return None
    is_moe = np.array([m.layer_is_moe(i) for i in range(m.n_layers)], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(is_moe)])
    last = np.concatenate([[0], np.cumsum(is_moe[::-1])])
    window = np.array([max(first[i + k] - first[i] for i in range(m.n_layers - k + 1))
                       for k in range(1, m.n_layers + 1)])
    p = memory.layer_params(m)
    parts = memory.param_breakdown(m)
    routed = m.experts * p["expert"]
    nonexpert = dict(parts, layers=parts["layers"] - m.moe_layers * routed)
    nonexpert["total"] = parts["total"] - m.moe_layers * routed
    extra = p["dense_mlp"] - m.shared_experts * p["expert"] - p["router"]
    return Experts(first.astype(float), last.astype(float),
                   np.concatenate([[0], window]).astype(float), nonexpert, float(routed),
                   float(extra), m.moe_layers / m.n_layers)


@dataclass(frozen=True)
class Context:
    """Everything a plan's time and memory depend on besides the plan itself.

    ``layer_params`` is the parameters one token multiplies per layer (the active ones,
    averaged over the layers); ``attention_per_token`` attention's forward FLOPs per token
    and layer (:func:`scaleout.compute.attention_flops_per_token`: MLA's widths, sliding
    windows); ``fp8_share`` the share of the layers' weight FLOPs run in FP8
    (:func:`scaleout.compute.flops_by_format`) at ``fp8_flops`` peak.
    """

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
    experts: Experts | None = None
    layer_params: float = 0.0
    attention_per_token: float = 0.0
    fp8_share: float = 0.0
    fp8_flops: float = 0.0
    bf16_achievable: float = 1.0
    fp8_achievable: float = 1.0
    quantize_bytes_per_token: float = 0.0
    expert_call_s: float = 0.0
    host_op_s: float = 0.0
    host_module_s: float = 0.0


def context(model, gpu, network, calibration, recipe, seq_len, global_batch,
            framework_spec=None, switches=None, reserve_gib=None) -> Context:
    """A :class:`Context`, every argument checked (defaults: the GPU's usual network, the
    shipped calibration, the model's sequence length, :data:`~scaleout.plan.frameworks.
    DEFAULT_FRAMEWORK` with all its switches, :data:`RESERVE`'s CUDA context and NCCL
    buffers as the fixed reserve)."""
    m = catalog.model(model)
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
    rec = memory.get_recipe(recipe)
    layout.check(layout.Plan(), layout.Facts.of(m, recipe=rec, gpu=g), only=("fp8_gpu",))
    links = derated_links(net, cal.collective_efficiency)
    parts = memory.param_breakdown(m)
    active = memory.layers_params(m, active=True)
    fp8_share = fp8_flops = 0.0
    if rec.fp8:
        fp8_share = compute.flops_by_format(m, s, rec)["fp8"] / (6.0 * active)
        fp8_flops = compute.matmul_peak_flops(g, rec)
    return Context(m, g, net, cal, rec, s, check_int("global_batch", global_batch), fw,
                   collective_model(net, links, g, fw.collectives == "nccl"),
                   parts, memory.layer_tensors(m), fixed, experts_of(m),
                   parts["layers"] / m.n_layers if not m.is_moe else active / m.n_layers,
                   float(compute.attention_flops_per_token(m, s)) / m.n_layers,
                   fp8_share, fp8_flops, cal.achievable_ratio(g, "bf16"),
                   cal.achievable_ratio(g, "fp8") if rec.fp8 else 1.0,
                   rec.quantize_bytes * sum(compute.linear_io_per_token(m).values()),
                   moe.expert_loop_cost().per_call_s if fw.expert_gemm_loop and m.is_moe
                   else 0.0,
                   moe.host_call_s(g.name) if fw.moe_host_sync and m.is_moe else 0.0,
                   moe.host_call_s(g.name, "te.Linear") if fw.moe_host_layer and m.is_moe
                   else 0.0)


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
    cp: np.ndarray
    ep: np.ndarray
    edp: np.ndarray


def _shape(ctx: Context, a: dict[str, np.ndarray]) -> _Shape:
    tp, pp, dp, b, v, zero_stage, rc = (np.asarray(a[k]) for k in (
        "tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "rc"))
    shard = np.asarray(a.get("zero_shard", dp))
    shard = np.where(shard == 0, dp, shard)
    cp = np.broadcast_to(np.asarray(a.get("cp", 1), dtype=np.int64), tp.shape)
    ep = np.broadcast_to(np.asarray(a.get("ep", 1), dtype=np.int64), tp.shape)
    return _Shape(tp, pp, dp, b, v, zero_stage, shard, np.asarray(a["sp"], dtype=bool), rc,
                  np.asarray(a["flash"], dtype=bool), ctx.global_batch // (dp * b),
                  b * float(ctx.seq_len) / cp, cp, ep, tp * cp * dp // ep)


def _activations_per_layer(ctx: Context, x: _Shape, rc, gemm_input_bytes: float | None = None
                           ) -> np.ndarray:
    """Korthikanti et al.'s bytes per layer for the ``s/cp`` tokens of a sequence a GPU holds
    (the model's head widths, MLP and routed copies; Linear inputs stored at the recipe's
    bytes, or at ``gemm_input_bytes``)."""
    m = ctx.model
    stored = ctx.recipe.gemm_input_bytes if gemm_input_bytes is None else gemm_input_bytes
    return memory.activation_per_layer_arrays(
        float(ctx.seq_len) / x.cp, x.b, m.hidden, m.n_heads, x.tp, x.sp, rc,
        x.flash | (x.cp > 1), gemm_input_bytes=stored, **memory.activation_shape(m))


def _recomputed_kinds(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """:func:`scaleout.memory.recomputed_kinds_per_layer` for the framework's
    ``recompute_kinds`` on the ``b s/cp`` tokens a GPU holds."""
    return memory.recomputed_kinds_per_layer(
        ctx.framework.recompute_kinds, ctx.model, float(ctx.seq_len) / x.cp, x.b, x.tp, x.sp,
        ctx.recipe.gemm_input_bytes)


# =========================================================================== compute
def _matmul_rate(ctx: Context, x: _Shape, dim: np.ndarray | None = None) -> np.ndarray:
    """FLOP/s of the sharded matrix multiplies at BF16: ``η(min(h/tp, b s/cp)) × peak`` (or
    ``η(dim)`` for a GEMM of another shape, such as an expert's), on the SMs the framework
    leaves to computation (:attr:`Framework.comm_sm_share`)."""
    if dim is None:
        dim = np.minimum(ctx.model.hidden / x.tp, x.tokens)
    rate = (ctx.calibration.matmul_efficiency(dim)
            * ctx.gpu.bf16_dense_flops * ctx.bf16_achievable)
    if ctx.framework.comm_sm_share:
        rate = rate * (1 - ctx.framework.comm_sm_share)
    return rate


def _seconds_per_flop(ctx: Context, rate: np.ndarray) -> np.ndarray:
    """Seconds per FLOP of the layers' weight GEMMs at BF16 ``rate``: the recipe's FP8 share
    at the FP8 rate (the GPU's FP8 peak and measured achievable share over its BF16 ones),
    the rest at ``rate``."""
    if not ctx.fp8_share:
        return 1.0 / rate
    fp8_rate = rate * (ctx.fp8_flops * ctx.fp8_achievable
                       / (ctx.gpu.bf16_dense_flops * ctx.bf16_achievable))
    return ctx.fp8_share / fp8_rate + (1 - ctx.fp8_share) / rate


def _routed_params(ctx: Context) -> float:
    """The routed experts' weights one token multiplies, averaged over the layers: ``k``
    experts in each MoE layer (0 for a dense model)."""
    ex = ctx.experts
    if ex is None:
        return 0.0
    return ex.moe_share * ctx.model.top_k * ex.routed_per_layer / ctx.model.experts


def expert_gemm_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """The routed experts' GEMMs of one MoE layer on the busiest GPU, one micro-batch, at
    their own shape (averaged over the layers as ``layer_expert_gemm_s``, in forward-pass
    units: a third of forward + data-gradient + weight-gradient GEMMs).

    * **Tokens per local expert** (:func:`scaleout.moe.tokens_per_local_expert`): each
      expert GEMM multiplies ``n_e = t ep k / E`` rows (``t = b s/(cp tp)`` tokens a GPU
      routes), not the ``b s`` a dense layer's GEMMs do; its rate is the same calibrated
      ``η`` at its thinnest dimension, ``min(h, f_e, n_e)`` as a dense layer's is at
      ``min(h/tp, b s)`` (Megatron-Core ``--moe-grouped-gemm``: the local experts' GEMMs in
      one call, each its own ``n_e × h × f_e`` problem; experts are not split over ``tp``).
    * **The experts' weights** (:func:`scaleout.moe.expert_weight_bytes`): each GEMM pass
      reads all ``E/ep`` local experts' weights (the weight-gradient GEMM reads and writes
      their gradients); a pass takes the longer of its FLOPs and those bytes at HBM
      bandwidth (the roofline), so few tokens per expert make it memory-bound.
    * **The busiest rank** (:func:`scaleout.moe.expected_rank_imbalance`): under a balanced
      random router the busiest of the ``ep`` ranks holds ``ρ`` times the mean; in a
      dropless layer its GEMMs set the pace (``rank_imbalance``).

    Returns ``layer_expert_gemm_s``, ``tokens_per_expert``, ``rank_imbalance`` and, for one
    MoE layer, ``moe_forward_gemm_s`` (the forward pass) and ``moe_backward_gemm_s`` (data and
    weight gradients).
    """
    m, ex = ctx.model, ctx.experts
    shape = np.shape(x.tokens * x.ep)
    if ex is None:
        zero = np.zeros(shape)
        return {"layer_expert_gemm_s": zero, "tokens_per_expert": zero,
                "rank_imbalance": np.ones(shape), "moe_forward_gemm_s": zero,
                "moe_backward_gemm_s": zero}
    t = x.tokens / x.tp  # tokens a GPU routes (sequence parallelism splits them over tp)
    n_e = moe.tokens_per_local_expert(t, x.ep, m.top_k, m.experts)
    rho = moe.expected_rank_imbalance(t, m.experts, m.top_k, x.ep)
    thinnest = min(m.hidden, m.expert_ffn_hidden or m.hidden)  # an expert is not split
    per_flop = _seconds_per_flop(ctx, _matmul_rate(ctx, x, np.minimum(thinnest, n_e)))
    p_e = ex.routed_per_layer / m.experts
    flops = 2.0 * t * m.top_k * p_e * rho  # one GEMM pass over the busiest rank's copies
    w = moe.expert_weight_bytes(p_e * m.experts / x.ep, ctx.recipe.gemm_input_bytes,
                                ctx.recipe.grad_bytes)
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    per_pass = {k: np.maximum(flops * per_flop, w[k] / hbm) for k in ("forward", "dgrad", "wgrad")}
    passes = per_pass["forward"] + per_pass["dgrad"] + per_pass["wgrad"]
    return {"layer_expert_gemm_s": ex.moe_share * passes / 3, "tokens_per_expert": n_e,
            "rank_imbalance": rho, "moe_forward_gemm_s": per_pass["forward"],
            "moe_backward_gemm_s": per_pass["dgrad"] + per_pass["wgrad"]}


def permutation_parts(ctx: Context, x: _Shape, rank_imbalance) -> dict[str, np.ndarray]:
    """HBM bytes of one MoE layer's token permutations on the busiest GPU, one micro-batch,
    forward and backward (:func:`scaleout.moe.permutation_bytes` for the framework's
    :attr:`Framework.moe_dispatcher`, the ``b s/(cp tp)`` tokens a GPU routes, the busiest
    rank's ``ρ``), at the recipe's dispatch and combine widths, gradients at 16 bits.
    Returns ``layer_permutation_bytes``."""
    m = ctx.model
    got = moe.permutation_bytes(
        x.tokens / x.tp, m.hidden, m.top_k, m.experts, x.ep,
        dispatcher=ctx.framework.moe_dispatcher, imbalance=rank_imbalance,
        dispatch_bytes=ctx.recipe.dispatch_bytes, combine_bytes=ctx.recipe.combine_bytes,
        grad_bytes=ACTIVATION_BYTES)
    return {"layer_permutation_bytes": np.asarray(got["total"])}


def every_other_matmul_params(m: ModelSpec) -> float:
    """Parameters of the matmuls a per-operator selective checkpoint recomputes when it saves
    every matmul output but every second one of a block (torchtitan's ``"op"`` policy,
    :attr:`~scaleout.plan.frameworks.Framework.sac_every_other_matmul`): the block's
    unfused Linear layers in forward order, ``wq, wk, wv, wo`` then ``w1, w3, w2`` (SwiGLU)
    or ``w1, w2``, the 2nd, 4th and 6th recomputed (torchtitan/models/llama/model.py and
    parallelize_llama.py @ 4d88a8a4). Llama 3 8B: ``wk`` (4096 x 1024), ``wo`` (4096 x 4096)
    and ``w3`` (4096 x 14336): 79.7M of the block's 218.1M. A mixture of experts' or MLA's
    blocks are not counted (0); neither are the elementwise operators the policy recomputes
    too (norms, rotary embedding, SiLU), nor the memory it saves (the plan's stored
    activations stay those of Korthikanti et al.'s selective recomputation)."""
    if m.is_moe or m.is_mla:
        return 0.0
    h, q, kv = m.hidden, m.n_heads * m.head_dim, m.kv_heads * m.head_dim
    mats = [h * q, h * kv, h * kv, q * h]
    mats += [h * m.ffn, h * m.ffn, m.ffn * h] if m.gated_mlp else [h * m.ffn, m.ffn * h]
    return float(sum(mats[1::2]))


def _host_stretch(ctx: Context, x: _Shape, rest, experts: dict[str, np.ndarray],
                  a2a: dict[str, np.ndarray], n_local) -> dict[str, np.ndarray]:
    """The host's idle time for the GPU over one stretch between two waits and the layer's
    backward (:func:`scaleout.moe.host_stretch_exposed_s`, :attr:`Framework.moe_host_layer`):
    the host's calls (:func:`scaleout.moe.layer_host_calls`: the expert GEMMs at
    ``expert_call_s``, Transformer Engine modules at ``host_module_s``, eager operators at
    ``host_op_s``) in the order it issues them after the wait, against the GPU's work: the
    dispatch all-to-all (issued first by the ``"alltoall"`` dispatcher, which waits before it;
    last by DeepEP and HybridEP, which wait after it), the expert GEMMs, the combine all-to-all
    (issued after them; both all-to-alls zero where overlapped), the rest of the layer's
    forward (``rest``);
    in the backward the layer's backward (twice ``rest``, the experts' backward GEMMs, the
    backward all-to-alls)."""
    calls = moe.layer_host_calls(ctx.model, n_local, x.ep, fp8=ctx.recipe.fp8,
                                 dispatcher=ctx.framework.moe_dispatcher,
                                 graphed=ctx.framework.cuda_graph_scopes)

    def host(part: str, gemms: int) -> np.ndarray:
        c = calls[part]
        return (n_local * gemms * ctx.expert_call_s + c["op"] * ctx.host_op_s
                + c["module"] * ctx.host_module_s)

    comm = 0.0 if ctx.framework.a2a_overlap else 1.0  # overlapped: runs beside other work
    dispatch = (0.0, comm * a2a["dispatch_s"], True)
    segments = [
        (host("forward_experts", moe.EXPERT_LOOP_GEMMS["forward"]),
         experts["moe_forward_gemm_s"], False),
        (host("forward_combine", 0), comm * (a2a["forward_s"] - a2a["dispatch_s"]), True),
        (host("forward_rest", 0), rest, False)]
    # the alltoall dispatcher waits before its dispatch, issued first after the wait; DeepEP
    # and HybridEP wait after theirs (the received counts), the last launch before the wait
    segments = ([dispatch, *segments] if ctx.framework.moe_dispatcher == "alltoall"
                else [*segments, dispatch])
    return moe.host_stretch_exposed_s(
        segments, host("backward", moe.EXPERT_LOOP_GEMMS["backward"]),
        2 * rest + experts["moe_backward_gemm_s"] + comm * a2a["backward_s"])


def compute_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Seconds of one layer's forward pass (and the part of it in GEMMs), its recomputation,
    and the output layer's forward + backward, for one micro-batch on one GPU.

    A layer's weights are the ones a token multiplies (:attr:`Context.layer_params`: a
    mixture of experts' active parameters), their FP8 share at the FP8 rate; attention's two
    sequence-long products (:attr:`Context.attention_per_token`) and the output layer at the
    BF16 rate; ``b s/cp`` tokens per GPU."""
    m, g, cal, s = ctx.model, ctx.gpu, ctx.calibration, float(ctx.seq_len)
    h, a = m.hidden, m.n_heads
    rate = _matmul_rate(ctx, x)
    # one layer's matrices; a mixture of experts' routed experts apart (expert_gemm_parts)
    dense = compute.forward_flops(x.tokens, ctx.layer_params - _routed_params(ctx), 0, h, s)
    attention = x.tokens * ctx.attention_per_token  # Q K^T and A V: 4 b s^2 h (standard)
    head = compute.forward_flops(x.tokens, ctx.parts["embedding"], 0, h, s)  # output layer
    # the memory-bound work (norms, activation functions, residuals) reads and writes 16-bit
    # values whatever the recipe: an FP8 recipe's smaller stored copies do not shrink it
    stored = _activations_per_layer(ctx, x, 0, ACTIVATION_BYTES)
    hbm = g.hbm_gbytes_s * 1e9
    mem_s = cal.nonmatmul_traffic * stored / hbm  # forward + backward, one layer
    # an FP8 recipe's casts: every Linear input (forward) and output gradient (backward)
    mem_s = mem_s + ctx.quantize_bytes_per_token * x.tokens / x.tp / hbm
    per_flop = _seconds_per_flop(ctx, rate)
    gemm = dense / x.tp * per_flop if ctx.fp8_share else dense / x.tp / rate
    experts = expert_gemm_parts(ctx, x)  # the routed experts' GEMMs at their own shape
    a2a = _ep_comm(ctx, x, experts["rank_imbalance"])  # once; expert_parallel_parts reads it
    if ctx.experts is not None:  # the token permutations of an MoE layer, memory-bound
        mem_s = mem_s + ctx.experts.moe_share * permutation_parts(
            ctx, x, experts["rank_imbalance"])["layer_permutation_bytes"] / hbm
    if ctx.experts is not None:
        gemm = gemm + experts["layer_expert_gemm_s"]
    fwd_layer = gemm + attention / x.tp / rate + mem_s / 3
    loop_s = np.zeros(np.shape(fwd_layer))
    if ctx.experts is not None and (ctx.expert_call_s or ctx.host_op_s):  # host-bound MoE
        rest = fwd_layer - experts["layer_expert_gemm_s"]  # the layer's forward besides them
        n_local = m.experts / x.ep
        ops, behind = None, experts["moe_forward_gemm_s"]
        if ctx.host_module_s:  # the whole stretch between two waits: one layer's calls
            loop = _host_stretch(ctx, x, rest, experts, a2a, n_local)
        else:
            if ctx.host_op_s:
                ops = moe.moe_host_ops(n_local, x.ep, dispatcher=ctx.framework.moe_dispatcher,
                                       fp8=ctx.recipe.fp8)
                if ctx.framework.moe_dispatcher == "alltoall":  # waits before the dispatch,
                    behind = behind + a2a["dispatch_s"]  # and the dispatch runs behind the host
            loop = moe.expert_loop_exposed_s(
                n_local, ctx.expert_call_s, behind, 2 * rest + experts["moe_backward_gemm_s"],
                host_ops=ops, per_op_s=ctx.host_op_s)
        loop_s = ctx.experts.moe_share * loop["total_s"] / 3  # forward-pass units, averaged
        fwd_layer = fwd_layer + loop_s
    scores = np.where(x.flash, 0.0, 5 * a * s * s * x.b / x.tp)  # Korthikanti's 5as^2b bytes
    selective = np.where(x.flash, 0.0, attention / x.tp / rate + cal.nonmatmul_traffic * scores
                         / hbm / 3)
    rec_layer = np.where(x.rc == 2, fwd_layer, np.where(x.rc == 1, selective, 0.0))
    if ctx.framework.recompute_kinds:  # what the framework recomputes besides, below full
        kinds = _recomputed_kinds(ctx, x)
        up = compute.forward_flops(x.tokens, kinds["params"], 0, h, s) / x.tp
        up_s = up * per_flop if ctx.fp8_share else up / rate
        extra = up_s + cal.nonmatmul_traffic * kinds["traffic_bytes"] / hbm / 3
        rec_layer = rec_layer + np.where(x.rc == 2, 0.0, extra)
    if ctx.framework.sac_every_other_matmul:  # the matmuls a per-op policy recomputes
        rec_layer = rec_layer + np.where(
            x.rc == 1, gemm * every_other_matmul_params(m) / ctx.layer_params, 0.0)
    head_s = 3 * head / x.tp / rate  # forward + backward of the output layer, last stage
    if m.mtp_layers:  # each MTP module passes through the output layer again, after a 2h x h
        proj = compute.forward_flops(x.tokens, 2.0 * h * h, 0, h, s)  # projection
        head_s = head_s * (1 + m.mtp_layers) + 3 * m.mtp_layers * proj / x.tp / rate
    return {"layer_forward_s": fwd_layer, "layer_gemm_s": gemm, "layer_recompute_s": rec_layer,
            "head_s": head_s, "rank_imbalance": experts["rank_imbalance"],
            "layer_ep_total_s": a2a["total_s"],
            "layer_expert_loop_s": loop_s}


def tensor_parallel_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    """Seconds of one layer's tensor-parallel all-reduces for one micro-batch: four of
    ``2bsh/cp`` bytes (six with full recomputation), and the part of them left exposed."""
    tp_bytes = (ctx.recipe.activation_comm_bytes * x.tokens * ctx.model.hidden
                * np.ones_like(x.tp, dtype=float))
    per_node_tp = np.minimum(x.tp, ctx.network.gpus_per_node)
    one = ctx.collectives.seconds("all_reduce", tp_bytes, x.tp, per_node_tp)
    total = (4 + 2 * (x.rc == 2)) * one
    if ctx.framework.tp_overlap:
        # pipelined with the layer's GEMMs (forward, backward twice): only the excess shows;
        # userbuffers reach only the GPUs of one NVLink domain (Framework.tp_overlap)
        hidden = np.maximum(total - 3 * c["layer_gemm_s"], 0.0)
        exposed = np.where(x.tp > 1, np.where(x.tp <= ctx.network.gpus_per_node, hidden, total),
                           0.0)
    else:
        exposed = total
    return {"layer_tp_comm_s": exposed}


def _by_group(keys: np.ndarray, fn) -> np.ndarray:
    """``fn(mask, first index)`` for each distinct row of ``keys`` (a few groups, not one call
    per plan), assembled into one array."""
    out = np.zeros(keys.shape[0])
    if not keys.size:
        return out
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for j in range(len(uniq)):
        mask = inverse == j
        out[mask] = fn(mask, int(np.flatnonzero(mask)[0]))
    return out


def context_parallel_parts(ctx: Context, x: _Shape) -> dict[str, np.ndarray]:
    """Seconds of one layer's ring-attention transfers left exposed, one micro-batch, forward
    and backward (:func:`scaleout.context_parallel.ring_attention_time`'s ``exposed_s``, at the
    rate the attention kernel reaches, over NVLink when ``tp × cp`` fits in a node); full
    recomputation runs the forward ring once more."""
    shape = np.shape(x.tp)
    out = np.zeros(shape)
    on = np.broadcast_to(x.cp > 1, shape)
    if not on.any():
        return {"layer_cp_comm_s": out}
    links, gpn = ctx.collectives.links, ctx.network.gpus_per_node
    rate = np.broadcast_to(_matmul_rate(ctx, x), shape)
    idx = np.flatnonzero(on)
    cols = [np.broadcast_to(v, shape).ravel()[idx] for v in (x.cp, x.tp, x.b)]

    def ring(mask: np.ndarray, i: int) -> float:
        cp, tp, b = (int(c[i]) for c in cols)
        link = links.intra if tp * cp <= gpn else links.inter
        return context_parallel.ring_attention_time(
            ctx.model, ctx.seq_len, cp, link, micro_batch=b, tp=tp,
            attention_flops_per_s=float(rate.ravel()[idx[i]]),
            bytes_per_value=ctx.recipe.activation_comm_bytes)["exposed_s"]

    exposed = _by_group(np.stack(cols, axis=1), ring)
    rc = np.broadcast_to(x.rc, shape).ravel()[idx]
    out.ravel()[idx] = exposed * (1 + (rc == 2) / 3)  # the forward is a third of it
    return {"layer_cp_comm_s": out}


def _ep_comm(ctx: Context, x: _Shape, rank_imbalance) -> dict[str, np.ndarray]:
    """:func:`scaleout.moe.layer_comm_time` for every plan with ``ep > 1`` (zero elsewhere):
    ``dispatch_s`` (one forward dispatch), ``forward_s`` and ``backward_s`` (the forward pair,
    the backward pair) and ``total_s`` (forward and backward, a forward pair more under full
    recomputation), per MoE layer and micro-batch; the busiest rank
    receives ``ρ`` times the mean, its receive side sets the pace."""
    shape = np.shape(x.tp)
    dispatch, total = np.zeros(shape), np.zeros(shape)
    forward, backward = np.zeros(shape), np.zeros(shape)
    out = {"dispatch_s": dispatch, "total_s": total, "forward_s": forward,
           "backward_s": backward}
    on = np.broadcast_to(x.ep > 1, shape)
    if ctx.experts is None or not on.any():
        return out
    links, gpn = ctx.collectives.links, ctx.network.gpus_per_node
    idx = np.flatnonzero(on)
    ep = np.broadcast_to(x.ep, shape).ravel()[idx]
    busiest = x.tokens / x.tp * rank_imbalance  # as if every GPU routed ρ times its tokens
    tokens = np.broadcast_to(busiest, shape).ravel()[idx]
    full = np.broadcast_to(x.rc == 2, shape).ravel()[idx]
    d, t_all = np.zeros(idx.size), np.zeros(idx.size)
    f, b = np.zeros(idx.size), np.zeros(idx.size)
    for e in np.unique(ep):
        mask = ep == e
        t = moe.layer_comm_time(ctx.model, tokens[mask], int(e), gpn, links.intra, links.inter,
                                ctx.recipe, dispatcher=ctx.framework.moe_dispatcher)
        d[mask], f[mask], b[mask] = t["dispatch_s"], t["forward_s"], t["backward_s"]
        t_all[mask] = np.asarray(t["total_s"]) + np.where(full[mask], t["forward_s"], 0.0)
    dispatch.ravel()[idx] = d
    total.ravel()[idx] = t_all
    forward.ravel()[idx] = f
    backward.ravel()[idx] = b
    return out


def expert_parallel_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray]
                          ) -> dict[str, np.ndarray]:
    """Seconds of one MoE layer's dispatch and combine all-to-alls for one micro-batch, left
    exposed: :func:`scaleout.moe.layer_comm_time` over the ``ep`` GPUs of an expert group for
    the ``b s/(cp tp)`` tokens each routes (sequence parallelism splits them over ``tp``),
    the busiest rank receiving ``ρ`` times the mean (``c["rank_imbalance"]``),
    forward and backward (a forward pair more under full recomputation; ``c`` from
    :func:`compute_parts`, which times them once); where the framework overlaps them, only
    what outlasts the layer's computation (forward and backward) shows."""
    total = c["layer_ep_total_s"]  # compute_parts' _ep_comm
    if ctx.framework.a2a_overlap:
        shape = np.shape(total)
        total = np.where(np.broadcast_to(x.ep > 1, shape), np.maximum(
            total - 3 * np.broadcast_to(c["layer_forward_s"], shape), 0.0), total)
    return {"layer_ep_comm_s": total}


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
    last chunk does); of ``L`` equally fast to a relative 10⁻⁹, the smallest (the split then
    does not depend on rounding).
    Under DualPipe, where GPU 0 runs the first and the last stage and the
    others two middle ones (:func:`busiest_gpu`), ``L`` makes the slower of those paces
    fastest instead. One stage (``pp = 1``) holds everything.
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
    dual = ctx.framework.pipeline_schedule == "dualpipe"
    for shift in ((-3, -2, -1, 0, 1, 2) if dual else (-1, 0, 1, 2)):
        last = np.clip(np.floor(balance) + shift, 0, np.maximum(l - (pp - 1), 0))
        k = np.ceil((l - last) / others)
        if dual:  # GPU 0's pair of stages, or a middle GPU's two (from four stages on)
            t = np.maximum(np.where(pp >= 4, k * per_layer, 0.0),
                           (k * per_layer + last * per_layer + head_s) / 2)
        else:
            t = np.maximum(k * per_layer, last * per_layer + head_s)
        # of splits equally fast to rounding (DualPipe on two stages, where GPU 0 runs both,
        # is equally fast at every split), the first tried: the fewest layers on the last stage
        better = t < best_t - 1e-9 * np.abs(t)
        best_l = np.where(better, last, best_l)
        best_t = np.where(better, t, best_t)
    last = np.where(even, k_even, best_l)
    k = np.where(even, k_even, np.ceil((l - best_l) / others))
    busiest = np.where(x.pp == 1, l * per_layer + head_s,
                       np.maximum(k * per_layer, last * per_layer + head_s))
    return {"first_layers": k, "last_layers": last, "busiest_s": busiest,
            "last_is_busiest": last * per_layer + head_s >= k * per_layer}


def busiest_gpu(ctx: Context, x: _Shape, st: dict[str, np.ndarray], per_layer: np.ndarray,
                ep_layer: np.ndarray, head_s: np.ndarray) -> dict[str, np.ndarray]:
    """What the GPU that sets the pace runs per micro-batch: its layers, MoE layers and share
    of the output layer (``layers``, ``moe_layers``, ``head``) and its seconds (``busiest_s``).

    Under 1F1B the busiest stage: the last (its layers, its MoE layers, the output layer), or
    a stage before it (``k`` layers; MoE layers as the first stage holds them, or, with three
    stages or more, the most any ``k`` consecutive layers hold). Under DualPipe GPU ``i``
    holds stages ``i`` and ``pp - 1 - i`` and runs half the micro-batches through each: the
    first GPU's pace is the mean of the first and last stages', a middle GPU's a middle
    stage's (DeepSeek-V3 Sec. 3.2.1)."""
    ex, dual = ctx.experts, ctx.framework.pipeline_schedule == "dualpipe"
    k, last = st["first_layers"], st["last_layers"]
    if ex is None and not dual:
        busy = st["last_is_busiest"]
        zero = np.zeros(np.shape(busy))
        return {"layers": np.where(busy, last, k), "moe_layers": zero,
                "head": np.where(busy, 1.0, 0.0), "busiest_s": st["busiest_s"]}
    l = ctx.model.n_layers
    if ex is None:
        n0 = nm = nl = np.zeros(np.shape(k))
        total = 0.0
    else:
        n0 = ex.moe_first[k.astype(int)]
        nm = ex.moe_window[k.astype(int)]
        nl = ex.moe_last[last.astype(int)]
        total = float(ex.moe_first[-1])
    t0 = k * per_layer + n0 * ep_layer
    tm = k * per_layer + nm * ep_layer
    tl = last * per_layer + nl * ep_layer + head_s
    if dual:  # GPU 0 runs stages 0 and pp - 1; the others two middle stages
        pair = (t0 + tl) / 2
        mid = x.pp >= 4
        pick_mid = mid & (tm > pair)
        layers = np.where(pick_mid, k, (k + last) / 2)
        moe_n = np.where(pick_mid, nm, (n0 + nl) / 2)
        head = np.where(pick_mid, 0.0, 0.5)
    else:
        before = np.where(x.pp >= 3, tm, t0)
        n_before = np.where(x.pp >= 3, nm, n0)
        pick_last = tl >= before
        layers = np.where(pick_last, last, k)
        moe_n = np.where(pick_last, nl, n_before)
        head = np.where(pick_last, 1.0, 0.0)
    one = x.pp == 1
    layers = np.where(one, float(l), layers)
    moe_n = np.where(one, total, moe_n)
    head = np.where(one, 1.0, head)
    return {"layers": layers, "moe_layers": moe_n, "head": head,
            "busiest_s": layers * per_layer + moe_n * ep_layer + head * head_s}


# =========================================================================== memory
def _stage_params(ctx: Context, x: _Shape, st: dict[str, np.ndarray], which: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parameters per GPU of one pipeline stage (``"first"``, ``"last"`` or a ``"middle"``
    one): those outside the routed experts (split over ``tp``), the routed experts' (its MoE
    layers × ``E/ep`` experts), and its layer count."""
    m, ex = ctx.model, ctx.experts
    k, last = st["first_layers"], st["last_layers"]
    parts = ctx.parts if ex is None else ex.nonexpert
    if which == "middle":
        dense = parts["layers"] / m.n_layers * k / x.tp
        layers = k
    else:
        dense = memory.stage_params_arrays(parts, m.n_layers, m.tied_embeddings, x.tp, x.pp, k,
                                           last, which=which)
        layers = k if which == "first" else last
    mtp = m.mtp_layers if which == "last" else 0
    if mtp:
        dense = dense + mtp_params(m, parts, x.tp)
        layers = layers + mtp
    if ex is None:
        return dense, np.zeros(np.shape(dense)), layers
    table = {"first": ex.moe_first, "last": ex.moe_last, "middle": ex.moe_window}[which]
    n = table[(last if which == "last" else k).astype(int)]
    if mtp and m.layer_is_moe(m.n_layers - 1):
        n = n + mtp
    # the stage's dense layers hold a dense MLP where an MoE layer holds shared experts
    dense = dense + ((layers - n) - layers * (1 - ex.moe_share)) * ex.dense_extra / x.tp
    return dense, n * ex.routed_per_layer / x.ep, layers


def mtp_params(m: ModelSpec, parts: dict[str, int], tp) -> float:
    """Non-expert parameters per GPU of the last stage's multi-token-prediction modules: each
    a layer like the model's last and a ``2h x h`` projection (DeepSeek-V3 Sec. 2.2), split
    over ``tp``; ``parts`` is the model's (non-expert) parameter breakdown."""
    return m.mtp_layers * (parts["layers"] / m.n_layers + 2.0 * m.hidden * m.hidden) / tp


#: Bytes of a whole gradient FSDP2 accumulates between reductions: its reduce dtype, float32
#: (``FSDPParam.to_accumulated_grad_if_needed``; torchtitan's ``mixed_precision_reduce``).
ACCUMULATED_GRAD_BYTES = 4.0


def deferred_grad_sync(ctx: Context, x: _Shape) -> np.ndarray:
    """The plans whose ZeRO-2 or ZeRO-3 the pipelining schedule runs gathered and unsharded
    for the whole step, reducing once at its end (:attr:`Framework.pp_defers_grad_sync`):
    ``pp > 1`` and ``zero_stage >= 2`` under such a framework, no plan otherwise."""
    deferred = (x.pp > 1) & (x.zero_stage >= 2)
    return deferred if ctx.framework.pp_defers_grad_sync else np.zeros_like(deferred)


def _model_state(ctx: Context, x: _Shape, dense: np.ndarray, experts: np.ndarray):
    """(weights, grads, optimizer) bytes: ZeRO over the ``dp × cp`` copies (the shard group)
    for the non-expert parameters, over the ``edp`` copies for the experts'; a plan whose
    gradient sync the schedule defers (:func:`deferred_grad_sync`) holds whole weights and
    whole gradients at :data:`ACCUMULATED_GRAD_BYTES`, its optimizer state sharded."""
    deferred = deferred_grad_sync(ctx, x)
    stage = np.where(deferred, 1, x.zero_stage)
    w, g, o = memory.model_state_arrays(dense, stage, x.shard * x.cp, ctx.recipe)
    g = np.where(deferred, dense * ACCUMULATED_GRAD_BYTES, g)
    if ctx.experts is not None:
        we, ge, oe = memory.model_state_arrays(experts, stage, x.edp, ctx.recipe)
        ge = np.where(deferred, experts * ACCUMULATED_GRAD_BYTES, ge)
        w, g, o = w + we, g + ge, o + oe
    return w, g, o


def _stored_activations(ctx: Context, x: _Shape) -> np.ndarray:
    """Activation bytes one layer stores per micro-batch under the plan's recomputation, less
    what the framework recomputes besides (:attr:`Framework.recompute_kinds`; full
    recomputation already stores none of it)."""
    act = _activations_per_layer(ctx, x, x.rc)
    if ctx.framework.recompute_kinds:
        act = act - np.where(x.rc == 2, 0.0, _recomputed_kinds(ctx, x)["freed_bytes"])
    return act


def _extras(ctx: Context, x: _Shape) -> tuple[np.ndarray, np.ndarray]:
    """Bytes beyond model state and stored activations: the loss's fp32 logits on the GPU that
    runs the output layer (:attr:`Framework.logits_bytes` per logit), and the layers ZeRO-3
    keeps whole (the unit being computed and the prefetched ones), on every GPU."""
    m, ex = ctx.model, ctx.experts
    logits = ctx.framework.logits_bytes * x.tokens * m.vocab / x.tp
    unit = (ctx.parts["layers"] if ex is None else ex.nonexpert["layers"]) / m.n_layers / x.tp
    if ex is not None:
        unit = unit + ex.moe_share * ex.routed_per_layer / x.ep
    unit = unit * ctx.recipe.weight_bytes
    zero3 = np.where((x.zero_stage == 3) & ~deferred_grad_sync(ctx, x),
                     (ctx.framework.zero3_prefetch + 1) * unit, 0.0)
    return logits, zero3


def _stage_bytes(ctx: Context, x: _Shape, act, dense, experts, act_layers, flight, extra
                 ) -> tuple:
    """(weights, grads, optimizer, activations, reserve, dense, experts, flight) of one GPU:
    ZeRO model state of its parameters, ``act`` bytes per layer and micro-batch for
    ``act_layers`` layers and ``flight`` micro-batches, and :data:`RESERVE` (the fixed part,
    the allocator's share of what it holds, and ``extra``)."""
    w, g, o = _model_state(ctx, x, dense, experts)
    a = act * act_layers * flight
    held = w + g + o + a
    reserve = ctx.reserve_bytes + RESERVE["allocator_share"] * held + extra
    return (w, g, o, a, reserve, dense, experts, flight)


def memory_parts(ctx: Context, x: _Shape, st: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bytes per GPU of the fullest GPU: ZeRO model state of its parameters, activations of the
    micro-batches it holds, and :data:`RESERVE`.

    Under 1F1B the first and the last stage (with a mixture of experts and three stages or
    more, also a middle one, which may hold more experts than the first); under DualPipe the
    first GPU (stages 0 and ``pp - 1``) and a middle one (two middle stages), each holding
    ``pp + 1`` micro-batches."""
    ex = ctx.experts
    dual = ctx.framework.pipeline_schedule == "dualpipe"
    act = _stored_activations(ctx, x)
    logits, zero3 = _extras(ctx, x)
    stages = {w: _stage_params(ctx, x, st, w) for w in (
        ("first", "last", "middle") if ex is not None or dual else ("first", "last"))}

    def one(dense, experts, act_layers, flight, extra):
        return _stage_bytes(ctx, x, act, dense, experts, act_layers, flight, extra + zero3)

    out = {}
    if dual:
        flight = np.where(x.pp > 1, pipeline.dualpipe_in_flight(x.pp), 1.0)
        (d0, e0, l0), (dl, el, ll), (dm, em, lm) = (stages[w] for w in ("first", "last",
                                                                         "middle"))
        pair = np.where(x.pp > 1, 1.0, 0.0)  # one stage holds everything at pp = 1
        out["first"] = one(d0 + pair * dl, e0 + pair * el, (l0 + pair * ll) / (1 + pair),
                           flight, logits)
        out["last"] = out["first"]
        mid = one(2 * dm, 2 * em, lm, flight, 0.0)
        out["middle"] = tuple(np.where(x.pp >= 4, mv, fv) for mv, fv in zip(
            mid, out["first"], strict=True))
    else:
        for which in stages:
            dense, experts, layers = stages[which]
            stage = {"first": 0, "middle": 1, "last": x.pp - 1}[which]
            flight = np.where(x.pp > 1, pipeline.in_flight_arrays(x.pp, x.micro_batches, x.v,
                                                                  stage), 1.0)
            extra = logits if which == "last" else np.zeros_like(act)
            out[which] = one(dense, experts, layers, flight, extra)
        if "middle" in out:  # a middle stage exists from three stages on
            out["middle"] = tuple(np.where(x.pp >= 3, mv, fv) for mv, fv in zip(
                out["middle"], out["first"], strict=True))
    totals = {w: sum(v[:5]) for w, v in out.items()}
    pick = out["first"]
    best = totals["first"]
    for which in ("last", "middle"):
        if which in out:
            more = totals[which] > best
            pick = tuple(np.where(more, nv, pv) for nv, pv in zip(out[which], pick,
                                                                  strict=True))
            best = np.where(more, totals[which], best)
    w, g, o, a, reserve, _, _, flight = pick
    dense_max = np.maximum(out["first"][5], out["last"][5])
    expert_max = np.maximum(out["first"][6], out["last"][6])
    if "middle" in out:
        dense_max = np.maximum(dense_max, out["middle"][5])
        expert_max = np.maximum(expert_max, out["middle"][6])
    return {"weights_bytes": w, "grads_bytes": g, "optimizer_bytes": o,
            "activations_bytes": a, "reserve_bytes": reserve,
            "memory_bytes": w + g + o + a + reserve,
            "capacity_bytes": np.full(np.shape(w), ctx.gpu.hbm_bytes),
            "first_stage_bytes": totals["first"], "last_stage_bytes": totals["last"],
            "params_per_gpu": dense_max, "expert_params_per_gpu": expert_max,
            "in_flight": flight}


# =========================================================================== pipeline
def pipeline_parts(ctx: Context, x: _Shape, c: dict[str, np.ndarray],
                   t: dict[str, np.ndarray], busy: dict[str, np.ndarray]
                   ) -> dict[str, np.ndarray]:
    """Seconds of the busiest GPU's ``m`` micro-batches by part, the bubble and the sends."""
    fwd, rec, head = c["layer_forward_s"], c["layer_recompute_s"], c["head_s"]
    tp_layer, cp_layer, ep_layer = (t["layer_tp_comm_s"], t["layer_cp_comm_s"],
                                    t["layer_ep_comm_s"])
    n_mb = x.micro_batches
    per_layer = 3 * fwd + rec + tp_layer + cp_layer  # forward, backward (2x), recompute, TP, CP
    l = ctx.model.n_layers
    moe_total = 0.0 if ctx.experts is None else float(ctx.experts.moe_first[-1])
    average = (l * per_layer + moe_total * ep_layer + head) / x.pp
    layers, head_on, moe_n = busy["layers"], busy["head"], busy["moe_layers"]
    send_bytes = ctx.recipe.activation_comm_bytes * x.tokens * ctx.model.hidden / x.tp
    links, gpn = ctx.collectives.links, ctx.network.gpus_per_node
    across = x.tp * x.cp * x.dp >= gpn  # consecutive stages sit on different nodes
    link_bw = np.where(across, links.inter.bandwidth_bytes_s, links.intra.bandwidth_bytes_s)
    link_lat = np.where(across, links.inter.latency_s, links.intra.latency_s)
    sends = 2 * x.v * n_mb * (link_lat + send_bytes / link_bw)
    if ctx.framework.p2p_overlap:
        sends = sends / n_mb  # one micro-batch's sends stay on the critical path
    if ctx.framework.pipeline_schedule == "dualpipe":
        bubble = pipeline.dualpipe_bubble_s(x.pp, average / 3)
    else:
        bubble = (x.pp - 1) / x.v * average
    return {
        "forward_s": n_mb * layers * fwd + n_mb * head_on * head / 3,
        "backward_s": n_mb * 2 * layers * fwd + n_mb * head_on * head * 2 / 3,
        "recompute_s": n_mb * layers * rec,
        "tp_comm_s": n_mb * layers * tp_layer,
        "cp_comm_s": n_mb * layers * cp_layer,
        "ep_comm_s": n_mb * moe_n * ep_layer,
        "bubble_s": bubble,
        "p2p_s": np.where(x.pp > 1, sends, 0.0),
    }


# =========================================================================== data parallelism
def _bucketed(calls, bucket: float | None, window: np.ndarray | None) -> np.ndarray:
    """Exposed seconds of collectives issued in buckets of ``bucket`` bytes one after another,
    ``calls`` a list of ``(total_s_of, size)`` (a function giving one call's seconds for its
    bytes, and the bytes in all), the buckets becoming ready evenly over ``window`` seconds
    of compute (None: after it). Bucket ``i`` of ``n`` is ready at ``window · i/n`` and the
    calls run one after another, so what shows after the window is
    ``max(t_max, T - window (n-1)/n)`` for ``n`` buckets taking ``T`` seconds in all, ``t_max``
    the longest; for ``k`` buckets of ``t`` seconds each, ``max(t, k t - window (k-1)/k)``
    (Li et al. 2020, PyTorch DDP, Sec. 3.2.3)."""
    if len(calls) == 1:
        total_s_of, size = calls[0]
        k = np.ones_like(size) if not bucket else np.maximum(np.ceil(size / bucket), 1.0)
        each = total_s_of(size / k)
        if window is None:
            return k * each
        return np.maximum(each, k * each - window * (k - 1) / k)
    ks, eaches = [], []
    for total_s_of, size in calls:
        k = np.ones_like(size) if not bucket else np.maximum(np.ceil(size / bucket), 1.0)
        ks.append(k)
        eaches.append(total_s_of(size / k))
    total = sum(k * e for k, e in zip(ks, eaches, strict=True))
    if window is None:
        return total
    n = sum(ks)
    return np.maximum(np.maximum.reduce(eaches), total - window * (n - 1) / n)


def _prefetched(units: np.ndarray, comp: np.ndarray, comm: np.ndarray, prefetch: int
                ) -> np.ndarray:
    """Seconds for ``units`` identical units of ``comp`` compute each needing ``comm`` of
    communication first, the communication running ahead by ``prefetch`` units on its own
    stream: ``comm + (U - 1) max(comp, comm) + comp`` (none ahead: ``U (comm + comp)``)."""
    if prefetch <= 0:
        return units * (comm + comp)
    return comm + np.maximum(units - 1, 0) * np.maximum(comp, comm) + comp


def tensor_fetch_chain_s(layers, comp, gather, after=None):
    """Seconds of ``layers`` passes through ``k`` units run in order, each unit's parameters
    gathered one unit ahead while the CPU blocks at every unit (DeepSpeed's ZeRO-3 of 2021,
    :attr:`~scaleout.plan.frameworks.Framework.zero3_blocking_fetch`).

    On entering unit ``i`` the CPU waits for everything in flight, then issues the gather of
    unit ``i + 1`` and unit ``i``'s computation, whose gradient reduction (``after[i]``, the
    same communicator, so queued behind that gather) the next entry waits for too: unit ``i``
    takes ``max(c_i, g_{i+1}) + r_i``, the next layer's first unit prefetched during this
    layer's last (deepspeed/runtime/zero/stage3.py @ v0.3.16: ``fetch_sub_module``,
    ``_synchronize_communication``, ``prefetch_next_sub_modules``). With the first gather
    exposed and nothing to prefetch after the last unit::

        g_0 + layers * sum_i (max(c_i, g_{(i+1) mod k}) + r_i) - max(c_{k-1}, g_0) + c_{k-1}

    ``comp``, ``gather`` and ``after`` are sequences of ``k`` arrays (seconds per unit);
    ``after`` None: no reduction.
    """
    k = len(comp)
    if after is None:
        after = [0.0] * k
    per_layer = sum(np.maximum(comp[i], gather[(i + 1) % k]) + after[i] for i in range(k))
    return (gather[0] + layers * per_layer - np.maximum(comp[-1], gather[0]) + comp[-1])


def _dp_tensor_chain(ctx: Context, a: dict[str, np.ndarray], sharded) -> np.ndarray:
    """Exposed seconds of ZeRO-3 gathering tensor by tensor with a blocking fetch
    (:func:`tensor_fetch_chain_s`), for every micro-batch: a forward chain; with full
    recomputation a recomputing forward chain that gathers every tensor again; a backward
    chain in reverse order that gathers again the tensors released in between (those with
    more than ``zero3_max_reuse_distance`` elements used between their two uses: under full
    recomputation twice the elements of the layer's later tensors, otherwise always) and
    reduce-scatters each tensor's gradient. Tensors under ``zero3_persistence_threshold``
    elements stay whole. A unit's computation is its share of the layer's matrix multiplies
    (by parameters); the layer's other work (attention, memory-bound kernels) is put on the
    first gathered tensor (Q/K/V), the one whose computation it follows."""
    fw, rec = ctx.framework, ctx.recipe
    tp, layers = a["tp"], a["layers"]
    sizes = [n for n in ctx.tensors if n >= fw.zero3_persistence_threshold]
    if not sizes:  # nothing gathered: the whole layer stays on every GPU
        return np.zeros(np.shape(tp))
    total = float(sum(sizes))
    fwd_layer, gemm = a["layer_forward"], a["layer_gemm"]
    f_total = (a["per_layer"] - a["layer_recompute"]) / 3  # forward, TP and CP included
    share = [gemm * n / total / fwd_layer for n in sizes]
    share[0] = share[0] + (fwd_layer - gemm) / fwd_layer

    def issued(op: str, n: int, bytes_per: float) -> np.ndarray:
        """One tensor's collective, none where its shard of ``n / tp`` stays whole."""
        size = np.broadcast_to(n / tp * bytes_per, tp.shape).astype(float)
        return np.where(n / tp >= fw.zero3_persistence_threshold, sharded(op, size), 0.0)

    ag = [issued("all_gather", n, rec.param_gather) for n in sizes]
    rs = [issued("reduce_scatter", n, rec.grad_comm) for n in sizes]
    full = a["rc"] == 2
    c_f = [f_total * sh for sh in share]
    fwd = tensor_fetch_chain_s(layers, c_f, ag)
    # backward, last tensor first; its gathers are the tensors released since their last use
    again = []
    for i in range(len(sizes)):
        later = 2.0 * sum(sizes[i + 1:]) / tp
        keep = (later <= fw.zero3_max_reuse_distance if fw.zero3_max_reuse_distance is not None
                else np.zeros(np.shape(tp), dtype=bool))
        again.append(np.where(full & keep, 0.0, ag[i]))
    rec_s = a["layer_recompute"]
    c_b = [2 * f_total * sh + np.where(full, 0.0, rec_s * sh) for sh in share]
    bwd = tensor_fetch_chain_s(layers, c_b[::-1], again[::-1], rs[::-1])
    recompute = np.where(full, tensor_fetch_chain_s(layers, [rec_s * sh for sh in share], ag),
                         0.0)
    compute = layers * (a["per_layer"])
    return fwd + bwd + recompute - compute


def data_parallel_parts(ctx: Context, x: _Shape, mem: dict[str, np.ndarray],
                        c: dict[str, np.ndarray], t: dict[str, np.ndarray],
                        busy: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Exposed seconds of the step's data-parallel and ZeRO collectives, as the framework
    issues them (see the module docstring): the non-expert parameters over the ``dp × cp``
    GPUs that hold copies of them, a mixture of experts' routed experts over their ``edp``
    copies."""
    gpn = ctx.network.gpus_per_node
    dpc = x.dp * x.cp  # context parallelism's GPUs join the gradient reduction
    per_node_dp = dp_ranks_per_node(dpc, np.maximum(1, gpn // np.minimum(x.tp, gpn)))
    # hybrid sharding: shard groups of consecutive data-parallel ranks, replicas across them
    shard = x.shard * x.cp
    per_node_shard = dp_ranks_per_node(shard, per_node_dp)
    replicas = x.dp // x.shard
    per_node_replica = dp_ranks_per_node(replicas, np.maximum(per_node_dp // per_node_shard, 1))
    per_layer = (3 * c["layer_forward_s"] + c["layer_recompute_s"] + t["layer_tp_comm_s"]
                 + t["layer_cp_comm_s"])
    shape = np.shape(x.dp)
    full_arrays = {
        "dp": dpc, "shard": shard, "per_node_dp": per_node_dp,
        "per_node_shard": per_node_shard, "replicas": replicas,
        "per_node_replica": per_node_replica, "tp": x.tp, "pp": x.pp,
        "micro_batches": x.micro_batches, "params": mem["params_per_gpu"],
        "per_layer": per_layer, "layers": busy["layers"], "rc": x.rc,
        "layer_forward": c["layer_forward_s"], "layer_gemm": c["layer_gemm_s"],
        "layer_recompute": c["layer_recompute_s"]}
    if ctx.experts is not None:
        full_arrays.update({
            "edp": x.edp, "expert_params": mem["expert_params_per_gpu"],
            "per_node_edp": dp_ranks_per_node(x.edp, np.maximum(1, gpn // np.minimum(x.ep,
                                                                                  gpn)))})
        copies = (dpc > 1) | (x.edp > 1)
    else:
        copies = dpc > 1
    comm = np.zeros(shape)
    # ZeRO-2 as FSDP runs it without pipelining: per-unit gathers kept through the backward
    # (Framework.zero2_per_unit), priced as ZeRO-3 without the backward's second gather; under
    # pipelining the schedule syncs gradients once a step, the sharded branch's pricing
    per_unit = (((x.zero_stage == 2) & (x.pp == 1)) if ctx.framework.zero2_per_unit
                else np.zeros(shape, bool))
    full_arrays["reshard_after_forward"] = x.zero_stage == 3
    # a ZeRO-3 the pipelining schedule keeps gathered all step is its ZeRO-2 there
    deferred = deferred_grad_sync(ctx, x)
    # each branch is priced only for the plans that take it
    for branch, mask in ((_dp_plain, (x.zero_stage == 0) & copies),
                         (_dp_sharded, (((x.zero_stage >= 1) & (x.zero_stage <= 2)) | deferred)
                          & ~per_unit & copies),
                         (_dp_full, (((x.zero_stage == 3) & ~deferred) | per_unit) & copies)):
        idx = np.flatnonzero(np.broadcast_to(mask, shape))
        if idx.size:
            sub = {k: np.broadcast_to(v, shape).ravel()[idx] for k, v in full_arrays.items()}
            comm.ravel()[idx] = branch(ctx, sub)
    return {"dp_comm_s": comm * (1 - ctx.calibration.dp_overlap)}


def _colls(ctx: Context, a: dict[str, np.ndarray]):
    """The ways a data-parallel collective is issued, over the plans of ``a``: over the
    whole group (``coll``), inside the shard groups with the reduce-scatter's shard then
    all-reduced across the replicas (``sharded``; nothing added without hybrid sharding),
    and over the experts' ``edp`` copies (``expert``; None for a dense model)."""
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

    expert = None
    if "edp" in a:
        def expert(op: str, size: np.ndarray) -> np.ndarray:
            return np.where(a["edp"] > 1, ctx.collectives.seconds(
                op, size, a["edp"], a["per_node_edp"], node_aggregate=flat), 0.0)

    def none_if_single(f):
        return lambda op, size: np.where(a["dp"] > 1, f(op, size), 0.0)

    if expert is not None:  # a mixture of experts: its dense part may have one copy
        coll, sharded = none_if_single(coll), none_if_single(sharded)
    return coll, sharded, expert


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
    coll, _, expert = _colls(ctx, a)
    grad_window, _ = _windows(ctx, a)
    calls = [(lambda s: coll("all_reduce", s), a["params"] * ctx.recipe.grad_comm)]
    if expert is not None:
        calls.append((lambda s: expert("all_reduce", s),
                      a["expert_params"] * ctx.recipe.grad_comm))
    return _bucketed(calls, ctx.framework.grad_bucket_bytes, grad_window)


def _dp_sharded(ctx: Context, a: dict[str, np.ndarray]) -> np.ndarray:
    """ZeRO-1/2: gradients reduce-scattered in buckets, the updated weights all-gathered."""
    _, sharded, expert = _colls(ctx, a)
    grad_window, gather_window = _windows(ctx, a)
    bucket, rec = ctx.framework.grad_bucket_bytes, ctx.recipe
    scatter = [(lambda s: sharded("reduce_scatter", s), a["params"] * rec.grad_comm)]
    gather = [(lambda s: sharded("all_gather", s), a["params"] * rec.param_gather)]
    if expert is not None:
        scatter.append((lambda s: expert("reduce_scatter", s),
                        a["expert_params"] * rec.grad_comm))
        gather.append((lambda s: expert("all_gather", s), a["expert_params"] * rec.param_gather))
    return (_bucketed(scatter, bucket, grad_window) + _bucketed(gather, bucket, gather_window))


def _dp_full(ctx: Context, a: dict[str, np.ndarray]) -> np.ndarray:
    """ZeRO-3 / FSDP: every micro-batch gathers each unit's weights before its forward and
    its backward (once, kept for the backward, under pipelining, and under FSDP's ZeRO-2,
    ``SHARD_GRAD_OP``) and reduce-scatters its gradients; the rest of the stage (embedding,
    output layer) as one more unit. A mixture
    of experts' routed experts are gathered over their ``edp`` copies with the layer, an
    average layer's share each."""
    fw, rec = ctx.framework, ctx.recipe
    _, sharded, expert = _colls(ctx, a)
    tp, layers, per_layer = a["tp"], a["layers"], a["per_layer"]
    ex = ctx.experts
    layer_params = (ctx.parts["layers"] if ex is None else ex.nonexpert["layers"]
                    ) / ctx.model.n_layers / tp
    if fw.zero3_unit == "tensor":
        gather = sum(sharded("all_gather", np.broadcast_to(n / tp * rec.param_gather,
                                                           tp.shape).astype(float))
                     for n in ctx.tensors)
    else:
        gather = sharded("all_gather", layer_params * rec.param_gather)
    scatter = sharded("reduce_scatter", layer_params * rec.grad_comm)
    if expert is not None:
        per = a["expert_params"] / np.maximum(layers, 1)
        gather = gather + expert("all_gather", per * rec.param_gather)
        scatter = scatter + expert("reduce_scatter", per * rec.grad_comm)
    rest = np.maximum(a["params"] - layers * layer_params, 0.0)
    rest_s = (sharded("all_gather", rest * rec.param_gather)
              + sharded("reduce_scatter", rest * rec.grad_comm))
    if fw.zero3_blocking_fetch and expert is None:
        return a["micro_batches"] * (_dp_tensor_chain(ctx, a, sharded) + rest_s)
    # resharded after the forward (so gathered again for the backward) only under ZeRO-3
    # without pipelining; FSDP's ZeRO-2 keeps the forward's gather (Framework.zero2_per_unit)
    gathers_back = np.where((a["pp"] > 1) | ~a["reshard_after_forward"], 0.0, 1.0)
    c_f = per_layer / 3
    c_b = per_layer * 2 / 3
    fwd = _prefetched(layers, c_f, gather, fw.zero3_prefetch)
    bwd = _prefetched(layers, c_b, gathers_back * gather + scatter, fw.zero3_prefetch)
    return a["micro_batches"] * (fwd + bwd - layers * (c_f + c_b) + rest_s)


def optimizer_parts(ctx: Context, x: _Shape, mem: dict[str, np.ndarray]
                    ) -> dict[str, np.ndarray]:
    """Seconds of the Adam step: its state read and written once at HBM bandwidth, sharded
    from ZeRO stage 1 over the shard group (``dp`` without hybrid sharding, times ``cp``) and,
    for a mixture of experts' routed experts, over their ``edp`` copies."""
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    sharded = x.zero_stage >= 1
    seconds = (mem["params_per_gpu"] * ADAM_TRAFFIC_BYTES_PER_PARAM
               / np.where(sharded, x.shard * x.cp, 1) / hbm)
    if ctx.experts is not None:
        seconds = seconds + (mem["expert_params_per_gpu"] * ADAM_TRAFFIC_BYTES_PER_PARAM
                             / np.where(sharded, x.edp, 1) / hbm)
    return {"optimizer_s": seconds}


def iteration(ctx: Context, a: dict[str, np.ndarray], uneven: bool = False
              ) -> dict[str, np.ndarray]:
    """Memory per GPU and iteration time of many layouts at once.

    ``a`` holds arrays of ``tp``, ``pp``, ``dp``, ``micro_batch``, ``interleave``,
    ``zero_stage``, ``sp``, ``rc`` (:func:`scaleout.memory.recompute_code`) and ``flash``,
    and may hold ``zero_shard`` (the shard group's size; ``dp`` where absent), ``cp`` and
    ``ep`` (1 where absent).
    Returns the parts of :func:`memory_parts` (``*_bytes``), the :data:`STEP_PARTS` as
    ``*_s`` summing to ``step_s``, ``micro_batches``, ``first_layers`` and ``last_layers``,
    and per layer and micro-batch ``layer_ep_comm_s`` and ``layer_cp_comm_s``.
    """
    x = _shape(ctx, a)
    comp = compute_parts(ctx, x)
    comm = {**tensor_parallel_parts(ctx, x, comp), **context_parallel_parts(ctx, x),
            **expert_parallel_parts(ctx, x, comp)}
    per_layer = (3 * comp["layer_forward_s"] + comp["layer_recompute_s"]
                 + comm["layer_tp_comm_s"] + comm["layer_cp_comm_s"])
    share = 0.0 if ctx.experts is None else ctx.experts.moe_share
    balance = per_layer + share * comm["layer_ep_comm_s"]  # an average layer, to split stages
    m = ctx.model
    if m.mtp_layers:  # the MTP modules' transformer layers run on the last stage
        last_moe = m.layer_is_moe(m.n_layers - 1)
        comp = {**comp, "head_s": comp["head_s"] + m.mtp_layers * (
            per_layer + (comm["layer_ep_comm_s"] if last_moe else 0.0))}
    st = stage_split(ctx, x, balance, comp["head_s"], uneven)
    busy = busiest_gpu(ctx, x, st, per_layer, comm["layer_ep_comm_s"], comp["head_s"])
    mem = memory_parts(ctx, x, st)
    pipe = pipeline_parts(ctx, x, comp, comm, busy)
    dp = data_parallel_parts(ctx, x, mem, comp, comm, busy)
    opt = optimizer_parts(ctx, x, mem)
    step = (x.micro_batches * busy["busiest_s"] + pipe["bubble_s"] + pipe["p2p_s"]
            + dp["dp_comm_s"] + opt["optimizer_s"])
    return {**mem, **pipe, **dp, **opt, "step_s": step, "micro_batches": x.micro_batches,
            "first_layers": st["first_layers"], "last_layers": st["last_layers"],
            "layer_ep_comm_s": comm["layer_ep_comm_s"],
            "layer_cp_comm_s": comm["layer_cp_comm_s"]}
