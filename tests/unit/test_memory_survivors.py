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
