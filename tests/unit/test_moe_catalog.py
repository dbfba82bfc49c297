"""Mixtures of experts and MLA in the catalog: counts against the published totals and
actives, FLOPs per token against Megatron-Core's counter as NVIDIA's benchmark tables
print it, the FP8 recipes, and bad shapes refused."""

from __future__ import annotations

import math

import pytest
from scaleout import catalog, compute, memory

MOE = ["deepseek-v3", "mixtral-8x7b", "mixtral-8x22b", "qwen3-235b-a22b", "qwen3-30b-a3b",
       "gpt-oss-120b", "gpt-oss-20b"]


def _printed(value: float, printed: float) -> bool:
    """``value`` agrees with ``printed`` to the digits printed, rounded or truncated (model
    cards do both: Qwen3-30B-A3B's 3.35B activated prints as 3.3B)."""
    text = f"{printed:.6g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    step = 10.0 ** -decimals
    return (math.isclose(round(value, decimals), printed, rel_tol=1e-9)
            or math.isclose(math.floor(value / step + 1e-9) * step, printed, rel_tol=1e-9))


@pytest.mark.parametrize("name", MOE)
def test_total_parameters_match_the_published_total(name):
    m = catalog.model(name)
    assert m.is_moe
    assert _printed(memory.param_count(m) / 1e9, m.params_published / 1e9), \
        (memory.param_count(m), m.params_published)


@pytest.mark.parametrize("name", MOE)
def test_active_parameters_match_the_published_active(name):
    """gpt-oss's card counts active parameters without the input embedding (a lookup); the
    others count it (see each entry's sources.params_active_published)."""
    m = catalog.model(name)
    with_embedding = not name.startswith("gpt-oss")
    active = compute.active_params(m, input_embedding=with_embedding)
    assert _printed(active / 1e9, m.params_active_published / 1e9), active
    assert active < memory.param_count(m) / 3


def test_hand_counts_of_mixtral_and_deepseek():
    """Two hand calculations from the papers' shapes, independent of layer_params."""
    h, f, kv = 4096, 14336, 1024
    layer = 2 * h * h + 2 * h * kv + 8 * 3 * h * f + h * 8 + 2 * h
    assert memory.param_count("mixtral-8x7b") == 32 * layer + 2 * 32000 * h + h
    assert compute.active_params("mixtral-8x7b") == (32 * (layer - 6 * 3 * h * f)
                                                    + 2 * 32000 * h + h)
    # DeepSeek-V3's MLA (h 7168, 128 heads, ranks 1536/512, dims 128+64 / 128)
    h, a = 7168, 128
    mla = (h * 1536 + 1536 + 1536 * a * 192 + h * 576 + 512 + 512 * a * 256 + a * 128 * h)
    assert memory.layer_params("deepseek-v3")["attention"] == mla
    assert catalog.model("deepseek-v3").moe_layers == 58


def test_dense_models_are_unchanged_by_the_generalisation():
    for m in catalog.models():
        if not m.is_moe:
            assert compute.active_params(m) == memory.param_count(m)
            assert compute.attention_flops_per_token(m) == 4 * m.n_layers * m.hidden * m.seq_len


# --------------------------------------------------------------------- Megatron's FLOP counter
BRIDGE = catalog.published("megatron_bridge_perf_2511")["run"]
#: rows whose model the catalog holds with the same settings as NVIDIA's recipes (DeepSeek-V3
#: without MTP, Qwen3-MoE, Llama 3)
COUNTED = [r for r in BRIDGE if r["model"] in ("deepseek-v3", "qwen3-30b-a3b",
                                                "qwen3-235b-a22b", "llama3-8b", "llama3-70b",
                                                "llama3-405b")
           and r.get("variant", "w/o MTP") != "w/ MTP" and r["release"] == "25.11"]


@pytest.mark.parametrize("run", COUNTED, ids=lambda r: f"{r['system']}-{r['model']}-"
                         f"{r['precision']}")
def test_megatron_count_reproduces_the_published_tflops_per_token(run):
    """NVIDIA prints tokens/s and model TFLOP/s per GPU; their ratio is the counter's FLOPs
    per token. Four printed digits each: agreement within 0.3%."""
    published = run["model_tflops_per_gpu"] * 1e12 / run["tokens_per_s_per_gpu"]
    ours = compute.megatron_flops_per_token(run["model"], run["seq_len"], tp=run["tp"])
    assert ours == pytest.approx(published, rel=3e-3)


def test_deepseek_v3_with_mtp_adds_one_moe_layer_and_a_second_head():
    run = next(r for r in BRIDGE if r.get("variant") == "w/ MTP")
    published = run["model_tflops_per_gpu"] * 1e12 / run["tokens_per_s_per_gpu"]
    ours = compute.megatron_flops_per_token("deepseek-v3", run["seq_len"], mtp_layers=1)
    assert ours == pytest.approx(published, rel=3e-3)
    assert ours > compute.megatron_flops_per_token("deepseek-v3", run["seq_len"])


def test_gpt_oss_rows_are_counted_as_two_matrix_experts_without_windows():
    """The gpt-oss rows do not fit the model (SwiGLU experts, windowed layers): they fit the
    counter run with ``gated_linear_unit`` off and no window, i.e. the benchmark's counter
    under-counts those experts' FLOPs by a third. Shown, not hidden."""
    m = catalog.model("gpt-oss-120b")
    as_counted = m.replace(gated_mlp=False, sliding_window=None, full_attention_every=None)
    for run in (r for r in BRIDGE if r["model"] == "gpt-oss-120b"):
        published = run["model_tflops_per_gpu"] * 1e12 / run["tokens_per_s_per_gpu"]
        assert compute.megatron_flops_per_token(as_counted, run["seq_len"]) == \
            pytest.approx(published, rel=3e-3)
        assert compute.megatron_flops_per_token(m, run["seq_len"]) > 1.05 * published


