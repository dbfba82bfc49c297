"""Compute: FLOPs of training, MFU and HFU, and training time.

Sources
-------
* Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
  GPU Clusters Using Megatron-LM" (arXiv 2104.04473), Sec. 5.1: Eq. 3 (FLOPs
  per iteration) and Eq. 4 (end-to-end training time).
* Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models" (arXiv 2205.05198), App. A: the model FLOPs per iteration
  without recomputation, ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))``.
* Chowdhery et al. 2022, "PaLM" (arXiv 2204.02311), Appendix B: model FLOPs
  utilisation (MFU) counts ``6N + 12 L H Q T`` FLOPs per token and no
  recomputation; hardware FLOPs utilisation (HFU) counts what the hardware
  actually ran, recomputation included.
* Hoffmann et al. 2022 ("Chinchilla", arXiv 2203.15556) and Kaplan et al.
  2020: training costs about ``6ND`` FLOPs for N parameters and D tokens.
* Mixtures of experts: a token multiplies only the weights it is routed to, so
  its FLOPs follow the *active* parameters, ``6 N_active`` plus attention
  (Fedus et al. 2022, "Switch Transformers", JMLR 23, Sec. 2; DeepSeek-V3's
  report, arXiv 2412.19437, states 37B activated of 671B). Megatron-Core's own
  counter (:func:`megatron_flops_per_token`) counts the same way, term by term.

Taught in ``notebooks/01_scale_up_limits.ipynb`` and (MFU) the planner notebook.
"""

from __future__ import annotations

from . import catalog
from .catalog import ModelSpec
from .checks import MAX_SECONDS, check_array, check_bool, check_int, check_positive, int_bound
from .memory import (
    PrecisionRecipe,
    check_precision,
    get_recipe,
    layer_params,
    layers_params,
    param_breakdown,
    param_count,
)
from .units import SECONDS_PER_DAY

__all__ = [
    "MEGATRON_VOCAB_MULTIPLE",
    "active_params",
    "attention_flops_per_token",
    "flops_by_format",
    "flops_per_token",
    "forward_flops",
    "hfu",
    "linear_io_per_token",
    "matmul_peak_flops",
    "matmul_seconds",
    "megatron_flops_per_token",
    "megatron_iteration_flops",
    "mfu",
    "training_days",
    "training_flops",
    "training_seconds",
    "utilisation",
]


def forward_flops(tokens, params, n_layers, hidden, seq_len):
    """Forward-pass FLOPs of ``tokens`` tokens: ``tokens (2 params + 4 n_layers hidden seq_len)``.

    PaLM (arXiv 2204.02311), App. B: each parameter costs a multiply and an
    add per token (``2N``); attention's ``Q K^T`` and ``A V`` cost ``4 l h s``
    per token more. The backward pass costs twice the forward (Kaplan et al.
    2020, Sec. 2.1), so a training step is three of these. Array-friendly:
    the planner calls it per layer (``params`` = one layer's, ``n_layers`` = 1)
    and for the output layer (``params = V h``, ``n_layers`` = 0).
    """
    tokens = check_array("tokens", tokens)
    params = check_array("params", params)
    n_layers, hidden, seq_len = (check_array(name, x, maximum=int_bound(name)) for name, x in
                                 (("n_layers", n_layers), ("hidden", hidden),
                                  ("seq_len", seq_len)))
    return tokens * (2 * params + 4 * n_layers * hidden * seq_len)


def utilisation(flops, seconds, n_gpus, peak_flops_per_gpu):
    """Share of peak: ``flops / (seconds n_gpus peak)`` (PaLM App. B's MFU and HFU).

    Array-friendly kernel of :func:`mfu` and :func:`hfu`; which FLOPs are
    counted (the model's alone, or recomputation too) makes it one or the other.
    """
    flops = check_array("flops", flops)
    seconds = check_array("seconds", seconds, allow_zero=False, maximum=MAX_SECONDS)
    n_gpus = check_array("n_gpus", n_gpus, integer=True, minimum=1)
    peak = check_array("peak_flops_per_gpu", peak_flops_per_gpu, allow_zero=False)
    return flops / (seconds * n_gpus * peak)


