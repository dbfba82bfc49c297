"""The planner's misses read in seconds (``plan.step_gaps``) and their figure
(``plotting.step_gap_scatter``): each published number turned back into seconds per
steady-state step, by hand for one run of every kind of quantity."""

import math

import numpy as np
import pytest
from scaleout import plan, plotting
from scaleout.plan import published


@pytest.fixture(scope="module")
def gaps():
    return {(g.source, g.case): g for g in plan.step_gaps()}


def _case(source, label):
    return next(c for c in published.cases()[0] if c.source == source and c.label == label)


def test_a_throughput_is_read_back_as_the_batchs_tokens_over_the_gpus_rate(gaps):
    """MosaicML's 125M model on 16 A100s, 26 sequences of 2,048 a GPU: 130,535 tokens/s per
    GPU is 26 x 16 x 2,048 / (130,535 x 16) = 0.40792 s a step; the planner's own figure in
    tokens/s per GPU is read back the same way."""
    label = "mpt-125m on 16 × A100-SXM4-40GB, FULL_SHARD, b=26, s=2048"
    g = gaps[("mpt_llm_foundry_2024", label)]
    assert g.published_s == pytest.approx(26 * 2048 / 130_535, rel=1e-12)
    row = next(r for r in plan.validate(sources=["mpt_llm_foundry_2024"]) if r.case == label)
    assert g.predicted_s == pytest.approx(26 * 2048 / row.predicted, rel=1e-12)
    assert g.gap_s == pytest.approx(g.published_s - g.predicted_s, rel=1e-12)
    assert g.gap_share == pytest.approx(1 - g.predicted_s / g.published_s, rel=1e-12)
    assert (g.gpu, g.recompute, g.mechanisms) == ("A100-SXM4-40GB", "none", ())


def test_seconds_per_iteration_are_taken_as_printed(gaps):
    """Korthikanti et al.'s Table 5 prints seconds per iteration: published and predicted
    are those numbers, unconverted."""
    rows = plan.validate(sources=["korthikanti_table5"])
    for r in rows:
        g = gaps[("korthikanti_table5", r.case)]
        assert (g.published_s, g.predicted_s) == (r.published, r.predicted)


def test_a_whole_run_average_is_taken_at_its_goodput(gaps):
    """DeepSeek-V3's 180K H800 GPU-hours per 10^12 tokens is a whole-run cost: on 2,048 GPUs
    at a global batch of B sequences of s tokens, a step is B s x 180,000 x 3600 / 10^12 /
    2,048 seconds of wall time, of which the run's goodput was kept work."""
    case = next(c for c in published.cases()[0] if c.source == "deepseek_v3")
    g = gaps[("deepseek_v3", case.label)]
    p = case.plan
    wall = p.global_batch * p.seq_len * 180_000 * 3600 / 1e12 / 2048
    assert g.published_s == pytest.approx(wall * case.goodput, rel=1e-12)
    assert 0.9 < case.goodput < 1
    # the planner's figure is faster than the report's, so its step is shorter
    assert g.predicted_s < g.published_s and g.gap_s > 0


def test_every_case_gets_one_gap_and_the_sources_select(gaps):
    every, _ = published.cases()
    assert len(gaps) == len(every)
    only = plan.step_gaps(sources=["llama3_table4"])
    assert only and {g.source for g in only} == {"llama3_table4"}
    assert all(math.isfinite(g.gap_s) and g.published_s > 0 for g in gaps.values())


def test_the_figure_draws_every_run_and_the_fixed_cost_curves(gaps):
    """One marker per run (the filled and hollow ones together), a dashed curve per fixed
    cost at 100 f / step percent, the legend naming each source and both marker kinds."""
    chosen = [g for g in gaps.values() if g.source in ("mpt_llm_foundry_2024", "llama3_table4")]
    _fig, ax = plotting.new_figure(8.5, 4.2)
    plotting.step_gap_scatter(ax, chosen, fixed_s=(0.1, 1.0))
    drawn = sum(len(c.get_offsets()) for c in ax.collections)
    assert drawn == len(chosen)
    curves = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(curves) == 2
    for f, line in zip((0.1, 1.0), curves, strict=True):
        x, y = line.get_data()
        assert np.allclose(y, 100 * f / x)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"MosaicML MPT benchmarks (PyTorch FSDP)", "Llama 3 2024, Table 4",
            "stores its activations", "recomputes every layer"} <= set(labels)
    low, high = ax.get_ylim()
    shares = [100 * g.gap_share for g in chosen]
    assert low < min(shares) and max(shares) < high


def test_the_planners_side_is_its_own_step_whatever_the_quantity(gaps):
    """Read back through each quantity (seconds, tokens/s, TFLOP/s by Eq. 3 or by model FLOPs,
    GPU-hours at a goodput), the planner's prediction is the step it computed."""
    for case in published.cases()[0]:
        r = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                          framework=case.framework, recipe=case.recipe)
        assert gaps[(case.source, case.label)].predicted_s == pytest.approx(r.step_s, rel=1e-9)


def test_a_calibration_given_is_the_one_priced_and_each_gap_names_its_table(gaps):
    """A slower matrix-multiply calibration lengthens the planner's steps (and only its side);
    every gap carries its table's title and the mechanisms its run exercises."""
    import dataclasses

    slow = dataclasses.replace(plan.DEFAULT_CALIBRATION, gemm_efficiency=0.5)
    ref = {g.case: g for g in plan.step_gaps(sources=["korthikanti_table5"])}
    for g in plan.step_gaps(slow, sources=["korthikanti_table5"]):
        case = _case("korthikanti_table5", g.case)
        r = plan.evaluate(case.model, case.gpu, case.plan, case.network, calibration=slow,
                          framework=case.framework, recipe=case.recipe)
        assert g.predicted_s == pytest.approx(r.step_s, rel=1e-9)
        assert g.predicted_s > ref[g.case].predicted_s
        assert g.published_s == ref[g.case].published_s
    for (source, _), g in gaps.items():
        assert g.table == published.source_title(source) and g.source == source
    moe = [g for g in gaps.values() if "mixture of experts" in g.mechanisms]
    assert moe and all(_case(g.source, g.case).mechanisms == g.mechanisms for g in moe)


def test_predictions_already_made_are_reused_and_the_rest_evaluated(gaps):
    """``rows`` hands over predictions (a cross-validation's rows): the runs they cover take
    them as given (a row doubled here doubles that run's predicted seconds per iteration),
    the others are evaluated as without them, and reusing the validation's own rows changes
    nothing."""
    import dataclasses

    rows = plan.validate(sources=["korthikanti_table5"])
    again = plan.step_gaps(sources=["korthikanti_table5", "megatron_lm_table1"], rows=rows)
    assert {(g.source, g.case): g for g in again} == {
        k: v for k, v in gaps.items() if k[0] in ("korthikanti_table5", "megatron_lm_table1")}
    doubled = [dataclasses.replace(rows[0], predicted=2 * rows[0].predicted)]
    moved = {g.case: g for g in plan.step_gaps(sources=["korthikanti_table5"], rows=doubled)}
    assert moved[rows[0].case].predicted_s == pytest.approx(2 * rows[0].predicted, rel=1e-12)
    for r in rows[1:]:
        assert moved[r.case] == gaps[("korthikanti_table5", r.case)]
