"""Surviving mutants of ``scaleout.memory``'s per-layer pieces, killed by hand calculations.

Checks :func:`scaleout.memory.layer_params` (MLA without query compression, as in
DeepSeek-V2-Lite; DeepSeek-V3's router bias; a dense model's empty MoE parts),
:func:`scaleout.memory.layer_tensors` (GPT-3 175B with biases, Llama 3 8B gated, every
tensor written out) and :func:`scaleout.memory.recomputed_kinds_per_layer` (DeepSeek-V3's
recomputed norms, MLA up-projections and MoE SwiGLU, report arXiv 2412.19437 Sec. 3.2.3,
at tensor parallelism 2 with and without sequence parallelism), against values worked out
from the models' published shapes.
"""
import numpy as np
import pytest
from scaleout import catalog, memory


# --------------------------------------------------------------------------- layer_params
def test_mla_without_query_compression_counts_full_query_projection():
    """DeepSeek-V2-Lite's attention (arXiv 2405.04434, Appendix: h 2048, 16 heads, kv_lora_rank
    512, no query compression, nope 128, rope 64, v 128): queries are one h x a(nope+rope)
    matrix (its MoE layers are left out: only the attention count is checked)."""
    m = catalog.model({
        "n_layers": 27, "hidden": 2048, "n_heads": 16, "vocab": 102400, "seq_len": 4096,
        "ffn_hidden": 10944, "gated_mlp": True, "biases": False, "tied_embeddings": False,
        "learned_positions": False, "kv_lora_rank": 512, "q_lora_rank": 0,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    })
    q = 2048 * 16 * (128 + 64)                                   # 6,291,456
    kv = 2048 * (512 + 64) + 512 + 512 * 16 * (128 + 128)        # 1,179,648 + 512 + 2,097,152
    out = 16 * 128 * 2048                                        # 4,194,304
    assert memory.layer_params(m)["attention"] == q + kv + out == 13_763_072


def test_deepseek_v3_router_has_one_bias_per_expert():
    """DeepSeek-V3 (report Sec. 2.1.2, Sec. 4.2): h 7168, 256 routed experts, a bias per
    expert for auxiliary-loss-free balancing: 7168 x 256 + 256."""
    assert memory.layer_params("deepseek-v3")["router"] == 7168 * 256 + 256 == 1_835_264


def test_dense_model_has_no_expert_or_router():
    """Llama 3 8B is dense: no expert, no router, exactly zero parameters for both."""
    p = memory.layer_params("llama3-8b")
    assert p["expert"] == 0
    assert p["router"] == 0
    assert p["dense_mlp"] == 3 * 4096 * 14336


# --------------------------------------------------------------------------- layer_tensors
def test_gpt3_layer_tensors_with_biases():
    """GPT-3 175B (h 12288, 4h MLP, biases, LayerNorm): the 16 tensors of one layer, and
    their sum is Megatron's 12h^2 + 13h per layer (Narayanan et al. 2021, Eq. 2)."""
    h = 12288
    expected = (h, h,                   # LayerNorm weight, bias
                3 * h * h, 3 * h,       # fused QKV and bias
                h * h, h,               # attention output and bias
                h, h,                   # second LayerNorm
                4 * h * h, 4 * h,       # MLP up and bias
                4 * h * h, h)           # MLP down and bias
    got = memory.layer_tensors("gpt3-175b")
    assert got == expected
    assert sum(got) == 12 * h * h + 13 * h


def test_llama3_8b_layer_tensors_gated_without_biases():
    """Llama 3 8B (h 4096, 8 KV heads of 128, SwiGLU width 14336, RMSNorm, no biases)."""
    h, f, h_kv = 4096, 14336, 8 * 128
    expected = (h, h * (h + 2 * h_kv), h * h, h, 2 * h * f, f * h)
    assert memory.layer_tensors("llama3-8b") == expected


# --------------------------------------------------------------------------- recomputed kinds
V3 = "deepseek-v3"
S, B, T = 4096, 2, 2
H = 7168


def _v3():
    return catalog.model(V3)


