"""The memory model judged on published runs (``plan.memory_checks``): every published layout
ran, so one the model puts above its GPU's HBM shows where the model is pessimistic; the
validation table lists those, fullest first."""

import pytest
from scaleout import catalog, plan
from scaleout.plan import published
from scaleout.plan.validation import MemoryCheck, _memory_lines
from scaleout.units import GIB


@pytest.fixture(scope="module")
def checks():
    return {(c.source, c.case): c for c in plan.memory_checks()}


def test_each_check_is_the_planners_memory_of_the_run_against_its_hbm(checks):
    """One check per published run, its memory the planner's busiest GPU (reserve included)
    under the run's framework and recipe, its capacity the GPU's HBM."""
    every = published.cases()[0]
    assert len(checks) == len(every)
    for case in every[::17]:
        c = checks[(case.source, case.label)]
        r = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                          framework=case.framework, recipe=case.recipe)
        assert c.predicted_gib == pytest.approx(r.memory_bytes / GIB, rel=1e-12)
        assert c.capacity_gib == pytest.approx(catalog.gpu(case.gpu).hbm_bytes / GIB, rel=1e-12)
        assert c.fits == r.fits and c.gpu == case.gpu
        assert c.table == published.source_title(case.source)


def test_fits_and_share_by_hand():
    over = MemoryCheck("T", "big", "H100", 100.0, 80.0)
    under = MemoryCheck("T", "small", "H100", 60.0, 80.0)
    edge = MemoryCheck("T", "edge", "H100", 80.0, 80.0)
    assert (over.fits, over.share) == (False, 1.25)
    assert (under.fits, under.share) == (True, 0.75)
    assert edge.fits


def test_the_table_lists_the_layouts_over_hbm_fullest_first():
    rows = [MemoryCheck("T", "a", "H100", 90.0, 80.0), MemoryCheck("T", "bb", "H100", 70.0, 80.0),
            MemoryCheck("T", "c", "H100", 160.0, 80.0)]
    lines = _memory_lines(rows)
    assert lines[0].startswith("Memory: the planner's model puts 2 of the 3 published layouts")
    assert lines[1:] == ["  c    160.0 of 80.0 GiB (200.0%)", "  a     90.0 of 80.0 GiB (112.5%)"]
    assert _memory_lines(rows[1:2]) == [
        "Memory: every one of the 1 published layouts fits its GPU by the planner's memory "
        "model, as it did when it ran."]


def test_validate_prints_every_layout_the_model_puts_over(checks):
    text = plan.validation_table()
    over = [c for c in checks.values() if not c.fits]
    assert f"puts {len(over)} of the {len(checks)} published layouts" in text
    for c in over:
        assert f"  {c.case}" in text


def test_a_check_carries_the_runs_stored_activations_and_the_sources_select():
    """``activations_gib``: the stored activations of the planner's busiest GPU, part of its
    total; ``sources`` picks the runs checked. (Called here, not through the module's
    fixture, so that mutation testing's per-function test map reaches it.)"""
    chosen = plan.memory_checks(sources=["korthikanti_table5"])
    cases = [c for c in published.cases()[0] if c.source == "korthikanti_table5"]
    assert [c.case for c in chosen] == [c.label for c in cases] and len(chosen) == 8
    for check, case in zip(chosen, cases, strict=True):
        r = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                          framework=case.framework, recipe=case.recipe)
        assert check.activations_gib == pytest.approx(r.memory["activations"] / GIB, rel=1e-12)
        assert 0 < check.activations_gib < check.predicted_gib
