"""The validation's plumbing against hand-made expectations (survivors of a mutation run of
``scaleout.plan.validation``).

What is checked, each expected value independent of the code under test:

* published numbers read back as seconds per iteration, by hand from the data files: a
  tokens/s row (Megatron Bridge's gpt-oss-120b at 8,192 tokens, twice the model's default),
  DeepSeek-V3's GPU-hours per 10^12 tokens (19.90656 s, then times the whole run's goodput),
  Llama 3's 128K-context row in model FLOPs (6N + 12 l h s at s = 131,072) and an Eq. 3 row
  at a sequence length of its plan's own;
* the constant-MFU baseline in closed form, where the published value cancels: a model-FLOPs
  rate of ``mfu × peak``, tokens/s of ``mfu × peak / FLOPs per token``, seconds of
  ``FLOPs / (mfu × peak)``, GPU-hours of the steady state over the goodput;
* the cross-validation's table, summary rows and left-out reasons on a made-up
  :class:`~scaleout.plan.validation.CrossValidation` whose means and worsts are worked out by
  hand;
* ``scaling_series`` against a plain loop over ``plan.evaluate`` with the case's own network,
  recipe and a given calibration.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, compute, plan
from scaleout.plan import published, validation


def _case(source: str, label: str) -> published.Case:
    every, _ = published.cases()
    return next(c for c in every if c.source == source and c.label == label)


# ------------------------------------------------- published numbers read back by hand
def test_a_tokens_per_second_row_reads_back_at_its_own_sequence_length():
    """Megatron Bridge 25.11, gpt-oss-120b on 64 GB200 (data/published/
    megatron_bridge_perf_2511.toml): 1,280 sequences of 8,192 tokens a step at 15,876 tokens/s
    per GPU, so a step takes 1,280 × 8,192 / (15,876 × 64) = 10,485,760 / 1,016,064 s. The
    model's own default is 4,096 tokens: the plan's 8,192 is the one the run used."""
    case = _case("megatron_bridge_perf_2511", "gpt-oss-120b on 64 × GB200")
    assert case.model.seq_len == 4096 and case.plan.seq_len == 8192
    assert case.quantity == "tokens/s per GPU" and case.published == 15876
    assert validation._printed_step_s(case) == pytest.approx(10_485_760 / 1_016_064, rel=1e-14)
    assert validation._printed_step_s(case) == pytest.approx(10.3200, abs=5e-5)


def test_deepseek_v3s_gpu_hours_read_back_as_a_step_then_times_the_goodput():
    """DeepSeek-V3 (arXiv 2412.19437, Sec. 1): 180,000 H800 GPU-hours per 10^12 tokens, 2,048
    GPUs, batches of 15,360 sequences of 4,096 tokens. One step's GPU-seconds are
    15,360 × 4,096 / 10^12 of 180,000 × 3,600, over 2,048 GPUs:
    30,720 × 648,000,000 / 10^12 = 19.90656 s. The figure averages the whole run, so the
    steady-state step it implies is that times the goodput (below 1: the run's wall time also
    paid for failures and checkpoints)."""
    case = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    assert (case.plan.global_batch, case.plan.seq_len, case.plan.n_gpus) == (15360, 4096, 2048)
    assert case.published == 180_000
    assert validation._printed_step_s(case) == pytest.approx(19.90656, rel=1e-14)
    assert 0.95 < case.goodput < 1.0
    assert validation._published_step_s(case) == pytest.approx(19.90656 * case.goodput,
                                                                rel=1e-14)
    assert validation._published_step_s(case) < 19.90656


def test_llama3s_128k_row_reads_back_as_6n_plus_attention_at_131072_tokens():
    """Llama 3 405B (Dubey et al. 2024, Table 4), the 128K-context row: 380 TFLOP/s per GPU on
    16,384 GPUs, batches of 128 sequences of 131,072 tokens (the model's default is 8,192).
    Read back as a step, the FLOPs per token it implies, step × 380e12 × 16,384 /
    (128 × 131,072), are PaLM's 6N + 12 l h s with N = 405,853,388,800 and
    12 × 126 × 16,384 × 131,072 = 3.25 × 10^15: exactly, to the last digits (so 10^12 in the
    TFLOP/s unit, not 10^12 + 1)."""
    case = _case("llama3_table4", "405B, 128K context, 16,384 GPUs")
    m = case.model
    assert (m.seq_len, case.plan.seq_len, m.n_layers, m.hidden) == (8192, 131072, 126, 16384)
    n_params = compute.param_count(m)
    assert n_params == pytest.approx(405.9e9, rel=1e-3)
    per_token = 6 * n_params + 12 * 126 * 16384 * 131072
    step = validation._printed_step_s(case)
    assert step * 380e12 * 16384 / (128 * 131072) == pytest.approx(per_token, rel=1e-14)


def test_an_eq3_row_reads_back_at_its_plans_sequence_length():
    """Narayanan et al. 2021, Table 1's 1T row (l = 128, h = 25,600, V = 51,200, batch 3,072 on
    3,072 GPUs, 163 TFLOP/s per GPU), given a plan of 1,024-token sequences instead of the
    model's 2,048: Eq. 3's F = 96 B s l h² (1 + s/6h + V/16lh) at s = 1,024 over
    163 × 10^12 × 3,072."""
    case = _case("megatron_lm_table1", "megatron-1t on 3,072 GPUs")
    short = replace(case, plan=replace(case.plan, seq_len=1024))
    B, s, n, l, h, V = 3072, 1024, 3072, 128, 25600, 51200
    flops = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert validation._printed_step_s(short) == pytest.approx(flops / (163e12 * n), rel=1e-12)


# ------------------------------------------------- the constant-MFU baseline in closed form
def _baseline_by_hand(case: published.Case, mfu: float) -> float:
    """The constant-MFU prediction in the case's quantity, written so the published number
    cancels: a step of model FLOPs at ``mfu`` of the GPUs' peak dense BF16."""
    s = case.plan.seq_len or case.model.seq_len
    per_token = compute.flops_per_token(case.model, s)
    rate = mfu * catalog.gpu(case.gpu).bf16_dense_flops  # model FLOP/s per GPU
    tokens = case.plan.global_batch * s
    n = case.plan.n_gpus
    if case.quantity == "s/iteration":
        return per_token * tokens / (rate * n)
    if case.quantity == "TFLOP/s per GPU (model FLOPs)":
        return rate / 1e12
    if case.quantity == "TFLOP/s per GPU (Eq. 3)":  # Eq. 3's FLOPs over the same step
        eq3 = compute.megatron_iteration_flops(case.model, case.plan.global_batch, s)
        return rate / 1e12 * eq3 / (per_token * tokens)
    if case.quantity == "tokens/s per GPU":
        return rate / per_token
    assert case.quantity == "H800 GPU-hours per 10^12 tokens"
    steady = 1e12 / (rate / per_token) / 3600  # GPU-hours of the steady state
    return steady / case.goodput  # a whole-run figure: also pays for the lost time


