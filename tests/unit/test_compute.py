"""scaleout.compute against published numbers: Megatron-LM Eq. 3 and 4, PaLM MFU via Korthikanti."""

import math

import pytest
from scaleout import catalog, compute, memory


def test_eq4_gpt3_about_34_days():
    """Narayanan et al. Sec. 5.1: GPT-3, 300B tokens, 1024 A100 at 140 TFLOP/s -> ~34 days."""
    days = compute.training_days(175e9, 300e9, 1024, 140)
    assert 33.5 <= days <= 34.5
    assert round(days) == 34


def test_eq4_one_trillion_about_84_days():
    """1T model, 450B tokens, 3072 A100 at 163 TFLOP/s -> ~84 days (with the 1008B count)."""
    days = compute.training_days(memory.megatron_param_count("megatron-1t"), 450e9, 3072, 163)
    assert round(days) == 84
    assert 83 <= compute.training_days(1e12, 450e9, 3072, 163) <= 84


def test_eq4_without_recompute_is_three_quarters():
    with_rc = compute.training_seconds(1e9, 1e9, 8, 100)
    assert math.isclose(compute.training_seconds(1e9, 1e9, 8, 100, recompute=False), 0.75 * with_rc)


def test_eq3_is_eq4_per_iteration():
    """Eq. 3 per token over 8P (Eq. 4's numerator, P from Eq. 2): by hand,
    (1 + s/(6h) + V/(16lh)) / (1 + 13/(12h) + (V + s)/(12lh)), 1.3 % above 1 for the 1T model
    (s = 2048, h = 25600, l = 128, V = 51200): it tends to 1 when s/h and V/(lh) are small."""
    m = catalog.model("megatron-1t")
    s, h, l, v = m.seq_len, m.hidden, m.n_layers, m.vocab
    assert (s, h, l, v) == (2048, 25600, 128, 51200)
    per_token = compute.megatron_iteration_flops(m, 1) / s
    ratio = (1 + s / (6 * h) + v / (16 * l * h)) / (1 + 13 / (12 * h) + (v + s) / (12 * l * h))
    assert per_token / (8 * memory.megatron_param_count(m)) == pytest.approx(ratio, rel=1e-12)
    assert ratio == pytest.approx(1.0129, abs=1e-4)


def test_eq3_closed_form():
    m = catalog.model("gpt3-175b")
    B, s, l, h, V = 1536, 2048, 96, 12288, 50257
    want = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert math.isclose(compute.megatron_iteration_flops(m, B), want)
    # Korthikanti et al. 2022, App. A: model FLOPs 72 B s l h² (1 + s/6h + V/12lh)
    model_flops = 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    assert math.isclose(compute.megatron_iteration_flops(m, B, recompute=False), model_flops)
    # both count the vocabulary projection 2BshV three times; only the layers differ (4 vs 3)
    layers = 24 * B * s * l * h**2 * (1 + s / (6 * h))
    assert math.isclose(want - model_flops, layers)
    assert math.isclose(want - 4 * layers, 3 * 2 * B * s * h * V)


KORTHIKANTI = catalog.published("korthikanti_table5")


@pytest.mark.parametrize("run", KORTHIKANTI["run"], ids=lambda r: r["model"])
def test_mfu_reproduces_korthikanti_table5(run):
    """PaLM's MFU (6N + 12lhs FLOPs per token) from Table 5's measured iteration times
    reproduces the published MFU of every run within 0.5 percentage points."""
    m = catalog.model(run["model"])
    tokens_per_s = run["global_batch"] * m.seq_len / run["seconds_selective_sp"]
    got = 100 * compute.mfu(tokens_per_s, m, run["gpus"], KORTHIKANTI["peak_tflops"])
    assert abs(got - run["mfu_percent"]) < 0.5, got


def test_hfu_exceeds_mfu_and_equals_it_without_recompute():
    m = catalog.model("gpt3-175b")
    assert compute.hfu(1e4, m, 64, 312) > compute.mfu(1e4, m, 64, 312)
    assert compute.hfu(1e4, m, 64, 312, recompute=False) == compute.mfu(1e4, m, 64, 312)


def test_flops_per_token_is_6n_plus_attention():
    m = catalog.model("llama3-70b")
    n = memory.param_count(m)
    assert compute.flops_per_token(m, 4096, attention=False) == 6 * n
    assert compute.flops_per_token(m, 4096) == 6 * n + 12 * m.n_layers * m.hidden * 4096


def test_training_flops_6nd():
    assert compute.training_flops(70e9, 15e12) == 6 * 70e9 * 15e12


def test_eq4_by_hand_in_round_numbers():
    """8 T P / (n X): 1e12 tokens of a 1e9-parameter model on 1,000 GPUs at 100 TFLOP/s is
    8e21 / 1e17 = 80,000 s (6e21 / 1e17 = 60,000 s without recomputation), exactly."""
    assert compute.training_seconds(1e9, 1e12, 1000, 100) == 80_000.0
    assert compute.training_seconds(1e9, 1e12, 1000, 100, recompute=False) == 60_000.0


def test_mfu_and_hfu_by_hand_at_another_sequence_length():
    """PaLM App. B: 6N + 12 l h s FLOPs per token, 8N + 16 l h s with a recomputed forward
    (HFU = 4/3 MFU under full recomputation); s given explicitly overrides the model's."""
    m = catalog.model("gpt3-175b")
    n, l, h, s = memory.param_count(m), 96, 12288, 4096
    peak = 64 * 312e12
    mfu = compute.mfu(1e4, m, 64, 312, seq_len=s)
    assert mfu == pytest.approx(1e4 * (6 * n + 12 * l * h * s) / peak, rel=1e-12)
    hfu = compute.hfu(1e4, m, 64, 312, seq_len=s)
    assert hfu == pytest.approx(1e4 * (8 * n + 16 * l * h * s) / peak, rel=1e-12)
    assert hfu / mfu == pytest.approx(4 / 3, rel=1e-12)


def test_attention_flops_sum_every_layer_by_what_it_attends_to():
    """The closed form against the plain loop over layers (``2 s' a (d_qk + d_v)`` each, ``s'``
    from :meth:`ModelSpec.attends_to`), on the catalog and on window shapes it lacks."""
    import dataclasses

    models = [catalog.model(n) for n in catalog.model_names()]
    base = catalog.model("gpt-oss-120b")  # windows of 128 tokens, every 2nd layer full
    models += [dataclasses.replace(base, sliding_window=w, full_attention_every=e)
               for w in (64, 4096, 10**6) for e in (None, 1, 3, 5)]
    for m in models:
        for s in (1, 100, 4096, 131072):
            for causal in (False, True):
                loop = 0.0
                for layer in range(m.n_layers):
                    w = m.attends_to(layer, s)
                    if causal:
                        w = s / 2 if w >= s else w - w * (w - 1) / (2 * s)
                    loop += 2 * w * m.n_heads * (m.qk_head_dim + m.head_dim)
                got = compute.attention_flops_per_token(m, s, causal=causal)
                assert got == pytest.approx(loop, rel=1e-12), (m.name, s, causal)
    # gpt-oss-120b at 4,096 tokens: 18 full layers, 18 of a 128-token window, 64 heads of 64
    assert compute.attention_flops_per_token("gpt-oss-120b", 4096) == (
        18 * 2 * 4096 * 64 * 128 + 18 * 2 * 128 * 64 * 128)
