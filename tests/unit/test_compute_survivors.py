"""Surviving mutants of ``scaleout.compute``, killed with values worked by hand from the
sources the docstrings cite, datasheet peaks, or properties that must hold.

- ``forward_flops``: PaLM's ``tokens (2N + 4 l h s)`` (arXiv 2204.02311, App. B) by hand;
- ``active_params``: leaving out the input embedding removes exactly ``V h`` from an untied
  model and nothing from a tied one (its table is the output layer);
- ``matmul_peak_flops``: H100 SXM's datasheet peaks (989 dense BF16, 1979 dense FP8 TFLOP/s,
  data/gpus.toml) under the default and FP8 recipes; an FP32 recipe is refused;
- ``flops_by_format``: Mixtral 8x7B's Linear FLOPs (attention projections, two experts of
  three matrices) and its BF16 rest (output layer, router, attention core) by hand;
- ``linear_io_per_token``: DeepSeek-V3's MLA and MoE Linears and GPT-3's plain MLP, summed by
  hand, and MLA without query compression;
- ``matmul_seconds``: the default recipe, ``efficiency`` dividing, a Python float for a scalar
  and an array for an array;
- ``megatron_flops_per_token``: Megatron-LM's counter (``num_floating_point_operations``)
  worked layer by layer for GPT-3, DeepSeek-V3 (with and without query compression, with an
  MTP module) and small MoE models whose last layer is, or is not, an MoE layer.

See ``tests/MUTATION.md``.
"""

import numpy as np
import pytest
from scaleout import catalog, compute

H100 = "H100-SXM5-80GB"


# ---------------------------------------------------------------- forward_flops
def test_forward_flops_palm_by_hand():
    """10 tokens, N = 100, l = 2, h = 64, s = 128: 10 (200 + 4·2·64·128) = 657,360."""
    assert compute.forward_flops(10, 100, 2, 64, 128) == 10 * (200 + 65536) == 657360
    # attention grows with the sequence: doubling s adds 4 l h s per token again
    assert compute.forward_flops(1, 0, 1, 64, 256) == 2 * compute.forward_flops(1, 0, 1, 64, 128)


# ---------------------------------------------------------------- active_params
def test_active_params_input_embedding_untied_and_tied():
    """Untied (gpt-oss-120b): the input table is V h = 201,088 × 2,880; tied (GPT-3): the
    table is the output layer, which a token multiplies, so nothing is left out."""
    with_emb = compute.active_params("gpt-oss-120b")
    without = compute.active_params("gpt-oss-120b", input_embedding=False)
    assert with_emb - without == 201088 * 2880
    assert compute.active_params("gpt3-175b", input_embedding=False) == \
        compute.active_params("gpt3-175b")


# ---------------------------------------------------------------- matmul_peak_flops
def test_matmul_peak_flops_datasheet():
    """NVIDIA H100 SXM datasheet (data/gpus.toml): 989 TFLOP/s dense BF16, 1979 dense FP8."""
    assert compute.matmul_peak_flops(H100) == 989e12  # default recipe: mixed-adam, BF16
    assert compute.matmul_peak_flops(H100, "fp8-te") == 1979e12
    with pytest.raises(ValueError, match="FP32"):
        compute.matmul_peak_flops(H100, "fp32-adam")
    with pytest.raises(ValueError, match="FP32"):
        compute.matmul_peak_flops(H100, "fp32-sgd-momentum")


# ---------------------------------------------------------------- flops_by_format
# Mixtral 8x7B (arXiv 2401.04088, Table 1): l = 32, h = 4096, a = 32 heads of 128, 8 KV
# heads, 8 experts of SwiGLU width 14336, top-2, V = 32000; no biases, RMSNorm.
MIX_ATTN = 2 * 4096 * 4096 + 2 * 4096 * (8 * 128)  # Q and out h×h, K and V h×1024
MIX_EXPERT = 3 * 4096 * 14336
MIX_LINEAR = 32 * (MIX_ATTN + 2 * MIX_EXPERT)       # top-2 experts per token
MIX_ROUTER = 4096 * 8


def _mixtral_bf16(s):
    core = 32 * 2 * s * 32 * (128 + 128)  # per layer 2 s a d for QK^T and 2 s a d for AV
    return 6.0 * 32000 * 4096 + 6.0 * 32 * MIX_ROUTER + 3.0 * core


def test_flops_by_format_mixtral_by_hand():
    """FP8 recipe: 6 FLOPs per Linear weight a token uses in FP8; output layer, router and
    attention's core (three passes) in BF16. Norms and router are no Linear FLOPs."""
    split = compute.flops_by_format("mixtral-8x7b", 4096, "fp8-te")
    assert split["fp8"] == pytest.approx(6.0 * MIX_LINEAR, rel=1e-12)
    assert split["bf16"] == pytest.approx(_mixtral_bf16(4096), rel=1e-12)
    assert 6.0 * MIX_LINEAR == 75698798592