def test_the_baseline_of_every_case_in_closed_form():
    """At an MFU of 40 %: Llama 3's model-FLOPs rows at 0.4 × 989 = 395.6 TFLOP/s whatever
    their sequence length; every other case by :func:`_baseline_by_hand`. All cases when none
    are selected, in the order of ``published.cases()``."""
    every, _ = published.cases()
    rows = validation.baseline_rows(0.4)
    assert [r.case for r in rows] == [c.label for c in every]
    for row, case in zip(rows, every, strict=True):
        assert row.predicted == pytest.approx(_baseline_by_hand(case, 0.4), rel=1e-13), case.label
    llama = [r.predicted for r in rows if r.source == "llama3_table4"]
    assert llama == pytest.approx([395.6] * 3, rel=1e-13)
    assert {c.quantity for c in every} == {
        "s/iteration", "TFLOP/s per GPU (model FLOPs)", "TFLOP/s per GPU (Eq. 3)",
        "tokens/s per GPU", "H800 GPU-hours per 10^12 tokens"}


def test_the_baseline_of_deepseek_v3s_gpu_hours_by_hand():
    """At 40 % of the H800's 989 TFLOP/s, DeepSeek-V3's steady state costs
    10^12 × FLOPs per token / (0.4 × 989 × 10^12) / 3,600 GPU-hours per 10^12 tokens; the
    whole-run figure divides that by the goodput (more than the steady state)."""
    ds = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    per_token = compute.flops_per_token(ds.model, 4096)
    steady = 1e12 * per_token / (0.4 * 989e12) / 3600
    got = validation.baseline_rows(0.4, [ds])[0].predicted
    assert got == pytest.approx(steady / ds.goodput, rel=1e-13)
    assert got > steady


