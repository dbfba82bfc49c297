"""The DeepSeek-V3 reader against the report it reads (survivors of a mutation run of
``scaleout.plan.published._deepseek_v3``, batch d5).

The source is DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv 2412.19437), copied into
``data/published/deepseek_v3.toml`` with the report's sentences in its comments. What is
checked, each expected value typed from the report or the file, or worked out by hand:

* the plan (Sec. 3.2, p. 12): 16-way pipeline parallelism, 64-way expert parallelism,
  ZeRO-1 data parallelism over 2,048 / 16 = 128 ranks, no tensor parallelism ("without using
  costly Tensor Parallelism") and no context parallelism, the final batch of 15,360 sequences
  of 4,096 tokens, micro-batch 1 (the reader's assumption), selective recomputation (Sec.
  3.2.3: RMSNorm and MLA up-projections recomputed, no full recomputation), a fused attention
  kernel;
* the model: multi-token prediction of depth 1 (Sec. 4.2), as the file's ``mtp_depth`` says;
* made-up runs shaped like the file's: every field the reader takes from the file is read
  from it (``tp = 2``, ``cp = 2``, ``mtp_depth`` 0 or 2, 4 GPUs a node), and a run that does
  not record an MTP depth trained none (the catalog's default, and the Megatron Bridge
  reader's rule for an unstated MTP);
* the whole-run goodput of a made-up run in nodes of 4 GPUs, worked out by hand from Llama
  3's failure table (as in ``test_published_survivors.py``), and a made-up steady-state run's
  goodput of exactly 1 with its GPU-hours read unscaled;
* the reader's own assumptions: micro-batch 1 with 15,360 / 128 = 120 micro-batches a step,
  and balanced routing (the report's auxiliary-loss-free balancing without token dropping).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scaleout import catalog, memory
from scaleout.plan import published
from support import goodput_by_hand

SOURCE = "deepseek_v3"


def _case():
    """The one DeepSeek-V3 case of ``published.cases()``."""
    got = [c for c in published.cases()[0] if c.source == SOURCE]
    assert len(got) == 1
    return got[0]


def _made_up(**change):
    """The file's run with ``change`` applied (``None`` drops a field), read by the reader."""
    run = dict(catalog.published(SOURCE)["run"][0])
    for key, value in change.items():
        if value is None:
            del run[key]
        else:
            run[key] = value
    got, skipped = published._deepseek_v3({"run": [run]})
    assert skipped == [] and len(got) == 1
    return got[0]


# ------------------------------------------------------------------- the plan
def test_deepseek_v3_plan_as_the_report_states():
    """PP16, EP64, ZeRO-1 DP over 2,048 / 16 = 128 ranks, TP 1, CP 1; batch 15,360 of 4,096
    tokens; micro-batch 1; selective recomputation; flash attention."""
    p = _case().plan
    assert (p.tp, p.cp, p.pp, p.ep, p.dp) == (1, 1, 16, 64, 128)
    assert p.tp * p.cp * p.pp * p.dp == 2048
    assert p.zero_stage == 1
    assert p.micro_batch == 1
    assert p.global_batch == 15360
    assert p.seq_len == 4096
    assert p.recompute == "selective"
    assert p.flash_attention is True


def test_a_made_up_run_with_tensor_parallelism_keeps_it():
    """tp = 2 (dp = 2,048 / (2 x 16) = 64): the plan has tp 2, not the default 1."""
    p = _made_up(tp=2, dp=64).plan
    assert (p.tp, p.cp, p.pp, p.dp, p.ep) == (2, 1, 16, 64, 64)
    assert p.n_gpus == 2048


def test_a_made_up_run_with_context_parallelism_keeps_it():
    """cp = 2 (dp = 2,048 / (2 x 16) = 64): the plan has cp 2, not the default 1."""
    p = _made_up(cp=2, dp=64).plan
    assert (p.tp, p.cp, p.pp, p.dp, p.ep) == (1, 2, 16, 64, 64)
    assert p.n_gpus == 2048