def active_params(model: str | ModelSpec, *, input_embedding: bool = True) -> int:
    """Parameters one token uses: every weight of a dense model; in a mixture of experts
    the attention, the dense layers, the router and, per MoE layer, its ``top_k`` routed
    and its shared experts (:func:`scaleout.memory.layers_params` with ``active=True``).

    ``input_embedding=False`` leaves out the embedding table, which a token reads one row
    of rather than multiplying: the convention of OpenAI's gpt-oss model card (arXiv
    2508.10925, Table 1: 5.13B active for gpt-oss-120b). DeepSeek-V3 (37B), Mixtral
    (12.9B) and Qwen3 (22B, 3.3B) count it.
    """
    check_bool("input_embedding", input_embedding)
    m = catalog.model(model)
    parts = param_breakdown(m)
    outside = parts["total"] - parts["layers"]
    if not input_embedding:
        outside -= parts["embedding"] if not m.tied_embeddings else 0
    return layers_params(m, active=True) + outside


def attention_flops_per_token(model: str | ModelSpec, seq_len: int | None = None, *,
                              causal: bool = False) -> float:
    """Forward FLOPs per token of attention's two sequence-long products, all layers.

    Per layer ``2 s' a d_qk`` for the scores ``Q K^T`` and ``2 s' a d_v`` for ``A V``,
    where ``s'`` is what a query attends to: the sequence ``s``, or a sliding window
    (:meth:`~scaleout.catalog.ModelSpec.attends_to`). With ``d_qk = d_v = h/a`` this is
    ``4 s h``, PaLM's ``2 × 2 H Q T`` (arXiv 2204.02311, App. B) per layer; MLA's heads
    are wider for the scores (``d_nope + d_rope``) than for the values.

    ``causal=True`` counts only the lower triangle a causal mask keeps, half of a full
    sequence (``s/2``) or, for a window ``w < s``, ``w - w(w - 1)/(2s)`` positions on
    average: the count of Megatron-Core's FLOP counter (:func:`megatron_flops_per_token`).
    """
    check_bool("causal", causal)
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    # layers differ only in what a query attends to: the sequence or a sliding window
    every = m.full_attention_every
    windowed = m.sliding_window is not None and m.sliding_window < s
    n_full = m.n_layers if not windowed else (m.n_layers // every if every else 0)
    total = 0.0
    for n, w in ((n_full, s), (m.n_layers - n_full, m.sliding_window)):
        if n:
            if causal:
                w = s / 2 if w >= s else w - w * (w - 1) / (2 * s)
            total += n * 2 * w * m.n_heads * (m.qk_head_dim + m.head_dim)
    return total


def flops_per_token(
    model: str | ModelSpec,
    seq_len: int | None = None,
    *,
    attention: bool = True,
    recompute: bool = False,
) -> float:
    """Training FLOPs per token: ``6N + 12 l h s`` (PaLM, arXiv 2204.02311, App. B).

    ``6N`` counts the forward (2N) and backward (4N) matrix multiplies over the
    N parameters (embedding included, as PaLM does); ``12 l h s`` the
    attention scores and their use (``Q K^T`` and ``A V``), which grow with the
    sequence length (:func:`attention_flops_per_token`, three passes). With
    ``recompute=True`` a full extra forward pass is added (``8N + 16 l h s``):
    the hardware FLOPs that HFU counts.

    For a mixture of experts N is the *active* parameters (:func:`active_params`):
    ``6 N_active + attention``, as Switch Transformers (Fedus et al. 2022, Sec. 2) and
    DeepSeek-V3's report (arXiv 2412.19437) count compute per token.
    """
    check_bool("attention", attention)
    check_bool("recompute", recompute)
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    passes = 4 if recompute else 3  # forward = 1, backward = 2, recomputed forward = 1
    weights = active_params(m) if m.is_moe else param_count(m)
    core = attention_flops_per_token(m, s) if attention else 0.0
    return passes * (2.0 * weights + core)


def matmul_peak_flops(gpu, recipe: str | PrecisionRecipe = "mixed-adam") -> float:
    """Peak dense FLOP/s of the format a recipe multiplies its Linear layers in.

    FP8 recipes run at the datasheet's dense FP8 rate (``fp8_dense_tflops``, twice the
    BF16 rate on Hopper and Blackwell), the others at the dense BF16 rate. A GPU without
    FP8 tensor cores cannot run an FP8 recipe (:func:`scaleout.memory.check_precision`);
    the catalog records no FP32 rate, so an FP32 recipe is refused too.
    """
    from . import catalog as _catalog

    g = _catalog.gpu(gpu)
    r = check_precision(recipe, g)
    if r.matmul == "fp8":
        return float(g.fp8_dense_tflops) * 1e12
    if r.matmul == "fp32":
        raise ValueError(f"recipe {r.name!r} multiplies in FP32; the catalog records only "
                         "BF16 and FP8 tensor-core rates (data/gpus.toml); allowed: a 16-bit "
                         "or FP8 recipe")
    return g.bf16_dense_flops


def flops_by_format(model: str | ModelSpec, seq_len: int | None = None,
                    recipe: str | PrecisionRecipe = "mixed-adam") -> dict[str, float]:
    """Training FLOPs per token (forward + backward, no recomputation) by the format they
    run in under ``recipe``: ``{"fp8": ..., "bf16": ...}``.

    In an FP8 recipe the Linear layers (attention projections, dense MLPs, the routed and
    shared experts a token uses: ``6`` FLOPs per weight) run in FP8;
    attention's sequence-long products (:func:`attention_flops_per_token`), the output
    layer (``6 V h``) and the router (``6 h E`` per MoE layer) stay in BF16, as in
    Transformer Engine's recipe (TE docs: only ``te.Linear``-family modules run FP8) and
    DeepSeek-V3's (arXiv 2412.19437, Sec. 3.3: "the embedding module, the output head,
    MoE gating modules, normalization operators, and attention operators" keep their
    precision). The input embedding is a lookup, not counted. Under a 16-bit recipe
    everything is ``"bf16"``.
    """
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    r = get_recipe(recipe)
    p = layer_params(m)
    linear = (layers_params(m, active=True) - m.n_layers * p["norms"]
              - m.moe_layers * p["router"])
    high = (6.0 * m.vocab * m.hidden + 6.0 * m.moe_layers * p["router"]
            + 3.0 * attention_flops_per_token(m, s))
    if r.fp8:
        return {"fp8": 6.0 * linear, "bf16": high}
    return {"fp8": 0.0, "bf16": 6.0 * linear + high}


def linear_io_per_token(model: str | ModelSpec) -> dict[str, float]:
    """Values per token that enter the Linear layers (``"inputs"``) and leave them
    (``"outputs"``), summed over a layer's Linears and averaged over the layers; the
    routed experts a token uses counted ``top_k`` times, the shared experts as one MLP of
    their joint width, the router (BF16) left out. What an FP8 recipe quantizes per token:
    each input in the forward pass, each output's gradient in the backward pass.

    Attention: Q, K and V as one Linear (``h`` in, ``a d_q + 2 a_kv d`` out) and the output
    projection (``a d`` in, ``h`` out); multi-head latent attention (DeepSeek-V2 Sec. 2.1)
    as its query down/up, key-value down/up and output projections. MLP: ``h`` in, ``f``
    (``2f`` gated) out, then ``f`` in, ``h`` out.
    """
    m = catalog.model(model)
    h, a = m.hidden, m.n_heads
    if m.is_mla:
        rq, rkv, rope = m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim
        q_out = a * m.qk_head_dim
        ins = (h + rq if rq else h) + h + rkv + a * m.head_dim
        outs = (rq + q_out if rq else q_out) + (rkv + rope) + a * (m.qk_nope_head_dim
                                                                   + m.head_dim) + h
    else:
        ins = h + a * m.head_dim
        outs = a * m.qk_head_dim + 2 * m.kv_heads * m.head_dim + h
    up = 2 if m.gated_mlp else 1

    def mlp(width: float, copies: float) -> tuple[float, float]:
        return copies * (h + width), copies * (up * width + h)

    d_in, d_out = mlp(m.ffn, 1)
    moe_in = moe_out = 0.0
    if m.is_moe:
        fe = m.expert_ffn_hidden or 0
        r_in, r_out = mlp(fe, m.top_k)
        s_in, s_out = mlp(m.shared_experts * fe, 1 if m.shared_experts else 0)
        moe_in, moe_out = r_in + s_in, r_out + s_out
    n = m.n_layers
    return {"inputs": ins + (m.dense_layers * d_in + m.moe_layers * moe_in) / n,
            "outputs": outs + (m.dense_layers * d_out + m.moe_layers * moe_out) / n}


def matmul_seconds(model: str | ModelSpec, tokens, gpu, recipe: str | PrecisionRecipe =
                   "mixed-adam", seq_len: int | None = None, efficiency: float = 1.0):
    """Seconds of a training step's FLOPs for ``tokens`` tokens on one GPU, each part at
    its format's peak times ``efficiency``: ``F_fp8 / P_fp8 + F_bf16 / P_bf16``
    (:func:`flops_by_format`, :func:`matmul_peak_flops`). Array-friendly in ``tokens``.

    FP8 halves only the FP8 part's time: the BF16 part (attention core, output layer)
    bounds the gain (Amdahl's law), more so at long sequences where attention grows.
    """
    from . import catalog as _catalog

    g = _catalog.gpu(gpu)
    eff = check_positive("efficiency", efficiency, maximum=1.0)
    tokens = check_array("tokens", tokens)
    split = flops_by_format(model, seq_len, recipe)
    seconds = split["bf16"] / g.bf16_dense_flops
    if split["fp8"]:
        seconds += split["fp8"] / matmul_peak_flops(g, recipe)
    out = tokens * seconds / eff
    return float(out) if out.ndim == 0 else out


#: Megatron-LM pads the vocabulary to a multiple of 128 × the tensor-parallel size
#: (``--make-vocab-size-divisible-by``, default 128).
MEGATRON_VOCAB_MULTIPLE = 128


def megatron_flops_per_token(model: str | ModelSpec, seq_len: int | None = None, *,
                             mtp_layers: int = 0, tp: int = 1) -> float:
    """Model FLOPs per token as Megatron-Core counts them for its "TFLOP/s per GPU".

    The counter of Megatron Bridge (``training/utils/flop_utils.py``,
    ``num_floating_point_operations``; the same in Megatron-LM's ``training.py``):
    ``3 × 2`` FLOPs (forward and backward multiply-adds) per weight of every matrix a
    token is multiplied by (attention projections, the dense MLPs, the ``top_k`` routed
    and the shared experts, the output layer over the vocabulary padded to a multiple of
    ``128 tp``), no router, no norms, no embedding lookup; causal attention as half the
    score matrix (:func:`attention_flops_per_token` with ``causal=True``); MLA term by
    term (including its two latent norms); ``mtp_layers`` multi-token-prediction modules
    as extra layers of the last kind plus their ``2h²`` projections and norms; no
    recomputation.

    NVIDIA's published benchmark tables (``data/published/megatron_bridge_perf_2511.toml``)
    divide this count by the measured step time, so their ``TFLOP/s ÷ tokens/s`` is this
    number.
    """
    m = catalog.model(model)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    mtp = check_int("mtp_layers", mtp_layers, minimum=0, maximum=m.n_layers)
    tp = check_int("tp", tp)
    h, a, p = m.hidden, m.n_heads, layer_params(m)
    last_is_moe = m.layer_is_moe(m.n_layers - 1)
    dense = m.dense_layers + (0 if last_is_moe else mtp)
    moe = m.moe_layers + (mtp if last_is_moe else 0)
    mats = 3 if m.gated_mlp else 2
    fe = m.expert_ffn_hidden or 0
    mlp = 2 * h * mats * (m.ffn * dense + fe * (m.top_k + m.shared_experts) * moe)
    if m.is_mla:
        rope, nope, v, rq, rkv = (m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim,
                                  m.q_lora_rank, m.kv_lora_rank)
        q = rq * (h + a * (nope + rope) + 1) if rq else h * a * (nope + rope)
        proj = q + rkv * (h + a * (nope + v) + 1) + h * rope + a * v * h
    else:
        q_dim, kv_dim = a * m.head_dim, m.kv_heads * m.head_dim
        proj = h * (q_dim + 2 * kv_dim) + q_dim * h
    layers = m.n_layers + mtp
    core = attention_flops_per_token(m, s, causal=True) * layers / m.n_layers
    padded = -(-m.vocab // (MEGATRON_VOCAB_MULTIPLE * tp)) * MEGATRON_VOCAB_MULTIPLE * tp
    forward = (mlp + 2 * proj * layers + core + 2 * mtp * (3 * h + 2 * h * h)
               + 2 * h * padded * (mtp + 1))
    del p  # the layer's weights as memory holds them are not what Megatron counts
    return 3.0 * forward


def megatron_iteration_flops(
    model: str | ModelSpec,
    global_batch: int,
    seq_len: int | None = None,
    *,
    recompute: bool = True,
) -> float:
    """FLOPs of one training iteration, Megatron-LM Eq. 3 (or its model-FLOPs form).

    ``F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))`` with full activation
    recomputation (Narayanan et al. 2021, arXiv 2104.04473, Sec. 5.1): the layers'
    ``24 B s l h^2 (1 + s/(6h))`` forward FLOPs four times (forward, recomputed
    forward, backward = 2 × forward) and the vocabulary projection's ``2 B s h V``
    three times. This is the count the paper's "achieved teraFLOP/s per GPU" divides
    by the iteration time.

    Without recomputation (``recompute=False``) the layers count three times and the
    projection still three: ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))``, the model
    FLOPs of Korthikanti et al. 2022 (arXiv 2205.05198), App. A.
    """
    check_bool("recompute", recompute)
    m = catalog.model(model)
    B = check_int("global_batch", global_batch)
    s = check_int("seq_len", seq_len if seq_len is not None else m.seq_len)
    l, h, V = m.n_layers, m.hidden, m.vocab
    if recompute:
        return 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    return 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))