# ------------------------------------------------- the cross-validation table, made up
_ROW = validation.ValidationRow
_MOE = ("mixture of experts",)


def _made_up() -> validation.CrossValidation:
    """Three sources: "Paper A" fitted and left out, "Paper B" (two dense rows) and "Paper C"
    (one MoE row) held out; every published value 100, so each error is the prediction less
    100, in percent."""
    def rows(title, source, predicted, mechanisms=()):
        return [_ROW(title, f"{title} #{i}", "s/iteration", 100.0, p, source, mechanisms)
                for i, p in enumerate(predicted)]

    return validation.CrossValidation(
        calibration=plan.DEFAULT_CALIBRATION, baseline_mfu=0.4,
        fitted=rows("Paper A", "a", [110, 80]),
        held_out=rows("Paper B", "b", [105, 95]) + rows("Paper C", "c", [140], _MOE),
        left_out=rows("Paper A", "a", [120, 70]),
        baseline_fitted=rows("Paper A", "a", [130, 90]),
        baseline_held_out=rows("Paper B", "b", [120, 80]) + rows("Paper C", "c", [110], _MOE),
        baseline_left_out=rows("Paper A", "a", [150, 110]),
        skipped=(
            "Megatron Bridge 26.02 (dense, MoE, FP8, CP): llama3-8b on 8 × B300: NVFP4: no "
            "recipe for it",
            "Megatron Bridge 26.02 (dense, MoE, FP8, CP): llama3-70b on 64 × B300: NVFP4: no "
            "recipe for it",
            "Megatron Bridge 26.02 (dense, MoE, FP8, CP): qwen3-30b-a3b on 8 × B300: MXFP4: no "
            "recipe for it",
            "MegaScale 2024, Table 2 (Megatron-LM rows): megatron-lm 2240 GPUs: no iteration "
            "time"))


def test_the_cross_validation_table_gives_each_source_its_role_and_errors():
    """Paper A fitted: |errors| 10, 20 (mean 15, worst 20), baseline 30, 10 (20, 30); held out
    B: 5, 5 (5, 5) against 20, 20; C: 40 against 10; left out A: 20, 30 (25, 30) against
    50, 10 (30, 50)."""
    got = [(r["source"], r["role"], r["cases"], round(r["mean_abs_pct"], 9),
            round(r["worst_abs_pct"], 9), round(r["baseline_mean_abs_pct"], 9),
            round(r["baseline_worst_abs_pct"], 9)) for r in _made_up().table()]
    assert got == [("Paper A", "fitted", 2, 15, 20, 20, 30),
                   ("Paper B", "held out", 2, 5, 5, 20, 20),
                   ("Paper C", "held out", 1, 40, 40, 10, 10),
                   ("Paper A", "left out", 2, 25, 30, 30, 50)]


def _fields(line: str, label_end: int) -> tuple[str, list[str]]:
    return line[2:label_end].strip(), line[label_end:].split()