def test_flops_by_format_default_is_16_bit():
    """The default recipe (mixed-adam) runs everything in BF16."""
    split = compute.flops_by_format("mixtral-8x7b", 4096)
    assert split["fp8"] == 0.0
    assert split["bf16"] == pytest.approx(6.0 * MIX_LINEAR + _mixtral_bf16(4096), rel=1e-12)


# ---------------------------------------------------------------- linear_io_per_token
def test_linear_io_deepseek_v3_by_hand():
    """DeepSeek-V3: h 7168, 128 heads, q rank 1536, kv rank 512, rope 64, nope 128, v 128.
    Attention in: q down h, q up 1536, kv down h, kv up 512, out 128·128 = 32,768;
    out: 1536 + 128·192 + (512 + 64) + 128·(128 + 128) + 7168 = 66,624.
    3 dense SwiGLU layers (f 18432): in h + f = 25,600, out 2f + h = 44,032; 58 MoE layers,
    8 routed + 1 shared of 2048: in 9 (h + 2048) = 82,944, out 9 (4096 + h) = 101,376."""
    io = compute.linear_io_per_token("deepseek-v3")
    assert io["inputs"] == pytest.approx(32768 + (3 * 25600 + 58 * 82944) / 61, rel=1e-12)
    assert io["outputs"] == pytest.approx(66624 + (3 * 44032 + 58 * 101376) / 61, rel=1e-12)


def test_linear_io_mla_without_query_compression():
    """q_lora_rank 0: queries by one h × a(nope + rope) Linear: attention in 2h + 512 + 128·128,
    out 128·192 + 576 + 128·256 + h."""
    m = catalog.model("deepseek-v3").replace(q_lora_rank=0)
    io = compute.linear_io_per_token(m)
    assert io["inputs"] == pytest.approx(2 * 7168 + 512 + 16384
                                         + (3 * 25600 + 58 * 82944) / 61, rel=1e-12)
    assert io["outputs"] == pytest.approx(24576 + 576 + 32768 + 7168
                                          + (3 * 44032 + 58 * 101376) / 61, rel=1e-12)


def test_linear_io_gpt3_plain_mlp():
    """GPT-3 175B (h 12288, 96 heads of 128, MLP 4h not gated): QKV h in, 3h out; out-proj h
    in, h out; MLP h + 4h in, 4h + h out."""
    io = compute.linear_io_per_token("gpt3-175b")
    h = 12288
    assert io == {"inputs": 2 * h + h + 4 * h, "outputs": 3 * h + h + 4 * h + h}


# ---------------------------------------------------------------- matmul_seconds
def test_matmul_seconds_default_efficiency_and_types():
    """Default recipe (BF16): F / 989e12 per token; efficiency 0.5 takes twice as long; a
    scalar comes back a Python float, an array an array of the same shape."""
    per_token = compute.flops_by_format("mixtral-8x7b", 4096)["bf16"]
    t = compute.matmul_seconds("mixtral-8x7b", 1000, H100, seq_len=4096)
    assert t == pytest.approx(1000 * per_token / 989e12, rel=1e-12)
    assert type(t) is float
    half = compute.matmul_seconds("mixtral-8x7b", 1000, H100, seq_len=4096, efficiency=0.5)
    assert half == pytest.approx(2 * t, rel=1e-12)
    arr = compute.matmul_seconds("mixtral-8x7b", np.array([1000, 2000, 3000]), H100,
                                 seq_len=4096)
    assert isinstance(arr, np.ndarray) and arr.shape == (3,)
    np.testing.assert_allclose(arr, [t, 2 * t, 3 * t], rtol=1e-12)
    one = compute.matmul_seconds("mixtral-8x7b", np.array([1000]), H100, seq_len=4096)
    assert isinstance(one, np.ndarray) and one.shape == (1,)