def test_flops_per_token_is_six_active_plus_attention():
    m = catalog.model("deepseek-v3")
    s = 4096
    attn = sum(2 * s * 128 * (192 + 128) for _ in range(61))
    assert compute.attention_flops_per_token(m, s) == attn
    assert compute.flops_per_token(m, s) == 6 * compute.active_params(m) + 3 * attn
    # 37.6B of 671B weights are active (1/18); with attention, a fourteenth of 6 N_total
    assert compute.flops_per_token(m, s) < 6 * memory.param_count(m) / 13


def test_sliding_window_layers_attend_to_their_window():
    m = catalog.model("gpt-oss-120b")
    assert [m.attends_to(i, 4096) for i in range(4)] == [128, 4096, 128, 4096]
    full = m.replace(sliding_window=None, full_attention_every=None)
    assert compute.attention_flops_per_token(m, 4096) == pytest.approx(
        compute.attention_flops_per_token(full, 4096) * (128 + 4096) / (2 * 4096))


# --------------------------------------------------------------------- precision recipes
def test_recipe_bytes_per_parameter():
    assert memory.RECIPES["fp8-te"].total_bytes == 18  # as megatron-bf16: FP8 is compute
    assert memory.RECIPES["fp8-te-fp8-params"].total_bytes == 17
    assert memory.RECIPES["fp8-te-fp8-params"].param_gather == 1
    ds = memory.RECIPES["fp8-deepseek"]
    assert ds.total_bytes == 2 + 4 + 4 + 2 + 2  # bf16 weights, fp32 grads+master, bf16 moments
    assert ds.dispatch_bytes == pytest.approx(1 + 4 / 128) and ds.combine_bytes == 2


def test_fp8_halves_the_gemm_inputs_of_korthikantis_34sbh():
    """Korthikanti et al. Table 2's 34sbh per layer (t = 1, no recompute, flash): the Linear
    layers' inputs are 2 + 2 + 2 + 8 = 14 sbh of it (the two norm outputs, attention's output,
    the MLP's GeLU output); stored in FP8 they take 7 sbh, so 27 sbh remain."""
    m = catalog.model("gpt3-175b")
    sbh = 2048 * 1 * m.hidden
    bf16 = memory.activation_bytes_per_layer(m, 1, 2048, flash_attention=True)
    fp8 = memory.activation_bytes_per_layer(m, 1, 2048, flash_attention=True, recipe="fp8-te")
    assert bf16 == 34 * sbh and fp8 == 27 * sbh


def test_fp8_on_a_gpu_without_fp8_units_is_refused():
    with pytest.raises(ValueError, match=r"recipe 'fp8-te'.*'A100-SXM4-80GB' has no FP8.*"
                                         r"allowed: .*H100"):
        compute.matmul_peak_flops("A100", "fp8-te")
    with pytest.raises(ValueError, match="no FP8 tensor cores"):
        memory.training_memory("gpt3-175b", "V100", tp=8, pp=8, recipe="fp8-deepseek")
    assert compute.matmul_peak_flops("H100", "fp8-te") == 1979e12
    assert compute.matmul_peak_flops("A100", "megatron-bf16") == 312e12


def test_fp8_speeds_up_only_the_linear_layers():
    split = compute.flops_by_format("deepseek-v3", 4096, "fp8-deepseek")
    whole = compute.flops_by_format("deepseek-v3", 4096, "megatron-bf16")
    assert split["fp8"] + split["bf16"] == pytest.approx(whole["bf16"]) and whole["fp8"] == 0
    t8 = compute.matmul_seconds("deepseek-v3", 1e6, "H800", "fp8-deepseek")
    t16 = compute.matmul_seconds("deepseek-v3", 1e6, "H800", "megatron-bf16")
    expected = 1e6 * (split["fp8"] / 1979e12 + split["bf16"] / 989e12)
    assert t8 == pytest.approx(expected) and 1 < t16 / t8 < 2


# --------------------------------------------------------------------- bad shapes
@pytest.mark.parametrize(("changes", "match"), [
    ({"top_k": 9}, r"top_k=9 must be from 1 to experts=8"),
    ({"top_k": 0}, r"top_k=0 must be from 1 to experts=8"),
    ({"expert_ffn_hidden": None}, "needs expert_ffn_hidden"),
    ({"first_dense_layers": 32}, "first_dense_layers=32 must be below n_layers=32"),
    ({"experts": 0}, "top_k=2 describes a mixture of experts, but experts=0"),
    ({"qk_rope_head_dim": 64}, "describe multi-head latent attention; set kv_lora_rank"),
    ({"kv_lora_rank": 512}, "needs qk_nope_head_dim, qk_rope_head_dim, v_head_dim"),
    ({"hidden": 4100}, "hidden=4100 must be a multiple of n_heads=32"),
])
def test_bad_moe_and_mla_shapes_name_field_value_and_allowed(changes, match):
    with pytest.raises(ValueError, match=match):
        catalog.model("mixtral-8x7b").replace(**changes)


def test_a_head_width_lets_hidden_not_divide_by_heads():
    m = catalog.model("qwen3-30b-a3b")
    assert m.n_heads * m.head_dim == 2 * m.hidden  # 32 heads of 128 on a width of 2048
    assert m.replace(hidden=2050).head_dim == 128
    with pytest.raises(ValueError, match="hidden=2050 must be a multiple of n_heads=32"):
        m.replace(hidden=2050, attention_head_dim=None)
