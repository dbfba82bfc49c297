"""The published runs' readers against hand-made expectations (survivors of a mutation run of
``scaleout.plan.published``, batch p1).

What is checked, each expected value independent of the code under test:

* GPU-hours per 10^12 tokens of a made-up result at 10^6 tokens/s per GPU: 10^6 s, i.e.
  2500/9 hours, to the last digit;
* the whole-run goodput of DeepSeek-V3's case worked out by hand from the data files: Llama 3's
  419 interruptions (373 counted per GPU, 46 per node) over 54 days on 16,384 GPUs scaled to
  2,048 GPUs in nodes of 8 (the default) or 4, a checkpoint of 10 bytes a parameter (the
  fp8-deepseek recipe: bf16 weights, fp32 master, two bf16 moments) at 2 TB/s, a restart of
  600 s + the read + 30 s, the optimal interval from the Lambert W function and Daly's goodput
  formula written out;
* a whole-run rate read as the steady-state rate times the goodput (the docstring's rule);
* a run whose file does not say ``measured_over`` is a steady state;
* Korthikanti et al.'s Table 5 read into two cases a run, each label with its column's number,
  and a made-up run with data parallelism split as gpus / (tp pp);
* Megatron-LM Table 1's cases carry the reader's two assumptions, matching their plans;
* every case's GPU is spelled as the catalog spells it and its plan's sizes are integers.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scaleout import catalog, memory
from scaleout.plan import published
from support import goodput_by_hand


@pytest.fixture
def every_case():
    return published.cases()[0]


# ------------------------------------------------------------------- GPU-hours per 10^12
def test_gpu_hours_per_trillion_tokens_by_hand():
    """8 GPUs at 8e6 tokens/s: 1e6 tokens/s a GPU, so 1e12 tokens take a GPU 1e6 s,
    1e6 / 3600 = 2500/9 GPU-hours (277.77...)."""
    r = SimpleNamespace(tokens_per_s=8e6, plan=SimpleNamespace(n_gpus=8))
    assert published._gpu_hours_per_trillion(r) == pytest.approx(2500 / 9, rel=1e-15)


# ------------------------------------------------------------------- whole-run goodput


def _deepseek(every_case):
    return next(c for c in every_case if c.source == "deepseek_v3")


def test_deepseek_v3s_whole_run_goodput_by_hand_at_8_gpus_a_node(every_case):
    """The default node of 8 GPUs: 2,048 GPUs in 256 nodes, an MTBF of 1296 / 52.375 =
    24.745 h; the fp8-deepseek recipe's checkpoint holds 2 + 4 + 2 + 2 = 10 bytes a
    parameter."""
    c = _deepseek(every_case)
    params = memory.param_count(c.model)
    want, m = goodput_by_hand(params, 10, 2048, 8)
    assert m / 3600 == pytest.approx(1296 / 52.375, rel=1e-12)
    assert 0.98 < want < 0.99
    got = published.whole_run_goodput(c.model, c.plan, "fp8-deepseek")
    assert got == pytest.approx(want, rel=1e-10)
    assert c.goodput == pytest.approx(want, rel=1e-10)  # the file's 8 GPUs a node
    # mixed-adam's 14 bytes a parameter: a longer checkpoint and read, less kept
    adam, _ = goodput_by_hand(params, 14, 2048, 8)
    assert published.whole_run_goodput(c.model, c.plan, "mixed-adam") == pytest.approx(
        adam, rel=1e-10)
    assert adam < want


def test_whole_run_goodput_in_nodes_of_4(every_case):
    """Nodes of 4 GPUs: 512 nodes, twice the per-node failures: 46.625 + 11.5 = 58.125
    interruptions a snapshot, a lower goodput than in nodes of 8."""
    c = _deepseek(every_case)
    want, m = goodput_by_hand(memory.param_count(c.model), 10, 2048, 4)
    assert m / 3600 == pytest.approx(1296 / 58.125, rel=1e-12)
    got = published.whole_run_goodput(c.model, c.plan, "fp8-deepseek", gpus_per_node=4)
    assert got == pytest.approx(want, rel=1e-10)
    assert got < c.goodput


def test_a_whole_run_rate_is_the_steady_rate_times_the_goodput():
    """Time-like quantities over the goodput, rates times it: 1,000 tokens/s a GPU at a
    goodput of 0.8 is 800 over the whole run; 10 s an iteration is 12.5 s."""
    r = SimpleNamespace(tokens_per_s=8000.0, plan=SimpleNamespace(n_gpus=8), step_s=10.0)
    rate = published._over_goodput(published._tokens_per_gpu, 0.8, slower_is_larger=False)
    assert rate(r) == pytest.approx(800.0, rel=1e-15)
    time = published._over_goodput(published._seconds, 0.8, slower_is_larger=True)
    assert time(r) == pytest.approx(12.5, rel=1e-15)


def test_a_run_that_does_not_say_what_it_was_measured_over_is_a_steady_state():
    assert published._measured_over({}) == "steady state"
    assert published._measured_over({"measured_over": "whole run"}) == "whole run"
    assert published._measured_over({"other": "whole run"}, "other") == "whole run"


# ------------------------------------------------------------------- Korthikanti Table 5
def test_korthikanti_table5_gives_each_run_its_two_columns(every_case):
    """Table 5's two columns per run, each label with its column's seconds (22B: 1.42 s with
    full recomputation, 1.10 s with SP + selective)."""
    got = {c.label: c.published for c in every_case if c.source == "korthikanti_table5"}
    want = {}
    for run in catalog.published("korthikanti_table5")["run"]:
        want[f"{run['model']}, full recompute"] = run["seconds_full_recompute"]
        want[f"{run['model']}, SP + selective"] = run["seconds_selective_sp"]
    assert got == want
    assert got["korthikanti-22b, SP + selective"] == 1.10
    assert got["megatron-1t, full recompute"] == 94.42


def test_korthikanti_reader_splits_data_parallelism_from_the_gpus():
    """A made-up run of 32 GPUs at tp 8, pp 2: 32 / 16 = 2 data-parallel replicas (Table 5's
    own runs have none)."""
    run = {"model": "korthikanti-22b", "tp": 8, "pp": 2, "gpus": 32, "global_batch": 8,
           "micro_batch": 1, "interleave": 1, "seconds_full_recompute": 2.0,
           "seconds_selective_sp": 1.5}
    out, skipped = published._korthikanti({"run": [run]})
    assert skipped == []
    assert len(out) == 2
    for c in out:
        assert c.plan.dp == 2 and type(c.plan.dp) is int
        assert c.plan.n_gpus == 32
    assert [c.plan.recompute for c in out] == ["full", "selective"]
    assert [c.plan.sp for c in out] == [False, True]


# ------------------------------------------------------------------- Megatron-LM Table 1
def test_megatron_table1_cases_state_the_readers_assumptions(every_case):
    """Table 1 prints no micro-batch size or schedule: the reader assumes both, and says so
    in the words the plan follows."""
    t1 = [c for c in every_case if c.source == "megatron_lm_table1"]
    assert len(t1) == len(catalog.published("megatron_lm_table1")["run"]) == 10
    for c in t1:
        assert c.assumed == ("micro-batch 1", "plain 1F1B (no interleaving)")
        assert c.plan.micro_batch == 1 and c.plan.interleave == 1


# ------------------------------------------------------------------- every case
def test_every_case_names_its_gpu_as_the_catalog_does_and_has_integer_sizes(every_case):
    """A case's GPU is a catalog name as spelled there (the Megatron Bridge reader checks
    membership by that spelling), and a plan's parallel sizes count GPUs: integers."""
    from scaleout import catalog

    names = set(catalog.gpu_names())
    for c in every_case:
        assert c.gpu in names, (c.source, c.label, c.gpu)
        for size in ("tp", "pp", "dp", "cp", "ep", "micro_batch", "global_batch"):
            assert type(getattr(c.plan, size)) is int, (c.source, c.label, size)
    a100 = [c for c in every_case if c.source in ("korthikanti_table5", "megatron_lm_table1")]
    assert {c.gpu for c in a100} == {"A100-SXM4-80GB"}


@pytest.mark.parametrize(("reader", "source", "extra"), [
    ("_korthikanti", "korthikanti_table5",
     {"global_batch": 8, "micro_batch": 1, "interleave": 1, "seconds_full_recompute": 2.0,
      "seconds_selective_sp": 1.5}),
    ("_megatron_t1", "megatron_lm_table1", {"batch": 8, "achieved_tflops_per_gpu": 100.0})])
def test_a_gpu_count_that_tp_times_pp_does_not_divide_is_refused_by_name(reader, source, extra):
    """30 GPUs at tp 8, pp 2 (16 a replica): no whole number of data-parallel replicas. The
    reader names the file, the run and the field instead of planning 16 GPUs."""
    run = {"model": "korthikanti-22b", "tp": 8, "pp": 2, "gpus": 30, **extra}
    with pytest.raises(ValueError, match=rf"data/published/{source}\.toml: run "
                                         r"'korthikanti-22b': gpus=30 is not a multiple of "
                                         r"tp × pp = 16"):
        getattr(published, reader)({"run": [run]})
