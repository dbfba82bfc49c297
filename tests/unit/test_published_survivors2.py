"""The published runs' readers against the papers (survivors of a mutation run of
``scaleout.plan.published``, batch p2).

What is checked, each expected value typed from the source or a property that must hold:

* MegaScale's Table 2 Megatron-LM rows (Jiang et al. 2024, arXiv 2402.15627): the plan follows
  what each case says it assumes (micro-batch 1, sequence parallelism with selective
  recomputation, the distributed optimizer as ZeRO-1) and the paper's Table 1 (interleaved
  1F1B with 6 virtual stages for the 175B model); the reader's first three assumptions in its
  own words; the network of Sec. 3.6 (A100 NVLink, 600 GB/s both ways, i.e. 300 a direction;
  one 200 Gb/s port, 25 GB/s, per GPU; 8 GPUs a server); the baseline as Megatron-LM at
  commit 285068c8 without the overlaps MegaScale adds; the printed 40.0 s of the 256-GPU row
  read back by the validation as the step; the custom model named as catalog models are;
* a Narayanan et al. (2021) Table 2 run whose file states no assumptions has none;
* Llama 3's Table 4 runs (Grattafiori et al. 2024, arXiv 2407.21783): optimizer states and
  gradients sharded across data parallelism, i.e. ZeRO-2, as the case says it assumes.
"""

from __future__ import annotations

import pytest
from scaleout import catalog
from scaleout.plan import published, validation
from scaleout.plan.frameworks import framework


@pytest.fixture
def every_case():
    return published.cases()[0]


@pytest.fixture
def megascale(every_case):
    return [c for c in every_case if c.source == "megascale_table2"]


# ------------------------------------------------------------------- MegaScale Table 2
def test_megascale_reads_every_megatron_lm_row_with_an_iteration_time(megascale):
    """Table 2 prints Megatron-LM at 256, 512, 768, 1,024, 3,072, 6,144, 8,192 and 12,288
    GPUs; each with a time is a case."""
    rows = [r for r in catalog.published("megascale_table2")["run"]
            if r["method"] == "megatron-lm" and "seconds_per_iteration" in r]
    assert len(megascale) == len(rows) > 0


def test_megascale_plans_follow_the_stated_assumptions_and_table_1(megascale):
    """Each case says it assumes micro-batch 1, SP + selective recompute and the distributed
    optimizer (ZeRO-1); Table 1 gives the 175B model TP 8, PP 8 and 6 virtual stages."""
    for c in megascale:
        p = c.plan
        assert p.micro_batch == 1
        assert p.sp is True
        assert p.recompute == "selective"
        assert p.zero_stage == 1
        assert p.interleave == 6
        assert (p.tp, p.pp) == (8, 8)
        assert p.n_gpus == int(c.label.rsplit(" ", 1)[1].replace(",", ""))


def test_megascale_cases_state_their_assumptions_in_the_readers_words(megascale):
    """The first three assumptions, as the reader writes them (GPU, micro-batch, activation
    memory), and the ZeRO-1 one."""
    for c in megascale:
        assert c.assumed[:3] == ("A100 80GB", "micro-batch 1", "SP + selective recompute")
        assert "distributed optimizer (ZeRO-1)" in c.assumed


def test_megascale_network_is_sec_3_6s(megascale):
    """A100 NVLink: 600 GB/s both directions, 300 a direction (NVIDIA's A100 datasheet);
    one 200 Gb/s NIC per GPU: 200 / 8 = 25 GB/s; 8 GPUs a server."""
    for c in megascale:
        net = c.network
        assert net.intra.gbytes_s == 600 / 2
        assert net.inter.gbytes_s == 200 / 8
        assert net.gpus_per_node == 8


def test_megascale_baseline_is_megatron_lm_2023_without_overlap(megascale):
    """Sec. 6.1: the baseline is Megatron-LM at commit 285068c8, with no TP, pipeline or DP
    overlap (MegaScale adds them): the case's framework must say so."""
    for c in megascale:
        fw = framework(c.framework)
        assert "285068c8" in fw.label
        assert fw.grad_overlap is False
        assert fw.param_gather_overlap is False
        assert fw.tp_overlap is False
        assert fw.p2p_overlap is False


def test_megascale_256_gpu_row_reads_back_as_its_printed_40_seconds(megascale):
    """Table 2, Megatron-LM on 256 GPUs: 40.0 s an iteration, read back as the step itself
    (a time in seconds an iteration is the step)."""
    c = next(c for c in megascale if c.plan.n_gpus == 256)
    assert c.published == 40.0
    assert validation._printed_step_s(c) == 40.0
    assert validation._printed_step_s(c) == pytest.approx(768 * 2048 / 39300, rel=0.01)


def test_megascale_model_is_named_as_catalog_models_are(megascale):
    """Every catalog model name is lower case; the paper's 175B with 128 heads and a vocabulary
    of 64,000 is no catalog model, and its name says whose it is."""
    assert all(m.name == m.name.lower() for m in catalog.models())
    for c in megascale:
        name = c.model.name
        assert name == name.lower()
        assert name.startswith("megascale") and name.endswith("175b")
        assert name not in {m.name for m in catalog.models()}
        assert (c.model.n_layers, c.model.hidden, c.model.n_heads, c.model.vocab) == (
            96, 12288, 128, 64000)


# ------------------------------------------------------------------- Narayanan Table 2
def test_a_zero3_run_without_assumptions_assumes_nothing():
    """A made-up ZeRO-3 run of 8 GPUs whose file lists no ``assumed``: a case with none."""
    run = {"scheme": "zero3", "model": "korthikanti-175b", "tp": 1, "pp": 1, "gpus": 8,
           "dp": 8, "zero_stage": 3, "global_batch": 32, "micro_batch": 4,
           "achieved_tflops_per_gpu": 100.0}
    out, skipped = published._zero3({"gpu": "A100-SXM4-80GB", "run": [run]})
    assert skipped == []
    assert len(out) == 1
    assert out[0].assumed == ()
    assert out[0].plan.zero_stage == 3 and out[0].framework == "deepspeed-2021"


# ------------------------------------------------------------------- Llama 3 Table 4
def test_llama3_shards_optimizer_and_gradients_as_zero2(every_case):
    """Sec. 3.3.2: optimizer states and gradients sharded, parameters kept after the forward
    pass: ZeRO-2, which each case says it assumes."""
    l3 = [c for c in every_case if c.source == "llama3_table4"]
    assert len(l3) == len(catalog.published("llama3_table4")["run"]) > 0
    for c in l3:
        assert c.plan.zero_stage == 2
        assert c.plan.micro_batch == 1 and c.plan.interleave == 2
        assert any("ZeRO-2" in a for a in c.assumed)
