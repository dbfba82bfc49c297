"""Tests killing surviving mutants of ``scaleout.memory`` (run m1b).

Expected values are hand calculations: Korthikanti et al. 2022, eq. (1) and Table 2
(``s b h (34 + 5 a s / h)`` bytes per layer, no parallelism, nothing recomputed), and
ZeRO (Rajbhandari et al. 2020) 2 + 2 + 12 bytes per parameter in mixed-precision Adam.
"""
import pytest
from scaleout import memory


def test_activation_arrays_defaults_are_korthikanti_eq1():
    """With every default, one GPU holds sbh(34 + 5as/h) bytes per layer (GPT, 4h MLP, dropout)."""
    s, b, h, a = 2048, 1, 1024, 16
    expected = s * b * h * 34 + 5 * a * s * s * b  # 71 303 168 + 335 544 320
    assert expected == 406_847_488
    got = memory.activation_per_layer_arrays(s, b, h, a, 1, False, 0, False)
    assert float(got) == pytest.approx(expected, rel=1e-12)


def _recipe(matmul, quantize_bytes):
    return memory.PrecisionRecipe(name="t", weight_bytes=2, grad_bytes=2, optimizer_bytes=12,
                                  source="test", description="test", matmul=matmul,
                                  quantize_bytes=quantize_bytes)


def test_recipe_quantize_bytes_allowed_only_with_fp8():
    """Scaling-factor bytes make sense only for FP8 matmuls; zero is fine everywhere."""
    assert _recipe("bf16", 0.0).quantize_bytes == 0.0
    assert _recipe("fp8", 0.5).quantize_bytes == 0.5
    with pytest.raises(ValueError):
        _recipe("bf16", 0.5)


def test_precision_problem_offers_recipes_without_fp8():
    """The sentence for an FP8 recipe on a GPU without FP8 names the non-FP8 recipes (property:
    every recipe it offers as the alternative must itself not multiply in FP8)."""
    from scaleout import catalog
    fp8 = [n for n, r in memory.RECIPES.items() if r.fp8]
    no_fp8_gpus = [g.name for g in catalog.gpus() if g.fp8_dense_tflops is None]
    if not fp8 or not no_fp8_gpus:
        pytest.skip("catalog has no FP8 recipe or no GPU without FP8")
    msg = memory.precision_problem(fp8[0], no_fp8_gpus[0])
    offered = msg.rsplit("a recipe without it (", 1)[1].rstrip(")").split(", ")
    assert "mixed-adam" in offered
    assert not any(memory.RECIPES[n].fp8 for n in offered)


# ------------------------------------------------- head widths and the layout checks (m2)
@pytest.mark.parametrize(("name", "ratio"), [
    # Qwen3-30B-A3B (config.json): hidden 2048, 32 query heads and 4 KV heads of 128:
    # Q, K and V have 32·128 + 2·4·128 = 5,120 channels, 2.5 h (the h/a rule would say 1.25)
    ("qwen3-30b-a3b", 5120 / 2048),
    # gpt-oss-20b (config.json): hidden 2880, 64 query heads and 8 KV heads of 64
    ("gpt-oss-20b", (64 * 64 + 2 * 8 * 64) / 2880)])
def test_q_k_v_widths_of_heads_wider_than_h_over_a(name, ratio):
    """Models whose heads are not ``h/a`` wide store Q, K and V at their real width."""
    from scaleout import catalog

    assert memory.activation_shape(catalog.model(name))["qkv_ratio"] == pytest.approx(ratio,
                                                                                     rel=1e-12)


def test_tensor_parallel_memory_of_a_mixture_of_experts():
    """Mixtral 8x7B (46,702,792,704 parameters, its model card's 46.7B) on two tensor-parallel
    ranks with sequence parallelism, as Megatron-Core runs an MoE under TP: each GPU holds
    half the weights, 2 bytes each in 16-bit, and 2 + 12 more for gradients and Adam (ZeRO's
    16 bytes per parameter in all). The norms and router (about 1.3M parameters) are counted
    as split too, well below the tolerance."""
    total = 46_702_792_704
    mb = memory.training_memory("mixtral-8x7b", "H100", tp=2, sp=True)
    assert mb.params_per_gpu == pytest.approx(total / 2, rel=1e-4)
    assert mb.weights + mb.grads + mb.optimizer == pytest.approx(16 * total / 2, rel=1e-4)
    per_layer = memory.activation_bytes_per_layer("mixtral-8x7b", micro_batch=1, tp=2, sp=True)
    one_rank = memory.activation_bytes_per_layer("mixtral-8x7b", micro_batch=1, tp=1, sp=True)
    assert per_layer == pytest.approx(one_rank / 2, rel=1e-12)  # sequence parallel: all split


def test_tensor_parallel_must_split_or_copy_the_kv_heads():
    """24 query heads and 6 KV heads (grouped attention) on 4 ranks: 4 divides 24, but
    neither divides 6 nor is a multiple of it, so KV heads can be neither split nor copied
    evenly (Megatron-Core requires one or the other)."""
    from scaleout import catalog

    m = catalog.model("llama3-8b").replace(name="gqa-24-6", hidden=3072, n_heads=24,
                                           n_kv_heads=6)
    memory.training_memory(m, "H100", tp=2, sp=True)
    with pytest.raises(ValueError, match=r"tp=4 must divide the 6 KV heads of gqa-24-6"):
        memory.training_memory(m, "H100", tp=4, sp=True)