def test_the_full_table_with_a_made_up_cross_validation(monkeypatch):
    """The text ``validation_table()`` prints after the per-source tables, for the made-up
    cross-validation above: the header's eight column names; one row per source and role; the
    summary rows (all held out: 5, 5, 40, mean 16.7, worst 40; the dense 16-bit ones are Paper
    B's two, MoE / FP8 / CP Paper C's one); after a blank line the runs left out, grouped by
    source and by the reason after the run's name (two NVFP4 rows under one line, the MXFP4
    row apart: the reason keeps the precision it names); then the layouts the memory model
    puts above their HBM (one of the two made-up checks)."""
    cv = _made_up()
    monkeypatch.setattr(validation, "cross_validation", lambda calibration=None: cv)
    monkeypatch.setattr(validation, "validate", lambda calibration=None, sources=None:
                        cv.fitted + cv.held_out)
    monkeypatch.setattr(validation, "memory_checks", lambda sources=None: [
        validation.MemoryCheck("Paper B", "b1", "H100", 60.0, 80.0),
        validation.MemoryCheck("Paper B", "b2", "H100", 88.0, 80.0)])
    lines = validation.validation_table().splitlines()
    start = lines.index("Cross-validation (constant baseline: one MFU of 40.0% for every run, "
                        "fitted to the same training sources)")
    header, body = lines[start + 1], lines[start + 2:]
    assert header.split() == ["source", "role", "cases", "mean", "worst", "baseline", "mean",
                              "worst"]
    assert header.index("role") == 2 + 52 + 1  # the source column is 52 wide
    sources = [(line[2:54].strip(), line[55:64].strip(), line[64:].split()) for line in body[:4]]
    assert sources == [
        ("Paper A", "fitted", ["2", "15.0%", "20.0%", "20.0%", "30.0%"]),
        ("Paper B", "held out", ["2", "5.0%", "5.0%", "20.0%", "20.0%"]),
        ("Paper C", "held out", ["1", "40.0%", "40.0%", "10.0%", "10.0%"]),
        ("Paper A", "left out", ["2", "25.0%", "30.0%", "30.0%", "50.0%"])]
    summary = [_fields(line, 54) for line in body[4:9]]
    assert summary == [
        ("all fitted", ["2", "15.0%", "20.0%", "20.0%", "30.0%"]),
        # (5 + 5 + 40) / 3 = 16.7; the baseline's (20 + 20 + 10) / 3 = 16.7, worst 20
        ("all held out", ["3", "16.7%", "40.0%", "16.7%", "20.0%"]),
        ("held out, dense 16-bit", ["2", "5.0%", "5.0%", "20.0%", "20.0%"]),
        ("held out, MoE / FP8 / CP", ["1", "40.0%", "40.0%", "10.0%", "10.0%"]),
        ("all left out", ["2", "25.0%", "30.0%", "30.0%", "50.0%"])]
    assert body[9:] == [
        "",
        "Not predicted: 4 runs the planner cannot represent yet, by reason:",
        "    2 × Megatron Bridge 26.02 (dense, MoE, FP8, CP): NVFP4: no recipe for it",
        "    1 × Megatron Bridge 26.02 (dense, MoE, FP8, CP): MXFP4: no recipe for it",
        "    1 × MegaScale 2024, Table 2 (Megatron-LM rows): no iteration time",
        "",
        "Memory: the planner's model puts 1 of the 2 published layouts above their GPU's HBM, "
        "though every one ran (where it is pessimistic):",
        "  b2     88.0 of 80.0 GiB (110.0%)"]


def test_the_bridge_reader_writes_a_reason_that_itself_holds_a_colon():
    """The reason the table groups by is what follows the run's name, and a Megatron Bridge row
    of a precision without a recipe says which precision: ``"NVFP4: no recipe for it"``.
    (The made-up skips above use that sentence.)"""
    raw = {"release": "26.02", "run": [{"precision": "NVFP4", "gpu": "B300",
                                        "model": "llama3-8b", "gpus": 8}]}
    cases, skipped = published._bridge(raw, source="megatron_bridge_perf_2602")
    assert cases == [] and skipped == ["llama3-8b on 8 × B300: NVFP4: no recipe for it"]