def test_norms_default_is_16_bit_and_split_by_sequence_parallelism():
    """Recomputing the two RMSNorm outputs frees 2 x 2sbh bytes (16-bit Linear inputs, the
    default), and the same is the traffic; sequence parallelism splits them over t."""
    r = memory.recomputed_kinds_per_layer(["norms"], _v3(), S, B, T, True)
    assert float(r["freed_bytes"]) == pytest.approx(4 * S * B * H / T)
    assert float(r["traffic_bytes"]) == pytest.approx(4 * S * B * H / T)
    r = memory.recomputed_kinds_per_layer(["norms"], _v3(), S, B, T, False)
    assert float(r["freed_bytes"]) == pytest.approx(4 * S * B * H)
    assert float(r["traffic_bytes"]) == pytest.approx(4 * S * B * H)
    assert r["params"] == 0.0


def test_norms_fp8_inputs_free_half():
    """FP8 Linear inputs (1 byte): the stored norm outputs are half as large; the kernels
    recomputed still move 16-bit tensors."""
    r = memory.recomputed_kinds_per_layer(["norms"], _v3(), S, B, T, True, 1.0)
    assert float(r["freed_bytes"]) == pytest.approx(2 * S * B * H / T)
    assert float(r["traffic_bytes"]) == pytest.approx(4 * S * B * H / T)


def test_mla_up_projections_by_hand():
    """DeepSeek-V3's MLA per token: Q 128 x (128 + 64), K 128 x (128 + 64), V 128 x 128
    values, 2 bytes each, split over t heads-wise; the stored latents (1536 + 512 + 64)
    at 2 bytes are what stays. Weights multiplied again: 1536 x 128 x 192 + 512 x 128 x 256."""
    qkv = 128 * 192 + 128 * 192 + 128 * 128          # 65,536 values per token
    latent = 1536 + 512 + 64
    r = memory.recomputed_kinds_per_layer(["mla_up_projections"], _v3(), S, B, T, False)
    assert float(r["traffic_bytes"]) == pytest.approx(2 * qkv * S * B / T)
    assert float(r["freed_bytes"]) == pytest.approx((2 * qkv - 2 * latent) * S * B / T)
    assert r["params"] == 1536 * 128 * 192 + 512 * 128 * 256 == 54_525_952


def test_moe_swiglu_by_hand():
    """DeepSeek-V3: 58 of 61 layers are MoE (first 3 dense); a token passes 8 routed + 1
    shared experts of width 2048, f = 18432 channels. Freed: the SwiGLU activation (2 bytes)
    and product (2 bytes at 16-bit Linear inputs); traffic 4 bytes per channel; all split
    over t."""
    f = 9 * 2048
    share = 58 / 61
    r = memory.recomputed_kinds_per_layer(["moe_swiglu"], _v3(), S, B, T, True)
    assert float(r["freed_bytes"]) == pytest.approx(share * 4 * f * S * B / T)
    assert float(r["traffic_bytes"]) == pytest.approx(share * 4 * f * S * B / T)


def test_kinds_add_up():
    """All three kinds together are the sum of the three hand values."""
    qkv, latent, f, share = 65_536, 2112, 18_432, 58 / 61
    r = memory.recomputed_kinds_per_layer(list(memory.RECOMPUTE_KINDS), _v3(), S, B, T, False)
    freed = 4 * S * B * H + (2 * qkv - 2 * latent) * S * B / T + share * 4 * f * S * B / T
    traffic = 4 * S * B * H + 2 * qkv * S * B / T + share * 4 * f * S * B / T
    assert float(r["freed_bytes"]) == pytest.approx(freed)
    assert float(r["traffic_bytes"]) == pytest.approx(traffic)


@pytest.mark.parametrize("which", ["s", "b", "t", "sp"])
def test_nothing_recomputed_keeps_the_inputs_shape(which):
    """With no kind that applies (none asked; MLA on a model without it) the results are
    zeros broadcast to the shape of the inputs, whichever argument is the array."""
    args = {"s": 4096.0, "b": 1.0, "t": 2.0, "sp": True}
    args[which] = np.array([False, True]) if which == "sp" else np.array([1.0, 4.0])
    for kinds, model in (((), _v3()), (["mla_up_projections"], catalog.model("llama3-8b"))):
        r = memory.recomputed_kinds_per_layer(kinds, model, args["s"], args["b"], args["t"],
                                              args["sp"])
        assert np.shape(r["freed_bytes"]) == (2,)
        assert np.shape(r["traffic_bytes"]) == (2,)
        assert np.all(r["freed_bytes"] == 0) and np.all(r["traffic_bytes"] == 0)