def training_flops(params: float, tokens: float) -> float:
    """Total training FLOPs ``6ND`` (Kaplan et al. 2020; Hoffmann et al. 2022, Sec. 3)."""
    check_positive("params", params)
    check_positive("tokens", tokens)
    return 6 * params * tokens


def mfu(
    tokens_per_s: float,
    model: str | ModelSpec,
    n_gpus: int,
    peak_tflops_per_gpu: float,
    seq_len: int | None = None,
) -> float:
    """Model FLOPs utilisation (PaLM, arXiv 2204.02311, App. B).

    Observed tokens per second times the model's FLOPs per token (no
    recomputation), over the cluster's peak FLOP/s.
    """
    check_positive("tokens_per_s", tokens_per_s)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("peak_tflops_per_gpu", peak_tflops_per_gpu)
    per_token = flops_per_token(model, seq_len)
    return float(utilisation(tokens_per_s * per_token, 1.0, n_gpus, peak_tflops_per_gpu * 1e12))


def hfu(
    tokens_per_s: float,
    model: str | ModelSpec,
    n_gpus: int,
    peak_tflops_per_gpu: float,
    seq_len: int | None = None,
    *,
    recompute: bool = True,
) -> float:
    """Hardware FLOPs utilisation: as :func:`mfu`, counting recomputed FLOPs too (PaLM App. B)."""
    check_bool("recompute", recompute)
    check_positive("tokens_per_s", tokens_per_s)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("peak_tflops_per_gpu", peak_tflops_per_gpu)
    per_token = flops_per_token(model, seq_len, recompute=recompute)
    return float(utilisation(tokens_per_s * per_token, 1.0, n_gpus, peak_tflops_per_gpu * 1e12))