# ------------------------------------------------- scaling_series against a plain loop
def _series_by_hand(source, calibration):
    by: dict[str, list[tuple[int, float, float]]] = {}
    for case in (c for c in published.cases()[0] if c.source == source):
        r = plan.evaluate(case.model, case.gpu, case.plan, case.network, calibration=calibration,
                          framework=case.framework, recipe=case.recipe)
        by.setdefault(f"{case.model.name}, {case.framework}", []).append(
            (case.plan.n_gpus, case.published, case.predict(r)))
    return {k: sorted(v) for k, v in by.items()}


@pytest.mark.parametrize("source", ["narayanan2021_table2_zero3", "llama3_table4",
                                    "deepseek_v3"])
def test_scaling_series_is_each_cases_evaluation_with_its_network_recipe_and_calibration(
        source):
    """A calibration other than the shipped one (GEMMs at 60 % of the achievable rate),
    passed on to every case; each case evaluated on its own network (Llama 3's RoCE at 400
    Gb/s, not the H100's default) and in its own recipe (DeepSeek-V3's FP8), against a plain
    loop over ``plan.evaluate``. The series are float arrays, GPU counts ascending."""
    cal = replace(plan.DEFAULT_CALIBRATION, gemm_efficiency=0.60)
    assert cal != plan.DEFAULT_CALIBRATION
    got = validation.scaling_series(source, calibration=cal)
    want = _series_by_hand(source, cal)
    assert set(got) == set(want)
    for key, points in want.items():
        g, pub, pred = zip(*points, strict=True)
        assert got[key]["gpus"].tolist() == list(g)
        assert got[key]["published"].tolist() == list(pub)
        assert got[key]["predicted"] == pytest.approx(pred, rel=1e-12)
        assert all(got[key][k].dtype == np.float64 for k in ("gpus", "published", "predicted"))
        assert list(g) == sorted(g)
    shipped = validation.scaling_series(source)
    assert any(not np.allclose(shipped[k]["predicted"], got[k]["predicted"], rtol=1e-3)
               for k in got)


def test_the_sources_networks_and_recipes_are_not_the_defaults():
    """What makes the loop above tell a case's own network and recipe from the defaults:
    Llama 3's RoCE network (slower than the H100's default by a few 10^-5 of the step: its
    only case whose network is not its GPU's default) and DeepSeek-V3's FP8 recipe each change
    the prediction."""
    llama = _case("llama3_table4", "405B, 8K context, 8,192 GPUs")
    ds = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    for case, other in ((llama, {"network": None}), (ds, {"recipe": "mixed-adam"})):
        kw = {"network": case.network, "recipe": case.recipe} | other
        own = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                            framework=case.framework, recipe=case.recipe)
        default = plan.evaluate(case.model, case.gpu, case.plan, kw["network"],
                                framework=case.framework, recipe=kw["recipe"])
        assert not math.isclose(own.step_s, default.step_s, rel_tol=1e-6), case.label


def test_gpu_hours_of_any_gpu_read_back_alike_and_an_unknown_quantity_is_refused():
    """The same cost stated in H100 GPU-hours reads back as the same step (the baseline and
    the error log already take "GPU-hours" of any GPU); a quantity no reader knows is an
    error naming it, not a silent read as TFLOP/s."""
    case = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    h100 = replace(case, quantity="H100 GPU-hours per 10^12 tokens")
    assert validation._printed_step_s(h100) == pytest.approx(19.90656, rel=1e-14)
    with pytest.raises(ValueError, match=r"quantity='petaFLOP-days'.*allowed: 's/iteration'"):
        validation._printed_step_s(replace(case, quantity="petaFLOP-days"))