# ------------------------------------------------------------------- multi-token prediction
def test_deepseek_v3_trains_one_mtp_module():
    """Sec. 4.2: multi-token prediction depth 1, the file's mtp_depth = 1."""
    c = _case()
    assert c.model.name == "deepseek-v3"
    assert c.model.mtp_layers == 1


@pytest.mark.parametrize("depth", [0, 2])
def test_a_made_up_runs_mtp_depth_is_the_files(depth):
    """The depth the file records, whatever the catalog's model says (it says 1)."""
    assert _made_up(mtp_depth=depth).model.mtp_layers == depth


def test_a_made_up_run_without_an_mtp_depth_trained_none():
    """No mtp_depth in the file: no MTP module (ModelSpec's default 0; the Megatron Bridge
    reader likewise drops an MTP the row does not state)."""
    assert _made_up(mtp_depth=None).model.mtp_layers == 0


# ------------------------------------------------------------------- goodput


def test_a_made_up_run_in_nodes_of_4_has_its_own_goodput():
    """gpus_per_node = 4: 512 nodes, twice the per-node failures (46.625 + 11.5 = 58.125
    interruptions a snapshot); the fp8-deepseek checkpoint at 10 bytes a parameter. The
    whole-run reading divides the GPU-hours by that goodput."""
    c = _made_up(gpus_per_node=4)
    want, m = goodput_by_hand(memory.param_count(c.model), 10, 2048, 4)
    assert m / 3600 == pytest.approx(1296 / 58.125, rel=1e-12)
    assert c.goodput == pytest.approx(want, rel=1e-10)
    eight, _ = goodput_by_hand(memory.param_count(c.model), 10, 2048, 8)
    assert c.goodput < eight
    # 2,048 GPUs at 1e3 tokens/s each: 1e12 / 1e3 / 3600 GPU-hours, over the goodput
    r = SimpleNamespace(tokens_per_s=2048e3, plan=SimpleNamespace(n_gpus=2048))
    assert c.predict(r) == pytest.approx(1e9 / 3600 / want, rel=1e-10)


def test_a_run_in_nodes_of_4_is_also_networked_in_nodes_of_4():
    """The run's node size is one fact: the network a made-up run of 4 GPUs a node is
    priced on groups 4 GPUs behind each NVLink domain, as its failures do, on the H800's
    own links (NVLink 200 GB/s a direction, IB NDR 50 GB/s a GPU); the report's run, 8."""
    c = _made_up(gpus_per_node=4)
    assert c.network.gpus_per_node == 4
    assert (c.network.intra.gbytes_s, c.network.inter.gbytes_s) == (200, 50)
    (real,) = [x for x in published.cases()[0] if x.source == "deepseek_v3"]
    assert real.network.gpus_per_node == 8

def test_a_made_up_steady_state_run_has_goodput_1():
    """measured_over = "steady state": the GPU-hours read as they are, a goodput of exactly 1
    (a share of wall time, never above 1), no whole-run assumption."""
    c = _made_up(measured_over="steady state")
    assert c.goodput == 1.0
    r = SimpleNamespace(tokens_per_s=2048e3, plan=SimpleNamespace(n_gpus=2048))
    assert c.predict(r) == pytest.approx(1e9 / 3600, rel=1e-12)
    assert not any(a.startswith("a whole-run average") for a in c.assumed)


# ------------------------------------------------------------------- assumptions
def test_deepseek_v3_assumptions_after_the_files():
    """The file's assumptions first, then the reader's: micro-batch 1, and 15,360 sequences
    over 128 data-parallel ranks is 120 micro-batches a step; balanced routing (Sec. 2.1.2:
    auxiliary-loss-free balancing, no token dropping)."""
    c = _case()
    file_assumed = tuple(catalog.published(SOURCE)["run"][0]["assumed"])
    assert c.assumed[:len(file_assumed)] == file_assumed
    assert 15360 // (128 * 1) == 120
    ours = c.assumed[len(file_assumed):]
    assert ours[0] == "micro-batch 1, 120 micro-batches per step"
    assert "balanced routing" in ours
    assert ours.index("balanced routing") == len(ours) - 2  # before the whole-run sentence
    assert ours[-1].startswith("a whole-run average")
