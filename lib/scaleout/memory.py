"""GPU memory math: parameters, model state (weights, gradients, optimizer), activations.

Sources
-------
* Parameters: Narayanan et al. 2021, "Efficient Large-Scale Language Model
  Training on GPU Clusters Using Megatron-LM" (arXiv 2104.04473), Eq. 2;
  generalised here to grouped-query attention, gated (SwiGLU) MLPs and untied
  embeddings (Llama 3, arXiv 2407.21783).
* Model state: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward
  Training Trillion Parameter Models" (arXiv 1910.02054), Sec. 3.1 and 5 with
  Table 1: mixed-precision Adam keeps 2 + 2 + 12 = 16 bytes per parameter, and
  stages 1-3 shard the optimizer state, then gradients, then weights over the
  N_d data-parallel GPUs. Other conventions (Megatron-LM's distributed
  optimizer, 18 and 20 bytes) are named :data:`RECIPES`.
* Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in
  Large Transformer Models" (arXiv 2205.05198), Sec. 4 and Table 2.

All results are bytes (per GPU unless a name says otherwise). The kernels
whose names start with ``_`` take numpy arrays so that sweeps and searches are
vectorised; the public functions check their inputs and raise ``ValueError``
with the parameter, the value and what is allowed.

Taught in ``notebooks/02_gpu_memory_math.ipynb``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import catalog, layout
from .catalog import GPU, ModelSpec
from .checks import check_bool, check_choice, check_int, check_positive
from .layout import RECOMPUTE_MODES
from .units import GIB

__all__ = [
    "FP8_QUANTIZE_BYTES",
    "FP8_TILE_BYTES",
    "MATMUL_FORMATS",
    "RECIPES",
    "RECOMPUTE_KINDS",
    "RECOMPUTE_MODES",
    "MemoryBreakdown",
    "ModelStateBytes",
    "PrecisionRecipe",
    "activation_bytes",
    "activation_bytes_per_layer",
    "activation_modes",
    "activation_per_layer_arrays",
    "activation_shape",
    "check_precision",
    "get_recipe",
    "layer_params",
    "layer_tensors",
    "layers_params",
    "megatron_param_count",
    "model_state_arrays",
    "model_state_breakdown",
    "model_state_bytes",
    "param_breakdown",
    "param_count",
    "precision_problem",
    "recompute_code",
    "recomputed_kinds_per_layer",
    "stage_params",
    "stage_params_arrays",
    "training_memory",
    "weights_bytes",
]



# =========================================================================== parameters
def layer_params(model: str | ModelSpec) -> dict[str, int]:
    """Parameters of the pieces one transformer layer is built from.

    * ``attention``: Q ``h·(a d)``, K and V ``2h·(a_kv d)``, output ``(a d)·h`` with
      ``d`` the head width (``h/a`` unless ``attention_head_dim`` says otherwise), plus
      their biases (``biases`` or ``attention_biases``). Multi-head latent attention
      (DeepSeek-V2, arXiv 2405.04434, Sec. 2.1; the layer of Hugging Face's
      ``modeling_deepseek_v3.py``): queries ``h·r_q + r_q + r_q·a(d_nope + d_rope)``
      (``h·a(d_nope + d_rope)`` without query compression), keys and values
      ``h(r_kv + d_rope) + r_kv + r_kv·a(d_nope + d_v)``, output ``a d_v·h``.
    * ``norms``: two per layer, ``2h`` each with biases (LayerNorm), ``h`` without (RMSNorm).
    * ``dense_mlp``: ``2hf`` (``3hf`` gated), plus ``f + h`` of biases with ``biases``.
    * ``expert``: one expert, the same MLP at width ``f_e`` (its biases ``2f_e + h``
      gated, ``f_e + h`` not, with ``expert_biases``); 0 for a dense model.
    * ``router``: ``h E`` (plus ``E`` with ``router_bias``); 0 for a dense model.
    """
    m = catalog.model(model)
    h, a = m.hidden, m.n_heads
    mats = 3 if m.gated_mlp else 2
    if m.is_mla:
        rope, nope, v = m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim
        rq, rkv = m.q_lora_rank, m.kv_lora_rank
        q = (h * rq + rq + rq * a * (nope + rope)) if rq else h * a * (nope + rope)
        attention = q + h * (rkv + rope) + rkv + rkv * a * (nope + v) + a * v * h
    else:
        q_dim, kv_dim = a * m.head_dim, m.kv_heads * m.head_dim
        attention = 2 * h * q_dim + 2 * h * kv_dim
        if m.biases or m.attention_biases:
            attention += q_dim + 2 * kv_dim + h
    f, fe = m.ffn, m.expert_ffn_hidden or 0
    return {
        "attention": attention,
        "norms": 2 * (2 * h if m.biases else h),
        "dense_mlp": mats * h * f + ((f + h) if m.biases else 0),
        "expert": (mats * h * fe + (((mats - 1) * fe + h) if m.expert_biases else 0)
                   if m.is_moe else 0),
        "router": (h * m.experts + (m.experts if m.router_bias else 0)) if m.is_moe else 0,
    }


def layers_params(model: str | ModelSpec, *, active: bool = False) -> int:
    """Parameters of all transformer layers: every expert, or (``active``) those one token
    uses, its ``top_k`` routed experts and the shared ones (:func:`layer_params`)."""
    m = catalog.model(model)
    p = layer_params(m)
    experts = (m.top_k if active else m.experts) + m.shared_experts
    return (m.n_layers * (p["attention"] + p["norms"]) + m.dense_layers * p["dense_mlp"]
            + m.moe_layers * (experts * p["expert"] + p["router"]))


def param_breakdown(model: str | ModelSpec) -> dict[str, int]:
    """Parameters of a decoder-only transformer, by part; a mixture of experts counts every
    expert (what memory must hold).

    Per layer (:func:`layer_params`): attention ``h*h`` (Q) + ``2*h*h_kv`` (K, V;
    ``h_kv = kv_heads * h/a``) + ``h*h`` (output); MLP ``2*h*f`` (or ``3*h*f`` gated);
    norms ``2h`` per norm with biases (LayerNorm), ``h`` without (RMSNorm); biases of the
    linear layers ``h + 2*h_kv + h + f + h`` when the model has them. An MoE layer holds
    ``experts + shared_experts`` MLPs of width ``f_e`` and a router instead of the dense
    MLP. Outside the layers: the ``V*h`` embedding, ``s*h`` learned positions, a final
    norm and, if untied, a ``V*h`` output layer.

    With GPT-style settings (``f = 4h``, biases, tied embeddings, learned
    positions) this is Megatron-LM Eq. 2 plus the final LayerNorm's ``2h``.

    Returns
    -------
    dict
        ``layers``, ``embedding``, ``positions``, ``final_norm``, ``output`` and ``total``.
    """
    m = catalog.model(model)
    h = m.hidden
    parts = {
        "layers": layers_params(m),
        "embedding": m.vocab * h,
        "positions": m.seq_len * h if m.learned_positions else 0,
        "final_norm": 2 * h if m.biases else h,
        "output": 0 if m.tied_embeddings else m.vocab * h,
    }
    parts["total"] = sum(parts.values())
    return parts


def layer_tensors(model: str | ModelSpec) -> tuple[int, ...]:
    """Parameters of each tensor of one transformer layer, in the order a forward pass uses them.

    The tensors :func:`param_breakdown`'s per-layer count adds up: the first norm (weight, and
    bias with LayerNorm), Q/K/V (one fused matrix, ``h (h + 2 h_kv)``, and its bias), the
    attention output (``h h`` and bias), the second norm, the MLP's up projection (``h f``, or
    ``2 h f`` gated, fused as Megatron does, and bias) and its down projection (``f h`` and
    bias). A framework that gathers parameters tensor by tensor (DeepSpeed's ZeRO-3 of 2021)
    issues one collective per entry.
    """
    m = catalog.model(model)
    h, f = m.hidden, m.ffn
    h_kv = m.kv_heads * m.head_dim
    norm = (h, h) if m.biases else (h,)
    out: list[int] = [*norm, h * (h + 2 * h_kv)]
    out += [h + 2 * h_kv] if m.biases else []
    out += [h * h] + ([h] if m.biases else []) + list(norm)
    out += [(2 if m.gated_mlp else 1) * h * f] + ([f] if m.biases else [])
    out += [f * h] + ([h] if m.biases else [])
    return tuple(out)


def param_count(model: str | ModelSpec) -> int:
    """Total parameters of a model (see :func:`param_breakdown`)."""
    return param_breakdown(model)["total"]


def megatron_param_count(model: str | ModelSpec) -> float:
    """Megatron-LM Eq. 2: ``P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h))``.

    Narayanan et al. 2021 (arXiv 2104.04473), Sec. 5.1, Eq. 2, for GPT models
    with a 4h MLP, biases, tied embeddings and learned positions.
    """
    m = catalog.model(model)
    l, h, V, s = m.n_layers, m.hidden, m.vocab, m.seq_len
    return 12 * l * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))


# =========================================================================== model state
#: Formats a recipe may run its matrix multiplies in.
MATMUL_FORMATS = ("fp32", "bf16", "fp8")


@dataclass(frozen=True)
class PrecisionRecipe:
    """Bytes per parameter kept by a training recipe, by the part ZeRO shards it with, and
    what the recipe's number formats change elsewhere.

    ZeRO stage 1 shards ``optimizer_bytes``, stage 2 also ``grad_bytes``, stage 3
    also ``weight_bytes``.

    Attributes
    ----------
    matmul
        Format of the Linear layers' matrix multiplies: ``"fp8"`` runs them at the GPU's
        FP8 peak (:func:`scaleout.compute.matmul_peak_flops`); ``"bf16"`` at its 16-bit
        peak. Attention's two sequence-long products, the output layer and the router stay
        in BF16 in every FP8 recipe here (Transformer Engine and DeepSeek-V3 alike).
    gemm_input_bytes
        Bytes per stored activation that a Linear layer's backward pass reads (its input):
        2 in BF16; 1 where the recipe keeps the FP8 copy it multiplied with (Transformer
        Engine), plus one FP32 scale per 128 values for DeepSeek-V3's 1x128 tiles. Other
        activations (norms, softmax, the SwiGLU product's factors) stay BF16
        (:func:`activation_per_layer_arrays`).
    activation_comm_bytes
        Bytes per activation value sent between GPUs for tensor, sequence, context and
        pipeline parallelism.
    dispatch_bytes, combine_bytes
        Bytes per value of the mixture-of-experts all-to-all that sends tokens to their
        experts (dispatch) and brings the results back (combine).
    grad_comm_bytes, param_gather_bytes
        Bytes per value of the data-parallel gradient reduction, and of the weights
        gathered under ZeRO-3 or the distributed optimizer; default ``grad_bytes`` and
        ``weight_bytes``.
    quantize_bytes
        HBM bytes moved per value an FP8 recipe quantizes (each Linear layer's input in
        the forward pass, its output's gradient in the backward pass), by memory-bound
        kernels a 16-bit recipe does not run: read the BF16 value, write the FP8 copies
        the forward and the two backward GEMMs need (row-wise and column-wise), plus
        whatever the scaling needs (:data:`FP8_QUANTIZE_BYTES`); 0 without FP8.
    """

    name: str
    weight_bytes: float
    grad_bytes: float
    optimizer_bytes: float
    source: str
    description: str
    matmul: str = "bf16"
    gemm_input_bytes: float = 2.0
    activation_comm_bytes: float = 2.0
    dispatch_bytes: float = 2.0
    combine_bytes: float = 2.0
    grad_comm_bytes: float | None = None
    param_gather_bytes: float | None = None
    quantize_bytes: float = 0.0

    def __post_init__(self) -> None:
        check_choice("matmul", self.matmul, MATMUL_FORMATS)
        for name in ("weight_bytes", "grad_bytes", "optimizer_bytes", "gemm_input_bytes",
                     "activation_comm_bytes", "dispatch_bytes", "combine_bytes"):
            check_positive(name, getattr(self, name), maximum=64)
        for name in ("grad_comm_bytes", "param_gather_bytes"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name), maximum=64)
        check_positive("quantize_bytes", self.quantize_bytes, allow_zero=True, maximum=64)
        if self.quantize_bytes and self.matmul != "fp8":
            raise ValueError(f"quantize_bytes={self.quantize_bytes!r} in recipe {self.name!r}, "
                             f"which multiplies in {self.matmul}; allowed: 0 without FP8")

    @property
    def total_bytes(self) -> float:
        """Bytes per parameter without sharding."""
        return self.weight_bytes + self.grad_bytes + self.optimizer_bytes

    @property
    def grad_comm(self) -> float:
        """Bytes per gradient value reduced over data parallelism."""
        return self.grad_bytes if self.grad_comm_bytes is None else self.grad_comm_bytes

    @property
    def param_gather(self) -> float:
        """Bytes per weight value all-gathered (ZeRO-3, distributed optimizer)."""
        return self.weight_bytes if self.param_gather_bytes is None else self.param_gather_bytes

    @property
    def fp8(self) -> bool:
        """Whether the Linear layers multiply in FP8 (a GPU without FP8 units cannot run it)."""
        return self.matmul == "fp8"


#: Bytes per value of DeepSeek-V3's fine-grained FP8: one E4M3 byte plus one FP32 scale per
#: 128 values (1x128 activation tiles; arXiv 2412.19437, Sec. 3.3.2).
FP8_TILE_BYTES = 1 + 4 / 128

#: HBM bytes per value quantized to FP8, by scaling scheme (one Linear input or output
#: gradient, BF16 in, the row-wise and the column-wise FP8 copies out: the forward GEMM
#: reads one, the weight-gradient GEMM the other):
#:
#: * ``"delayed"``: one fused cast-transpose kernel, the scale taken from earlier steps' amax
#:   history and this step's amax recorded on the way: read 2, write 1 + 1 (Transformer
#:   Engine ``DelayedScaling``; ``nvte_cast_transpose``).
#: * ``"current"``: the amax of this very tensor first, in a pass of its own, then the
#:   cast: read 2 + 2, write 1 + 1 (Transformer Engine ``Float8CurrentScalingQuantizer::
#:   quantize_impl``, transformer_engine/pytorch/csrc/quantizer.cpp at d0067d0:
#:   ``nvte_compute_amax_with_config``, then ``nvte_compute_scale_from_amax``, then
#:   ``nvte_quantize_v2``).
#: * ``"mxfp8"``: 1x32 blocks, the amax of each block found by the cast itself, one E8M0
#:   scale byte per 32 values for each copy: read 2, write 2 (1 + 1/32) (Transformer Engine
#:   ``MXFP8BlockScaling``; the OCP Microscaling Formats spec v1.0).
#: * ``"tile"``: DeepSeek-V3's 1x128 tiles with an FP32 scale each: read 2, write
#:   1 + 4/128; the backward's 128x1 copy read back, dequantized, transposed and quantized
#:   again: read and write 1 + 4/128 more (arXiv 2412.19437 Sec. 3.5.2, which describes
#:   both round trips through HBM).
FP8_QUANTIZE_BYTES = {
    "delayed": 2.0 + 2.0,
    "current": 2.0 + 2.0 + 2.0,
    "mxfp8": 2.0 + 2.0 * (1.0 + 1.0 / 32.0),
    "tile": 2.0 + 3.0 * FP8_TILE_BYTES,
}

#: Training recipes by name. The default, ``"mixed-adam"``, is the ZeRO paper's 16 bytes/param.
RECIPES: dict[str, PrecisionRecipe] = {
    r.name: r
    for r in [
        PrecisionRecipe(
            "mixed-adam", 2, 2, 12,
            "ZeRO (arXiv 1910.02054) Sec. 3.1: 2Ψ + 2Ψ + KΨ with K = 12",
            "fp16/bf16 weights and gradients; fp32 master weights, momentum and variance",
        ),
        PrecisionRecipe(
            "megatron-bf16", 2, 4, 12,
            "Megatron-LM distributed optimizer docs: bf16 params, fp32 grads, 18 bytes "
            "(6 + 12/d sharded)",
            "bf16 weights, fp32 gradient accumulation buffer; fp32 master, momentum, variance",
        ),
        PrecisionRecipe(
            "megatron-fp16", 2, 2, 16,
            "Megatron-LM distributed optimizer docs: fp16 params and grads, 20 bytes "
            "(4 + 16/d sharded)",
            "fp16 weights and gradients; fp32 main gradients, master, momentum, variance",
        ),
        PrecisionRecipe(
            "fp32-adam", 4, 4, 8,
            "Kingma & Ba 2015 (Adam) in fp32; ZeRO Sec. 3.1",
            "fp32 weights and gradients; fp32 momentum and variance", matmul="fp32",
            gemm_input_bytes=4, activation_comm_bytes=4, dispatch_bytes=4, combine_bytes=4,
        ),
        PrecisionRecipe(
            "fp32-sgd-momentum", 4, 4, 4,
            "SGD with momentum (one fp32 buffer per parameter)",
            "fp32 weights and gradients; one fp32 momentum buffer", matmul="fp32",
            gemm_input_bytes=4, activation_comm_bytes=4, dispatch_bytes=4, combine_bytes=4,
        ),
        PrecisionRecipe(
            "mixed-adam-8bit", 2, 2, 6,
            "Dettmers et al. 2022, '8-bit Optimizers via Block-wise Quantization' "
            "(arXiv 2110.02861): 8-bit momentum and variance, fp32 master weights",
            "fp16/bf16 weights and gradients; fp32 master; 1-byte momentum and variance",
        ),
        PrecisionRecipe(
            "fp8-te", 2, 4, 12,
            "NVIDIA Transformer Engine FP8 (Micikevicius et al. 2022, 'FP8 Formats for Deep "
            "Learning', arXiv 2209.05433; TE docs 'Using FP8 with Transformer Engine') in "
            "Megatron-Core with its distributed optimizer: bf16 params, fp32 main grads, "
            "fp32 master and Adam moments (18 bytes, as megatron-bf16)",
            "Linear layers multiply in FP8 (E4M3 forward, E5M2 or E4M3 gradients, per-tensor "
            "scales) and keep their FP8 inputs for the backward pass; weights held in bf16, "
            "fp32 master weights, gradients and moments; attention core, output layer, norms, "
            "softmax and communication stay bf16; delayed scaling (the scale from earlier "
            "steps' amax history, Megatron-Core's default --fp8-recipe delayed)",
            matmul="fp8", gemm_input_bytes=1, quantize_bytes=FP8_QUANTIZE_BYTES["delayed"],
        ),
        PrecisionRecipe(
            "fp8-te-cs", 2, 4, 12,
            "Transformer Engine Float8CurrentScaling (Megatron-Core --fp8-recipe tensorwise; "
            "Megatron Bridge's 'FP8-CS'): as fp8-te, each tensor's scale from its own amax",
            "as fp8-te, but every quantized tensor's amax is found in a pass of its own "
            "before the cast (one more read of the BF16 tensor)",
            matmul="fp8", gemm_input_bytes=1, quantize_bytes=FP8_QUANTIZE_BYTES["current"],
        ),
        PrecisionRecipe(
            "fp8-te-mx", 2, 4, 12,
            "Transformer Engine MXFP8BlockScaling (Megatron-Core --fp8-recipe mxfp8; "
            "Megatron Bridge's 'FP8-MX'; Blackwell's 1x32-block scaled FP8, OCP MX spec v1.0)",
            "as fp8-te, with one E8M0 scale byte per 32 values, found by the cast itself; the "
            "stored FP8 inputs' scales (1/32 byte a value) left out of the activations",
            matmul="fp8", gemm_input_bytes=1, quantize_bytes=FP8_QUANTIZE_BYTES["mxfp8"],
        ),
        PrecisionRecipe(
            "fp8-te-fp8-params", 1, 4, 12,
            "Megatron-Core --fp8-param-gather with Transformer Engine: the weights are kept "
            "and all-gathered in FP8; fp32 master weights and moments in the distributed "
            "optimizer (Megatron-Core docs, 'FP8 parameter gather')",
            "as fp8-te, but the weights are stored and gathered in FP8 (1 byte): 17 bytes per "
            "parameter, and half the bytes of a ZeRO-3 / distributed-optimizer weight gather",
            matmul="fp8", gemm_input_bytes=1, param_gather_bytes=1,
            quantize_bytes=FP8_QUANTIZE_BYTES["delayed"],
        ),
        PrecisionRecipe(
            "fp8-deepseek", 2, 4, 8,
            "DeepSeek-V3 Technical Report (arXiv 2412.19437), Sec. 3.3: fine-grained FP8 "
            "(1x128 activation tiles, 128x128 weight blocks, E4M3 throughout); master "
            "weights and gradients fp32, AdamW moments bf16 (Sec. 3.3.3); activations of "
            "Linear layers cached in FP8; MoE dispatch in FP8, combine in bf16 (Sec. 3.3.4)",
            "bf16 working weights (assumed: ZeRO-1 shards the fp32 master, so each rank "
            "needs an unsharded compute copy; the report does not say its format), fp32 "
            "gradients, fp32 master + two bf16 moments in the sharded optimizer state (4 + 4 "
            "bytes); Linear layers in FP8 with their inputs cached in FP8 plus one fp32 scale "
            "per 128 values; dispatch all-to-all in FP8, combine in bf16",
            matmul="fp8", gemm_input_bytes=FP8_TILE_BYTES, dispatch_bytes=FP8_TILE_BYTES,
            quantize_bytes=FP8_QUANTIZE_BYTES["tile"],
        ),
    ]
}


def get_recipe(recipe: str | PrecisionRecipe) -> PrecisionRecipe:
    """A training recipe by name (one of :data:`RECIPES`), or the recipe itself."""
    if isinstance(recipe, PrecisionRecipe):
        return recipe
    return RECIPES[check_choice("recipe", recipe, RECIPES)]


def check_precision(recipe: str | PrecisionRecipe, gpu: str | GPU) -> PrecisionRecipe:
    """The recipe, if ``gpu`` can run it: an FP8 recipe needs FP8 tensor cores.

    Raises
    ------
    ValueError
        ``recipe 'fp8-te' multiplies in FP8, but gpu A100-SXM4-80GB has no FP8 tensor
        cores ...``, naming the GPUs that have them and the 16-bit recipes.
    """
    r = get_recipe(recipe)
    problem = precision_problem(r, catalog.gpu(gpu))
    if problem:
        raise ValueError(problem)
    return r


def precision_problem(recipe: str | PrecisionRecipe, gpu: str | GPU) -> str | None:
    """Why ``gpu`` cannot run ``recipe`` (an FP8 recipe on a GPU without FP8 tensor cores), as
    a sentence naming the GPUs and recipes allowed; None when it can. The sentence of
    :func:`check_precision` and of the planner's rule (:data:`scaleout.layout.RULES`)."""
    r = get_recipe(recipe)
    g = catalog.gpu(gpu)
    if not (r.fp8 and g.fp8_dense_tflops is None):
        return None
    with_fp8 = [x.name for x in catalog.gpus() if x.fp8_dense_tflops is not None]
    other = [name for name, x in RECIPES.items() if not x.fp8]
    return (f"recipe {r.name!r} multiplies in FP8, but gpu {g.name!r} has no FP8 tensor "
            f"cores (no fp8_dense_tflops in data/gpus.toml); allowed: a GPU with FP8 "
            f"({', '.join(with_fp8)}) or a recipe without it ({', '.join(other)})")


@dataclass(frozen=True)
class ModelStateBytes:
    """Model state per GPU in bytes: weights, gradients, optimizer state."""

    weights: float
    grads: float
    optimizer: float

    @property
    def total(self) -> float:
        """Weights + gradients + optimizer state."""
        return self.weights + self.grads + self.optimizer


def _shard_factors(zero_stage, dp):
    """Fractions of weights, grads and optimizer state one GPU keeps (array-friendly).

    ZeRO Sec. 5: stage >= 1 shards the optimizer state 1/N_d, stage >= 2 the
    gradients, stage 3 the weights.
    """
    zero_stage = np.asarray(zero_stage)
    inv = 1.0 / np.asarray(dp, dtype=float)
    w = np.where(zero_stage >= 3, inv, 1.0)
    g = np.where(zero_stage >= 2, inv, 1.0)
    o = np.where(zero_stage >= 1, inv, 1.0)
    return w, g, o


def model_state_arrays(params, zero_stage, dp, recipe: PrecisionRecipe):
    """(weights, grads, optimizer) bytes per GPU, array-friendly kernel of
    :func:`model_state_breakdown` (ZeRO, arXiv 1910.02054, Sec. 5); arguments unchecked
    (the planner's search calls it on arrays of checked layouts)."""
    w, g, o = _shard_factors(zero_stage, dp)
    params = np.asarray(params, dtype=float)
    return (params * recipe.weight_bytes * w, params * recipe.grad_bytes * g,
            params * recipe.optimizer_bytes * o)


def model_state_breakdown(
    params: float,
    zero_stage: int = 0,
    dp: int = 1,
    recipe: str | PrecisionRecipe = "mixed-adam",
) -> ModelStateBytes:
    """Weights, gradients and optimizer state per GPU, in bytes.

    ZeRO (arXiv 1910.02054) Sec. 5.1-5.3 with K = 12: per device
    stage 0 ``16Ψ``; stage 1 ``4Ψ + 12Ψ/N_d``; stage 2 ``2Ψ + 14Ψ/N_d``;
    stage 3 ``16Ψ/N_d``, where Ψ is the parameters this GPU is responsible
    for before data parallelism (the model divided by TP and PP) and N_d the
    data-parallel size. Reproduces every cell of the paper's Table 1.

    Parameters
    ----------
    params
        Ψ, parameters held by one model-parallel rank.
    zero_stage
        0 (plain data parallelism) to 3.
    dp
        Data-parallel size N_d.
    recipe
        A name in :data:`RECIPES` or a :class:`PrecisionRecipe`.
    """
    check_positive("params", params)
    zero_stage = check_int("zero_stage", zero_stage, minimum=0, maximum=3)
    dp = check_int("dp", dp)
    w, g, o = model_state_arrays(params, zero_stage, dp, get_recipe(recipe))
    return ModelStateBytes(weights=float(w), grads=float(g), optimizer=float(o))


def model_state_bytes(
    params: float,
    zero_stage: int = 0,
    dp: int = 1,
    recipe: str | PrecisionRecipe = "mixed-adam",
) -> float:
    """Bytes per GPU for weights + gradients + optimizer state (ZeRO Table 1 convention).

    See :func:`model_state_breakdown` for the formula and its source.
    """
    return model_state_breakdown(params, zero_stage, dp, recipe).total


def weights_bytes(params: float, bytes_per_param: float = 2) -> float:
    """Bytes to hold the weights alone: fp16/bf16 is 2 bytes per parameter.

    GPT-3's 175e9 parameters take 350e9 bytes (350 GB) in fp16 (Brown et al.
    2020 state the count; the 2 bytes are IEEE half precision).
    """
    check_positive("params", params)
    check_positive("bytes_per_param", bytes_per_param)
    return params * bytes_per_param


# =========================================================================== activations
def activation_per_layer_arrays(s, b, h, a, t, sp, recompute, flash, kv_ratio=1.0,
                                ffn_ratio=4.0, gated=False, gemm_input_bytes=2.0,
                                qkv_ratio=None, routed_copies=0.0, dropout=True):
    """Activation bytes per transformer layer, per GPU (array-friendly kernel of
    :func:`activation_bytes_per_layer`; arguments unchecked, ``recompute`` as
    :func:`recompute_code`).

    Korthikanti et al. 2022 (arXiv 2205.05198) Sec. 4.1, with 16-bit
    activations and 1-byte dropout masks. Attention keeps ``11sbh + 5as^2b``
    and the MLP ``19sbh``, the two LayerNorms ``4sbh``: 34sbh + 5as^2b. Of
    these, ``10sbh`` (layer-norm outputs, dropout masks, inputs of the
    attention and MLP blocks) sit outside the tensor-parallel region and are
    split by ``t`` only with sequence parallelism; the rest is split by ``t``.

    Generalisation (exact for the paper's GPT models, ``kv_ratio = 1``,
    ``ffn_ratio = 4``): Q, K, V take ``2sbh(1 + 2r)`` with ``r = kv_heads/a``
    (``2sbh·qkv_ratio`` when the heads' widths differ from ``h/a``: ``qkv_ratio``
    is Q, K and V's channels over ``h``); the MLP keeps ``4sb·f`` bytes (``8sb·f``
    gated: two up-projections, the activation and the product); a mixture of
    experts keeps its ``k`` routed copies of each token's input (``2k sbh``,
    ``routed_copies`` = k averaged over the layers) and ``f`` is the width a token
    passes through (:attr:`~scaleout.catalog.ModelSpec.token_ffn`).

    ``gemm_input_bytes``: the inputs of the Linear layers (the two layer-norm outputs,
    attention's output before its projection, the MLP's last product, the routed
    copies) are stored at this many bytes per value instead of 2: 1 when an FP8 recipe
    keeps the FP8 copy it multiplied with (:class:`PrecisionRecipe`).

    ``recompute``: 0 none, 1 selective (attention core recomputed: the
    ``5as^2b`` term goes), 2 full (only the layer input, ``2sbh``, is kept;
    split by ``t`` under sequence parallelism). Flash attention never stores
    the ``as^2b`` score matrices either.

    ``dropout=False``: a model trained without dropout (Llama, DeepSeek, MPT: their
    configurations set every dropout probability to 0) stores no masks: the two 1-byte
    ``sbh`` masks after attention and the MLP go (``32sbh``), and of the scores only the
    softmax output is kept (``2as^2b`` instead of ``5as^2b``).
    """
    s, b, h, a, t = (np.asarray(x, dtype=float) for x in (s, b, h, a, t))
    sbh = s * b * h
    g = np.asarray(gemm_input_bytes, dtype=float) / 2.0
    qkv = 2 * (1 + 2 * np.asarray(kv_ratio)) if qkv_ratio is None else 2 * np.asarray(qkv_ratio)
    mlp_inner = np.where(gated, 8.0, 4.0) * ffn_ratio  # bytes per sbh inside the MLP
    last_product = 2.0 * np.asarray(ffn_ratio)  # the down-projection's input (a GEMM input)
    routed = 2.0 * np.asarray(routed_copies)
    # QKV, attention-over-V input, MLP inner, routed copies; GEMM inputs at g
    in_tp = qkv + 2 * g + (mlp_inner - last_product) + (last_product + routed) * g
    # 2 (attn in) + 1 (attn dropout mask) + 2 (mlp in) + 1 (mask) + 4 (norms); the two
    # layer-norm outputs are GEMM inputs
    drop = np.asarray(dropout, dtype=bool)
    outside = np.where(drop, 6.0, 4.0) + 4.0 * g
    # softmax out 2, dropout mask 1, dropout out 2 (per a s^2 b); without dropout the softmax's
    # output alone
    scores = np.where(drop, 5.0, 2.0) * a * s * s * b
    keep_scores = (np.asarray(recompute) == 0) & ~np.asarray(flash, dtype=bool)
    split_outside = np.where(sp, t, 1.0)
    stored = sbh * (outside / split_outside + in_tp / t) + np.where(keep_scores, scores / t, 0.0)
    full = 2 * sbh / split_outside
    return np.where(np.asarray(recompute) == 2, full, stored)


def activation_shape(m: ModelSpec) -> dict[str, float]:
    """The model-dependent keyword arguments of :func:`activation_per_layer_arrays` (head
    widths, the MLP width a token passes through, an MoE layer's routed copies): pass them
    as ``**activation_shape(model)``."""
    h = m.hidden
    k = m.top_k * m.moe_layers / m.n_layers
    qkv = None
    if m.is_mla or m.head_dim * m.n_heads != h:
        qkv = (m.n_heads * m.qk_head_dim + m.kv_heads * (m.qk_head_dim + m.head_dim)) / h
    return {"kv_ratio": m.kv_heads / m.n_heads, "ffn_ratio": m.token_ffn / h,
            "gated": m.gated_mlp, "qkv_ratio": qkv, "routed_copies": k, "dropout": m.dropout}


#: Tensor kinds a framework may recompute in the backward pass on top of a plan's
#: ``recompute`` mode (below full recomputation, which recomputes everything), as DeepSeek-V3
#: does (report Sec. 3.2.3, p. 14, and Sec. 3.3.3, p. 18): ``"norms"``, the two
#: normalisations' outputs; ``"mla_up_projections"``, multi-head latent attention's queries,
#: keys and values, recomputed from the latent vectors; ``"moe_swiglu"``, the SwiGLU
#: activation and product of a mixture of experts' MLPs, recomputed from the stored
#: up-projections' outputs.
RECOMPUTE_KINDS = ("norms", "mla_up_projections", "moe_swiglu")


def recomputed_kinds_per_layer(kinds, m: ModelSpec, s, b, t, sp, gemm_input_bytes=2.0
                               ) -> dict[str, np.ndarray]:
    """What recomputing the tensor ``kinds`` (:data:`RECOMPUTE_KINDS`) changes in one layer
    on one GPU, averaged over the layers, in the terms of :func:`activation_per_layer_arrays`
    (Korthikanti et al. 2022's bytes per ``sbh``):

    * ``freed_bytes``: the stored activations it frees: the two norm outputs (``4sbh`` at
      the Linear inputs' bytes, outside the tensor-parallel region); MLA's Q, K and V
      (``2 sbh qkv_ratio / t``) less the latent vectors they are recomputed from, which
      are then stored (query latent and key-value latent with its rotary part, at the
      Linear inputs' bytes); in an MoE layer the SwiGLU activation (``2sbf``) and product
      (``2sbf`` at the Linear inputs' bytes), ``f`` the width a token passes through;
    * ``traffic_bytes``: the 16-bit bytes of the memory-bound kernels run again (the
      tensors recomputed), to be priced as the planner prices memory-bound work;
    * ``params``: the weights multiplied again per token (MLA's up-projections: queries
      ``q_lora_rank x heads x qk_head_dim``, keys and values ``kv_lora_rank x heads x
      (qk_nope_head_dim + v_head_dim)``).

    A kind the model does not have (MLA, an MoE layer) changes nothing.
    """
    bad = [k for k in kinds if k not in RECOMPUTE_KINDS]
    if bad:
        raise ValueError(f"recompute kinds: {bad[0]!r} is not one of {RECOMPUTE_KINDS}")
    s, b, t = (np.asarray(x, dtype=float) for x in (s, b, t))
    sbh = s * b * m.hidden
    g = float(gemm_input_bytes) / 2.0
    split_outside = np.where(sp, t, 1.0)
    freed = np.zeros(np.broadcast(s, b, t, sp).shape)
    traffic = np.zeros_like(freed)
    params = 0.0
    if "norms" in kinds:
        freed = freed + 4.0 * g * sbh / split_outside
        traffic = traffic + 4.0 * sbh / split_outside
    if "mla_up_projections" in kinds and m.is_mla:
        shape = activation_shape(m)
        latent = (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim) / m.hidden
        qkv = 2.0 * shape["qkv_ratio"]
        freed = freed + (qkv - 2.0 * g * latent) * sbh / t
        traffic = traffic + qkv * sbh / t
        params = (m.q_lora_rank * m.n_heads * m.qk_head_dim
                  + m.kv_lora_rank * m.n_heads * (m.qk_nope_head_dim + m.v_head_dim))
    if "moe_swiglu" in kinds and m.is_moe and m.gated_mlp:
        f = (m.top_k + m.shared_experts) * m.expert_ffn_hidden / m.hidden
        share = m.moe_layers / m.n_layers
        freed = freed + share * (2.0 + 2.0 * g) * f * sbh / t
        traffic = traffic + share * 4.0 * f * sbh / t
    return {"freed_bytes": freed, "traffic_bytes": traffic, "params": float(params)}


def recompute_code(recompute: str) -> int:
    """The index of ``recompute`` in :data:`RECOMPUTE_MODES` (0 none, 1 selective, 2 full)."""
    return RECOMPUTE_MODES.index(check_choice("recompute", recompute, RECOMPUTE_MODES))


def activation_bytes_per_layer(
    model: str | ModelSpec,
    micro_batch: int,
    seq_len: int | None = None,
    tp: int = 1,
    sp: bool = False,
    recompute: str = "none",
    flash_attention: bool = False,
    recipe: str | PrecisionRecipe = "mixed-adam",
) -> float:
    """Activation bytes one transformer layer keeps for one micro-batch, per GPU.

    Korthikanti et al. 2022 (arXiv 2205.05198), Table 2:

    ==============================  ==========================
    no parallelism                  ``sbh(34 + 5as/h)``
    tensor parallel                 ``sbh(10 + 24/t + 5as/(ht))``
    tensor + sequence parallel      ``sbh(34/t + 5as/(ht))``
    TP + selective recompute        ``sbh(10 + 24/t)``
    TP + SP + selective recompute   ``34 sbh/t``
    full recompute                  ``2sbh`` (``2sbh/t`` with SP)
    ==============================  ==========================

    Grouped-query attention, gated MLPs, experts and FP8 recipes (whose Linear layers
    keep FP8 inputs, ``recipe``) are included as described in
    :func:`activation_per_layer_arrays`.
    """
    check_bool("sp", sp)
    check_bool("flash_attention", flash_attention)
    m = catalog.model(model)
    micro_batch = check_int("micro_batch", micro_batch)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    tp = check_int("tp", tp)
    layout.check(layout.Plan(tp=tp), layout.Facts.of(m), only=("tp_heads",))
    code = recompute_code(recompute)
    return float(
        activation_per_layer_arrays(
            s, micro_batch, m.hidden, m.n_heads, tp, bool(sp), code, bool(flash_attention),
            gemm_input_bytes=get_recipe(recipe).gemm_input_bytes, **activation_shape(m),
        )
    )


def activation_modes(
    model: str | ModelSpec, micro_batch: int = 1, seq_len: int | None = None, tp: int = 8
) -> dict[str, float]:
    """Bytes per layer under each row of Korthikanti et al. Table 2, for one model and ``tp``.

    Keys: ``"no parallelism"`` (t = 1), ``"tensor parallel"``, ``"tensor + sequence
    parallel"``, ``"TP + selective recompute"``, ``"TP + SP + selective recompute"``,
    ``"full recompute"``.
    """
    rows = {
        "no parallelism": dict(tp=1),
        "tensor parallel": dict(tp=tp),
        "tensor + sequence parallel": dict(tp=tp, sp=True),
        "TP + selective recompute": dict(tp=tp, recompute="selective"),
        "TP + SP + selective recompute": dict(tp=tp, sp=True, recompute="selective"),
        "full recompute": dict(tp=tp, recompute="full"),
    }
    return {label: activation_bytes_per_layer(model, micro_batch, seq_len, **kw)
            for label, kw in rows.items()}


def activation_bytes(
    model: str | ModelSpec,
    micro_batch: int,
    seq_len: int | None = None,
    tp: int = 1,
    sp: bool = False,
    recompute: str = "none",
    *,
    pp: int = 1,
    flash_attention: bool = False,
    recipe: str | PrecisionRecipe = "mixed-adam",
) -> float:
    """Activation bytes per GPU for one micro-batch over all layers of one pipeline stage.

    ``n_layers / pp`` layers times :func:`activation_bytes_per_layer`. Under
    1F1B the first stage holds ``pp`` micro-batches in flight (Korthikanti et
    al. Sec. 4.2.3, so the first stage stores ``L`` layers' worth in total);
    :func:`training_memory` applies that factor.
    """
    check_bool("sp", sp)
    check_bool("flash_attention", flash_attention)
    m = catalog.model(model)
    pp = check_int("pp", pp)
    layout.check(layout.Plan(pp=pp), layout.Facts.of(m), only=("pp_layers",))
    per_layer = activation_bytes_per_layer(
        m, micro_batch, seq_len, tp, sp, recompute, flash_attention, recipe
    )
    return per_layer * m.n_layers / pp


# =========================================================================== the whole GPU
@dataclass(frozen=True)
class MemoryBreakdown:
    """Memory per GPU for one training configuration (bytes), and whether it fits."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    capacity: float
    params_per_gpu: float
    in_flight: int

    @property
    def total(self) -> float:
        """Everything this GPU holds."""
        return self.weights + self.grads + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        """Whether the total is within the GPU's capacity."""
        return self.total <= self.capacity

    @property
    def headroom(self) -> float:
        """Capacity minus total: negative when it does not fit."""
        return self.capacity - self.total

    def gib(self) -> dict[str, float]:
        """Every part in GiB, for tables and charts."""
        return {
            "weights": self.weights / GIB,
            "grads": self.grads / GIB,
            "optimizer": self.optimizer / GIB,
            "activations": self.activations / GIB,
            "total": self.total / GIB,
            "capacity": self.capacity / GIB,
        }

    def verdict(self) -> str:
        """``"fits, 12.3 GiB to spare"`` or ``"does not fit by 4.5 GiB"``."""
        gap = abs(self.headroom) / GIB
        return f"fits, {gap:.1f} GiB to spare" if self.fits else f"does not fit by {gap:.1f} GiB"


def stage_params_arrays(parts: dict[str, int], n_layers: int, tied: bool, tp, pp,
                        stage_layers=None, last_layers=None, *, which: str = "busiest"):
    """Parameters per GPU of a pipeline stage (array-friendly kernel of :func:`stage_params`;
    ``parts`` from :func:`param_breakdown`).

    ``stage_layers`` is the number of layers on the first stage (default ``n_layers / pp``)
    and ``last_layers`` on the last (default the same; an uneven split gives them fewer).
    ``which``: ``"first"`` (layers, embedding, learned positions), ``"last"`` (layers, final
    norm, output layer), or ``"busiest"`` (the larger; one stage holds everything at pp = 1).
    """
    tp, pp = np.asarray(tp, dtype=float), np.asarray(pp, dtype=float)
    stage_layers = n_layers / pp if stage_layers is None else np.asarray(stage_layers)
    last_layers = stage_layers if last_layers is None else np.asarray(last_layers)
    per_layer = parts["layers"] / n_layers
    first = per_layer * stage_layers + parts["embedding"] + parts["positions"]
    head = parts["output"] if not tied else np.where(pp > 1, parts["embedding"], 0)
    last = per_layer * last_layers + parts["final_norm"] + head
    single = first + parts["final_norm"] + parts["output"]
    picked = {"first": first, "last": last, "busiest": np.maximum(first, last)}[which]
    return np.where(pp == 1, single, picked) / tp


def stage_params(model: str | ModelSpec, tp: int = 1, pp: int = 1) -> float:
    """Parameters held by one GPU of the busiest pipeline stage, before data parallelism.

    Layers split evenly over ``pp`` stages and every matrix over ``tp``; the
    first stage also holds the embedding (and learned positions), the last the
    final norm and output layer (a second copy of the embedding when tied and
    ``pp > 1``, as Megatron-LM does). Returns the larger of first and last.
    """
    m = catalog.model(model)
    return float(stage_params_arrays(param_breakdown(m), m.n_layers, m.tied_embeddings,
                               check_int("tp", tp), check_int("pp", pp)))


def training_memory(
    model: str | ModelSpec,
    gpu: str | GPU | None = None,
    *,
    micro_batch: int = 1,
    seq_len: int | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero_stage: int = 0,
    recipe: str | PrecisionRecipe = "mixed-adam",
    recompute: str = "none",
    sp: bool = False,
    flash_attention: bool = False,
    in_flight: int | None = None,
) -> MemoryBreakdown:
    """Memory per GPU for training ``model`` with a parallel layout on ``gpu``.

    * model state: ZeRO (arXiv 1910.02054) per :func:`model_state_breakdown`, for
      the parameters of the busiest stage (:func:`stage_params`);
    * activations: Korthikanti et al. (arXiv 2205.05198) per
      :func:`activation_bytes`, times the micro-batches in flight: ``pp`` on the
      first stage under 1F1B (Sec. 4.2.3), 1 without pipelining.

    Parameters
    ----------
    model, gpu
        Catalog names or specs. Without a GPU, capacity is reported as infinite.
    micro_batch, seq_len
        Sequences per micro-batch and tokens per sequence (default: the model's).
    tp, pp, dp
        Tensor-, pipeline- and data-parallel sizes.
    zero_stage
        0-3.
    recipe
        Bytes-per-parameter convention, a name of :data:`RECIPES`; an FP8 recipe also
        stores the Linear layers' inputs in FP8, and needs a GPU with FP8 tensor cores
        (:func:`check_precision`).
    recompute
        ``"none"``, ``"selective"`` or ``"full"``.
    sp, flash_attention
        Sequence parallelism; flash attention (no stored score matrices).
    in_flight
        Micro-batches whose activations are held at once (default ``pp``).
    """
    check_bool("sp", sp)
    check_bool("flash_attention", flash_attention)
    m = catalog.model(model)
    g = catalog.gpu(gpu) if gpu is not None else None
    if g is not None:
        check_precision(recipe, g)
    tp = check_int("tp", tp)
    pp = check_int("pp", pp)
    dp = check_int("dp", dp)
    layout.check(layout.Plan(tp=tp, pp=pp, dp=dp), layout.Facts.of(m),
                 only=("tp_heads", "tp_kv_heads", "pp_layers"))
    n_flight = check_int("in_flight", in_flight if in_flight is not None else pp)
    params = stage_params(m, tp, pp)
    state = model_state_breakdown(params, zero_stage, dp, recipe)
    act = activation_bytes(
        m, micro_batch, seq_len, tp, sp, recompute, pp=pp, flash_attention=flash_attention,
        recipe=recipe,
    )
    return MemoryBreakdown(
        weights=state.weights,
        grads=state.grads,
        optimizer=state.optimizer,
        activations=act * n_flight,
        capacity=g.hbm_bytes if g is not None else float("inf"),
        params_per_gpu=params,
        in_flight=n_flight,
    )
