"""scaleout.scaling: GPUs to hold a model, scale-up domains, landmark models."""

import math

import pytest
from scaleout import catalog, compute, memory, scaling, units


def test_gpt3_weights_need_five_80gib_gpus():
    # 350e9 bytes / (80 * 2**30 bytes) = 4.07 -> 5 GPUs
    assert scaling.gpus_to_hold(memory.weights_bytes(175e9), "A100-SXM4-80GB") == 5


def test_gpt3_training_state_needs_33_80gib_gpus():
    state = memory.model_state_bytes(175e9)  # 16 bytes/param (ZeRO Sec. 3.1)
    assert state == 2.8e12
    assert scaling.gpus_to_hold(state, "A100") == 33


@pytest.mark.parametrize("gpu", ["V100", "A100", "H100", "H200", "MI300X", "B200", "GB200"])
def test_gpus_to_hold_is_the_ceiling(gpu):
    hbm = catalog.gpu(gpu).hbm_bytes
    for k in (1, 2, 7, 72):
        assert scaling.gpus_to_hold(k * hbm, gpu) == k  # exactly k GPUs' worth
        assert scaling.gpus_to_hold(k * hbm + 1, gpu) == k + 1
    assert scaling.gpus_to_hold(1, gpu) == 1


def test_gpus_to_hold_is_monotonic():
    sizes = [10**e for e in range(6, 15)]
    counts = [scaling.gpus_to_hold(s, "H100") for s in sizes]
    assert counts == sorted(counts)
    # a bigger GPU never needs more of itself
    by_capacity = sorted(catalog.gpus(), key=lambda g: g.hbm_bytes)
    need = [scaling.gpus_to_hold(2.8e12, g) for g in by_capacity]
    assert need == sorted(need, reverse=True)


def test_usable_fraction():
    assert scaling.gpus_to_hold(80 * units.GIB, "A100", usable_fraction=0.5) == 2
    with pytest.raises(ValueError, match="usable_fraction"):
        scaling.gpus_to_hold(1e9, "A100", usable_fraction=0)
    with pytest.raises(ValueError, match="usable_fraction"):
        scaling.gpus_to_hold(1e9, "A100", usable_fraction=1.5)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "1e9"])
def test_bad_bytes_named(bad):
    with pytest.raises(ValueError, match="n_bytes"):
        scaling.gpus_to_hold(bad, "A100")


def test_unknown_gpu_named():
    with pytest.raises(ValueError, match="gpu 'A900'"):
        scaling.gpus_to_hold(1e9, "A900")


def test_systems_hbm():
    assert scaling.system_hbm_bytes("DGX H100") == 8 * 80 * units.GIB
    # NVIDIA prints "13.4 TB" for the NVL72 rack: 72 x 186 of its HBM "GB" (GiB)
    assert units.bytes_to_gib(scaling.system_hbm_bytes("GB200 NVL72")) == 72 * 186
    assert scaling.largest_system().name == "GB200 NVL72"
    assert scaling.scaleup_domain_bytes("GB200") == scaling.system_hbm_bytes("GB200 NVL72")
    assert scaling.scaleup_domain_bytes("H100") == scaling.system_hbm_bytes("DGX H100")


def test_holding_plan_gpt3():
    p = scaling.holding_plan("gpt3-175b", "A100-SXM4-80GB", "mixed-adam")
    assert p.params == 175e9
    assert p.weights == 350e9 and p.state == 2.8e12
    assert (p.gpus_for_weights, p.gpus_for_state) == (5, 33)
    assert not p.weights_fit_gpu and p.weights_fit_domain and not p.state_fits_domain
    assert p.domain_gpus == 8


def test_holding_plan_small_model_fits():
    p = scaling.holding_plan("gpt2-1.5b", "A100", "mixed-adam")
    assert p.weights_fit_gpu and p.state_fits_gpu


@pytest.mark.parametrize("recipe", list(memory.RECIPES))
def test_holding_plan_matches_memory(recipe):
    p = scaling.holding_plan("llama3-70b", "H100", recipe)
    assert p.state == pytest.approx(memory.model_state_bytes(70.6e9, recipe=recipe))
    assert p.gpus_for_state >= p.gpus_for_weights


def test_holding_plan_bad_recipe_named():
    with pytest.raises(ValueError, match="recipe must be one of"):
        scaling.holding_plan("gpt3-175b", "A100", "adam")


def test_model_params_falls_back_to_count():
    spec = catalog.model("gpt3-175b").replace(params_published=None, name="unpublished")
    assert scaling.model_params(spec) == memory.param_count(spec)
    assert scaling.model_params("gpt3-175b") == 175e9


def test_landmarks_and_largest_gpu():
    names = [m.name for m in scaling.landmark_models()]
    assert names == ["gpt2-1.5b", "gpt3-175b", "megatron-1t", "llama3-405b"]
    assert scaling.largest_gpu_by(2019).name == "V100-SXM2-32GB"
    assert scaling.largest_gpu_by(2024).hbm_gib == 192
    with pytest.raises(ValueError, match="year must be >= 2018"):
        scaling.largest_gpu_by(2010)


def test_days_to_years_and_gpt3_on_one_gpu():
    # Megatron-LM Eq. 4: 1024 A100 at 140 TFLOP/s, 300e9 tokens -> about 34 days
    days = compute.training_days(175e9, 300e9, 1024, 140)
    assert days == pytest.approx(34, abs=0.5)  # the paper prints whole days
    years_one_gpu = units.days_to_years(compute.training_days(175e9, 300e9, 1, 140))
    assert math.isclose(years_one_gpu, days * 1024 / 365.25)
    assert 90 < years_one_gpu < 100
