"""The Llama 3 and torchtitan readers, ``validate`` and ``fit_calibration`` against hand-made
expectations (survivors of a mutation run of ``scaleout.plan.published`` and
``scaleout.plan.validation``, batch p3).

What is checked, each expected value typed from the source or a property that must hold:

* Llama 3's Table 4 runs (Llama Team 2024, arXiv 2407.21783): the quantity as printed
  (TFLOP/s per GPU in model FLOPs), the reader's assumptions in its own words, the context
  parallelism one for a run with CP > 1 only (a made-up run at CP 2 included), no activation
  checkpointing ("we could pre-train Llama 3 on sequences of 8K tokens without activation
  checkpointing", Sec. 3.3.2), and the network of Sec. 3.3.1: 8 GPUs a server on NVLink,
  RoCE at 400 Gb/s, i.e. 50 GB/s, per GPU;
* torchtitan's performance tables (pytorch/torchtitan, docs/performance.md at 4d88a8a4): the
  two A100 rows that are modelled (Llama 3 8B with per-op selective recomputation, 2,973
  tokens/s a GPU, and 70B with full recomputation, 331) as FSDP2 plans (ZeRO-3 on 64 GPUs,
  flash attention, torchtitan's shipped 8,192 tokens), the 26 others left out with their
  reasons, and made-up runs showing each of a run's sizes reaches the plan;
* ``validate`` against a plain loop over ``plan.evaluate`` with each case's own network and a
  given calibration, its rows keyed by the case's source;
* ``fit_calibration``'s coordinate descent on a made-up objective: a tie or an improvement
  of no more than 10^-12 is not a move.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from scaleout import catalog, plan
from scaleout.plan import published, validation

LLAMA3_ASSUMED = ("micro-batch 1", "interleave 2",
                  "sharded data parallelism as ZeRO-2 with pipelining",
                  "first and last stage one layer fewer: the planner's balanced split")
LLAMA3_CP = "context parallelism as ring attention (Llama 3 all-gathers K and V)"


@pytest.fixture
def every():
    return published.cases()


# ------------------------------------------------------------------- Llama 3 Table 4
def test_llama3_cases_state_the_quantity_and_the_readers_assumptions(every):
    """Table 4 prints TFLOPs/GPU in model FLOPs (430, 400, 380); the two 8K rows run without
    context parallelism, the 128K row at CP 16 adds the ring-attention assumption."""
    l3 = {c.label: c for c in every[0] if c.source == "llama3_table4"}
    assert sorted(l3) == ["405B, 128K context, 16,384 GPUs", "405B, 8K context, 16,384 GPUs",
                          "405B, 8K context, 8,192 GPUs"]
    assert [l3[k].published for k in ("405B, 8K context, 8,192 GPUs",
                                      "405B, 8K context, 16,384 GPUs",
                                      "405B, 128K context, 16,384 GPUs")] == [430, 400, 380]
    for c in l3.values():
        assert c.quantity == "TFLOP/s per GPU (model FLOPs)"
        assert c.plan.recompute == "none"  # "without activation checkpointing"
    for label in ("405B, 8K context, 8,192 GPUs", "405B, 8K context, 16,384 GPUs"):
        assert l3[label].plan.cp == 1
        assert l3[label].assumed == LLAMA3_ASSUMED
    long = l3["405B, 128K context, 16,384 GPUs"]
    assert long.plan.cp == 16
    assert long.assumed == (*LLAMA3_ASSUMED, LLAMA3_CP)


def test_llama3_network_is_sec_3_3_1s():
    """Sec. 3.3.1: 8 GPUs a Grand Teton server on NVLink (H100: 900 GB/s both ways, 450 a
    direction), a RoCE fabric at 400 Gb/s per GPU: 400 / 8 = 50 GB/s, not InfiniBand."""
    out, skipped = published._llama3(catalog.published("llama3_table4"))
    assert skipped == [] and len(out) == 3
    for c in out:
        net = c.network
        assert net.inter.name == "RoCE v2 400GbE"
        assert "Converged Ethernet" in net.inter.technology
        assert net.inter.gbytes_s == 400 / 8
        assert net.intra.gbytes_s == 900 / 2
        assert net.gpus_per_node == 8


def _llama3_run(cp):
    return {"case": f"made up, CP {cp}", "gpu": "H100-SXM5-80GB", "tp": 8, "cp": cp,
            "pp": 16, "dp": 4, "global_batch": 64, "seq_len": 8192 * cp,
            "tflops_per_gpu": 400}


@pytest.mark.parametrize("cp", [1, 2, 4])
def test_llama3_reader_names_context_parallelism_whenever_there_is_some(cp):
    """A made-up run at CP 2 splits each sequence over two GPUs: it too is context
    parallelism and says how it is modelled; CP 1 is none."""
    (c,), skipped = published._llama3({"run": [_llama3_run(cp)]})
    assert skipped == []
    assert c.plan.cp == cp
    want = LLAMA3_ASSUMED + ((LLAMA3_CP,) if cp > 1 else ())
    assert c.assumed == want


# ------------------------------------------------------------------- torchtitan
def test_torchtitan_models_the_two_a100_rows_as_fsdp2(every):
    """docs/performance.md: Llama 3 8B with per-op selective recomputation at 2,973 tokens/s a
    GPU and 70B with full recomputation at 331, FSDP2 on 64 A100 80GB, one sequence a GPU of
    torchtitan's shipped 8,192 tokens; FSDP2 shards parameters, gradients and optimizer
    states (ZeRO-3); torchtitan's attention is PyTorch's SDPA (flash)."""
    tt = [c for c in every[0] if c.source == "torchtitan_2024"]
    assert [(c.model.name, c.published) for c in tt] == [("llama3-8b", 2973),
                                                         ("llama3-70b", 331)]
    assert [c.label for c in tt] == ["llama3-8b, FSDP2 on 64 A100, selective (op policy)",
                                     "llama3-70b, FSDP2 on 64 A100, full"]
    assert [c.plan.recompute for c in tt] == ["selective", "full"]
    for c in tt:
        p = c.plan
        assert (p.tp, p.pp, p.dp, p.cp) == (1, 1, 64, 1)
        assert (p.micro_batch, p.global_batch) == (1, 64)
        assert p.zero_stage == 3
        assert p.flash_attention is True
        assert p.seq_len == 8192
        assert c.gpu == "A100-SXM4-80GB"
        assert c.quantity == "tokens/s per GPU"


def test_torchtitan_leaves_out_every_other_row_with_its_reason():
    """28 runs in the file: 3 on A100 (one of them recomputing every other layer, which is
    not modelled) and 25 on H100s of 94-96 GB that the catalog does not hold."""
    raw = catalog.published("torchtitan_2024")
    assert len(raw["run"]) == 28
    out, skipped = published._torchtitan(raw)
    assert len(out) == 2
    assert len(skipped) == 26
    assert skipped[0] == ("A llama3-8b on 64: recomputation of every other layer is not "
                          "modelled")
    assert skipped[1] == ("A llama3-405b on 128: H100 (HBM2e 94-96GB, lower TDP) is not in "
                          "the catalog (peak unknown)")
    assert skipped[-1] == ("C llama3-8b on 64: H100 (HBM2e 96GB, 500 W) is not in the "
                           "catalog (peak unknown)")
    assert sum("is not in the catalog" in s for s in skipped) == 25


def _tt_run(**kw):
    return {"part": "X", "model": "llama3-8b", "gpu": "A100-SXM4-80GB", "gpus": 64,
            "fsdp": 64, "micro_batch": 1, "global_batch": 64, "recompute": "full",
            "tokens_per_s_per_gpu": 1000.0} | kw


def test_torchtitan_reader_carries_each_size_of_a_run_into_its_plan():
    """A made-up A100 run of 64 GPUs: TP 4 × PP 2 × FSDP 8, two sequences of 4,096 tokens a
    micro-batch, 64 sequences a step (4 micro-batches a step per replica)."""
    run = _tt_run(fsdp=8, tp=4, pp=2, micro_batch=2, global_batch=64, seq_len=4096)
    (c,), skipped = published._torchtitan({"run": [run]})
    assert skipped == []
    p = c.plan
    assert (p.tp, p.pp, p.dp) == (4, 2, 8)
    assert (p.micro_batch, p.global_batch, p.seq_len) == (2, 64, 4096)
    assert p.n_gpus == 64


def test_torchtitan_run_without_a_sequence_length_uses_the_shipped_8192():
    """torchtitan's shipped configs set seq_len = 8192 (the data file's header): a run that
    does not print its sequence reads as 8,192 tokens whatever the model's own (gpt3-175b's is
    2,048)."""
    run = _tt_run(model="gpt3-175b", fsdp=8, tp=8, global_batch=8)
    (c,), _ = published._torchtitan({"run": [run]})
    assert c.model.seq_len == 2048
    assert c.plan.seq_len == 8192



def test_torchtitan_cases_run_under_torchtitans_preset_with_the_files_assumptions():
    """Each modelled A100 row runs under the torchtitan preset and carries what the file says
    it assumed, word for word (docs/performance.md prints neither the sequence length nor the
    interconnect)."""
    tt = [c for c in published.cases()[0] if c.source == "torchtitan_2024"]
    assert [c.framework for c in tt] == ["torchtitan", "torchtitan"]
    for c in tt:
        assert c.assumed == ("seq_len 8192 from the shipped config", "interconnect not stated",
                             "FSDP2 reduce dtype not stated", "no torch.compile")


def test_torchtitan_run_without_tp_pp_or_assumptions_is_pure_fsdp_and_assumes_nothing():
    """A made-up A100 row that prints neither TP nor PP nor assumptions: FSDP over all its 64
    GPUs (TP 1, PP 1) and an empty tuple of assumptions."""
    (c,), _ = published._torchtitan({"run": [_tt_run()]})
    assert (c.plan.tp, c.plan.pp, c.plan.dp) == (1, 1, 64)
    assert c.assumed == ()

# ------------------------------------------------------------------- validate
def test_validate_predicts_each_case_on_its_own_network_with_the_given_calibration():
    """Llama 3's cases on their RoCE network with GEMMs at 60 %: each row the case's own
    quantity of a plain ``plan.evaluate``, keyed by the case's source (the error log groups by
    it)."""
    cal = replace(plan.DEFAULT_CALIBRATION, gemm_efficiency=0.60)
    cases = [c for c in published.cases()[0] if c.source == "llama3_table4"]
    rows = validation.validate(cal, ["llama3_table4"])
    assert len(rows) == len(cases) == 3
    for row, c in zip(rows, cases, strict=True):
        r = plan.evaluate(c.model, c.gpu, c.plan, c.network, calibration=cal,
                          framework=c.framework, recipe=c.recipe)
        assert row.case == c.label
        assert row.source == "llama3_table4"
        assert row.predicted == pytest.approx(r.model_tflops_per_gpu, rel=1e-12)
    assert set(validation._log_step_errors(rows)) == {"llama3_table4"}


# ------------------------------------------------------------------- fit_calibration
def _fake_fit(monkeypatch, score, start):
    """``fit_calibration`` with ``validate`` handing the trial itself to a made-up
    objective."""
    monkeypatch.setattr(validation, "validate", lambda cal, sources: cal)
    monkeypatch.setattr(validation, "_objective", score)
    return validation.fit_calibration(["x"], start=start)


def test_fit_calibration_moves_only_on_a_strict_improvement(monkeypatch):
    """The objective depends on the GEMM efficiency alone, least at 0.72 (a grid value):
    the fit moves it there and leaves the three other numbers at the start, every one of
    their grid values scoring the same (a tie is no move)."""
    start = plan.DEFAULT_CALIBRATION
    cal, best = _fake_fit(monkeypatch, lambda c: (c.gemm_efficiency - 0.72) ** 2, start)
    assert cal == replace(start, gemm_efficiency=0.72)
    assert best == 0.0


def test_fit_calibration_ignores_an_improvement_of_1e_12(monkeypatch):
    """One trial (x_half = 25) scores 10^-12 below the start, float noise for the fit: no
    move; 10^-9 below is one."""
    start = plan.DEFAULT_CALIBRATION
    assert start.gemm_half_dim != 25.0

    def noise(c):
        return 1.0 - 1e-12 if c.gemm_half_dim == 25.0 else 1.0

    assert _fake_fit(monkeypatch, noise, start) == (start, 1.0)

    def better(c):
        return 1.0 - 1e-9 if c.gemm_half_dim == 25.0 else 1.0

    assert _fake_fit(monkeypatch, better, start) == (replace(start, gemm_half_dim=25.0),
                                                     1.0 - 1e-9)