# ---------------------------------------------------------------- megatron_flops_per_token
def _megatron_by_hand(m, s, mtp=0, tp=1):
    """Megatron-LM's ``num_floating_point_operations`` per token, layer by layer: 3 passes ×
    2 FLOPs per weight of each matrix a token multiplies; causal attention core as half the
    score matrix; MTP modules as extra layers like the last one plus a 2h → h projection and
    three norms; output layer over V padded to a multiple of 128 tp."""
    h, a = m.hidden, m.n_heads
    mats = 3 if m.gated_mlp else 2
    kinds = [m.layer_is_moe(i) for i in range(m.n_layers)]
    kinds += [kinds[-1]] * mtp
    fwd = 0
    for is_moe in kinds:
        if is_moe:
            fwd += 2 * h * mats * m.expert_ffn_hidden * (m.top_k + m.shared_experts)
        else:
            fwd += 2 * h * mats * m.ffn
        if m.is_mla:
            nope, rope, v = m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
            rq, rkv = m.q_lora_rank, m.kv_lora_rank
            q = (h * rq + rq + rq * a * (nope + rope)) if rq else h * a * (nope + rope)
            kv = h * rkv + rkv + rkv * a * (nope + v) + h * rope
            fwd += 2 * (q + kv + a * v * h)
            fwd += 2 * (s / 2) * a * (nope + rope) + 2 * (s / 2) * a * v
        else:
            d = m.head_dim
            fwd += 2 * (h * a * d + 2 * h * m.kv_heads * d + a * d * h)
            fwd += 2 * 2 * (s / 2) * a * d
    fwd += mtp * 2 * (2 * h * h + 3 * h)
    padded = -(-m.vocab // (128 * tp)) * 128 * tp
    fwd += (mtp + 1) * 2 * h * padded
    return 3 * fwd


def test_megatron_gpt3_eq3_causal():
    """GPT-3 175B: 3 (24 l h² + 2 l s h + 2 h V'), V' = 50304 (50257 padded to 128): Megatron
    Eq. 3's model FLOPs with the causal half of the score matrix."""
    l, h, s = 96, 12288, 2048
    expected = 3 * (24 * l * h * h + 2 * l * s * h + 2 * h * 50304)
    assert compute.megatron_flops_per_token("gpt3-175b") == pytest.approx(expected, rel=1e-12)
    assert _megatron_by_hand(catalog.model("gpt3-175b"), s) == pytest.approx(expected, rel=1e-12)
    # tp = 2 pads to 256: 50432
    assert compute.megatron_flops_per_token("gpt3-175b", tp=2) == pytest.approx(
        expected + 6 * h * (50432 - 50304), rel=1e-12)


def test_megatron_dense_with_mtp():
    """A dense model's MTP module is one more dense layer plus its projection and norms."""
    m = catalog.model("llama3-8b")
    got = compute.megatron_flops_per_token(m, 8192, mtp_layers=1)
    assert got == pytest.approx(_megatron_by_hand(m, 8192, mtp=1), rel=1e-12)


@pytest.mark.parametrize("rq", [1536, 0])
@pytest.mark.parametrize("mtp", [0, 1])
def test_megatron_deepseek_v3_mla(rq, mtp):
    """DeepSeek-V3's MLA term by term (with and without query compression), MoE layers of
    8 routed + 1 shared expert, and its one MTP module."""
    m = catalog.model("deepseek-v3").replace(q_lora_rank=rq)
    got = compute.megatron_flops_per_token(m, 4096, mtp_layers=mtp)
    assert got == pytest.approx(_megatron_by_hand(m, 4096, mtp=mtp), rel=1e-12)


def _small_moe(n_layers):
    return catalog.model("mixtral-8x7b").replace(
        name="small-moe", n_layers=n_layers, hidden=64, n_heads=4, n_kv_heads=2, vocab=1000,
        seq_len=32, ffn_hidden=256, experts=4, top_k=2, shared_experts=1,
        expert_ffn_hidden=32, moe_layer_step=3, first_dense_layers=0,
        params_published=None, params_active_published=None)


@pytest.mark.parametrize("n_layers, last_is_moe", [(6, True), (5, False)])
@pytest.mark.parametrize("mtp", [0, 1])
def test_megatron_mtp_takes_the_last_layers_kind(n_layers, last_is_moe, mtp):
    """Experts every third layer: of 6 layers the 3rd and 6th are MoE (the last is), of 5
    only the 3rd (the last is dense). An MTP module is a layer of the last one's kind."""
    m = _small_moe(n_layers)
    assert m.layer_is_moe(n_layers - 1) is last_is_moe
    got = compute.megatron_flops_per_token(m, 32, mtp_layers=mtp)
    assert got == pytest.approx(_megatron_by_hand(m, 32, mtp=mtp), rel=1e-12)
    # by hand, the MLPs alone: dense 2·64·3·256, MoE 2·64·3·32·(2 + 1)
    dense_mlp, moe_mlp = 2 * 64 * 3 * 256, 2 * 64 * 3 * 32 * 3
    n_moe = (2 if last_is_moe else 1) + (mtp if last_is_moe else 0)
    n_dense = n_layers + mtp - n_moe
    no_mlp = m.replace(ffn_hidden=1, expert_ffn_hidden=1)
    mlp_part = (compute.megatron_flops_per_token(m, 32, mtp_layers=mtp)
                - compute.megatron_flops_per_token(no_mlp, 32, mtp_layers=mtp))
    assert mlp_part == pytest.approx(
        3 * (n_dense * (dense_mlp - 2 * 64 * 3) + n_moe * (moe_mlp - 2 * 64 * 3 * 3)), rel=1e-12)