def training_seconds(
    params: float, tokens: float, n_gpus: int, tflops_per_gpu: float, recompute: bool = True
) -> float:
    """End-to-end training time, Megatron-LM Eq. 4: ``8 T P / (n X)`` seconds.

    Narayanan et al. 2021 (arXiv 2104.04473), Sec. 5.1: T tokens, P
    parameters, n GPUs, X achieved FLOP/s per GPU. The 8 is 6 (forward and
    backward) plus 2 (the forward recomputed under full activation
    recomputation); without recomputation it is 6.
    """
    check_bool("recompute", recompute)
    check_positive("params", params)
    check_positive("tokens", tokens)
    n_gpus = check_int("n_gpus", n_gpus)
    check_positive("tflops_per_gpu", tflops_per_gpu)
    factor = 8 if recompute else 6
    return factor * tokens * params / (n_gpus * tflops_per_gpu * 1e12)


def training_days(
    params: float, tokens: float, n_gpus: int, tflops_per_gpu: float, recompute: bool = True
) -> float:
    """Eq. 4 in days: GPT-3 (175e9 params, 300e9 tokens, 1024 A100 at 140 TFLOP/s) ≈ 34 days."""
    return training_seconds(params, tokens, n_gpus, tflops_per_gpu, recompute) / SECONDS_PER_DAY
