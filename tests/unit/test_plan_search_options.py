"""The search's options reach the plans it evaluates, checked against hand-written expectations.

What is checked: the micro-batch sizes searched (the divisors of the batch up to the limit),
the recomputation modes kept under flash attention, tensor parallelism across nodes when
allowed, hybrid-shard sizes (every proper divisor of ``dp`` asked for, written out by hand),
the framework's switches reaching every plan's step time, HFU against MFU by recomputation
(4/3 for full recomputation, 1 without), the settings a result records, context-parallel
plans read back from the arrays, the default context- and expert-parallel sizes, the
no-valid-layout message's count of splits (a plain count), a plan needing exactly the GPU's
memory fitting, and the closest plan when none fits (evaluated with every setting of the
search, and the smallest of a plain loop over every plan of two GPUs).

Written to kill the planner's surviving mutants (``tests/MUTATION.md``): each expected value
comes from hand arithmetic or a plain loop in the test, not from the code under test.
"""

import itertools

import numpy as np
import pytest
from scaleout import catalog
from scaleout.layout import RECOMPUTE_MODES, Plan
from scaleout.plan import Calibration, evaluate, frameworks, search
from scaleout.plan.network import default_network
from scaleout.plan.search import NoPlanError, candidates, default_cp_sizes, default_ep_sizes

GIB = 2**30
SMALL = "megatron-1.7b"  # 24 heads, 24 layers
A100 = "A100-SXM4-80GB"


def test_micro_batch_sizes_are_the_divisors_of_the_batch_up_to_the_limit():
    # 34 = 2 · 17: its divisors 1, 2, 17, 34; the default limit of 16 keeps 1 and 2
    assert set(search(SMALL, A100, 1, 34).arrays["micro_batch"].tolist()) == {1, 2}
    assert set(search(SMALL, A100, 1, 34, max_micro_batch=17).arrays["micro_batch"]
               .tolist()) == {1, 2, 17}


def test_flash_attention_drops_selective_recomputation_only_beside_another_mode():
    def modes(**kw):
        return set(search(SMALL, A100, 1, 8, flash_attention=True, **kw).arrays["recompute"]
                   .tolist())

    assert modes() == {"none", "full"}
    assert modes(recompute=("none", "selective")) == {"none"}
    assert modes(recompute=("selective",)) == {"selective"}  # the only mode asked for stays


def test_tensor_parallelism_spans_nodes_only_when_allowed():
    # 4 GPUs in nodes of 2: tp 4 divides the 24 heads and is two whole nodes
    kw = {"gpus_per_node": 2, "max_interleave": 1}
    assert set(search(SMALL, A100, 4, 8, **kw).arrays["tp"].tolist()) == {1, 2}
    assert set(search(SMALL, A100, 4, 8, allow_tp_across_nodes=True, **kw).arrays["tp"]
               .tolist()) == {1, 2, 4}


def test_a_bad_allow_tp_across_nodes_is_named():
    with pytest.raises(ValueError, match=r"^allow_tp_across_nodes must be True or False"):
        search(SMALL, A100, 1, 8, allow_tp_across_nodes="yes")


def test_hybrid_shard_sizes_are_the_proper_divisors_of_dp():
    # 3 GPUs: tp 3 does not divide a node of 8, so tp = 1; pp 3 leaves dp = 1 (ZeRO needs
    # dp > 1); megatron-core offers ZeRO 1 and 3, sharded over all 3 ranks or in groups of 1
    a = search(SMALL, A100, 3, 6, zero_shards=(1,)).arrays
    sharded = {(int(z), int(d), int(k)) for z, d, k in zip(a["zero_stage"], a["dp"],
                                                           a["zero_shard"], strict=True) if z}
    assert sharded == {(1, 3, 3), (1, 3, 1), (3, 3, 3), (3, 3, 1)}
    assert np.array_equal(a["zero_shard"][a["zero_stage"] == 0], a["dp"][a["zero_stage"] == 0])


def test_switches_reach_every_searched_plan():
    on = search(SMALL, A100, 4, 8).arrays
    off = search(SMALL, A100, 4, 8, switches={"tp_overlap": False}).arrays
    for k in ("tp", "pp", "dp", "micro_batch", "interleave", "zero_stage", "sp", "recompute"):
        assert np.array_equal(on[k], off[k])
    slower = off["step_s"] - on["step_s"]
    assert np.all(slower >= 0)
    assert np.all(slower[on["tp"] == 1] == 0)  # nothing to overlap without tensor parallelism
    assert np.any(slower[on["tp"] > 1] > 0)


def test_hfu_exceeds_mfu_by_the_recomputed_work():
    # full recomputation runs the forward twice: 8 of every 6 FLOPs per token, 4/3
    a = search(SMALL, A100, 1, 8).arrays
    ratio = a["hfu"] / a["mfu"]
    assert np.allclose(ratio[a["recompute"] == "none"], 1.0, rtol=1e-12, atol=0)
    assert np.allclose(ratio[a["recompute"] == "full"], 4 / 3, rtol=1e-12, atol=0)
    assert np.all(ratio[a["recompute"] == "selective"] > 1)


def test_sequence_parallel_flags_select_plans():
    a = search(SMALL, A100, 4, 8).arrays
    assert a["sp"].dtype == bool
    assert a["sp"].any() and np.all(a["tp"][a["sp"]] > 1)  # sequence parallelism needs tp > 1


def test_candidates_hold_the_plan_fields_only():
    m = catalog.model(SMALL)
    from scaleout import layout

    facts = layout.Facts.of(m, 8, framework=frameworks.framework("megatron-core"),
                            seq_len=2048, flash_attention=False)
    arrays, why = candidates(m, 2, 4, facts, max_micro_batch=4, max_interleave=1,
                             zero_stages=(0,), recompute=("none",), sp_options=(False,))
    assert set(arrays) == {"tp", "cp", "pp", "dp", "ep", "micro_batch", "interleave",
                           "zero_stage", "sp", "rc", "zero_shard"}
    # 2 GPUs: (tp, pp, dp) = (1, 1, 2), (1, 2, 1), (2, 1, 1); batch 4 with dp 2: b = 1, 2;
    # dp 1: b = 1, 2, 4
    assert arrays["tp"].size == 2 + 3 + 3
    assert why == {}


def test_the_result_records_its_search():
    r = search(SMALL, A100, 2, 8, seq_len=1024, uneven_layers=False)
    assert r.model == SMALL
    assert r.seq_len == 1024
    assert r.plan().seq_len == 1024
    assert r.uneven_layers is False


def test_context_parallel_plans_read_back_with_their_cp():
    r = search(SMALL, A100, 2, 2, seq_len=4096, flash_attention=True, cp_sizes=(1, 2))
    assert set(r.arrays["cp"].tolist()) == {1, 2}
    rank = r.rank_where(cp=2)
    assert rank is not None
    assert r.plan(rank).cp == 2
    assert r.result(rank).plan.cp == 2
    assert r.plan(r.rank_where(cp=1)).cp == 1


def test_default_context_parallel_sizes_start_at_long_sequences():
    m, core = catalog.model(SMALL), frameworks.framework("megatron-core")
    # 32,768 = 2^15 tokens: 2 cp chunks divide it for cp = 1, 2, 4, ..., 32 (the largest tried)
    assert default_cp_sizes(m, 32768, core, True) == (1, 2, 4, 8, 16, 32)
    assert default_cp_sizes(m, 32767, core, True) == (1,)
    assert default_cp_sizes(m, 32768, core, False) == (1,)


def test_default_expert_parallel_sizes_need_the_framework():
    mixtral = catalog.model("mixtral-8x7b")  # 8 experts
    assert default_ep_sizes(mixtral, frameworks.framework("megatron-core")) == (1, 2, 4, 8)
    assert default_ep_sizes(mixtral, frameworks.framework("megatron-lm-2021")) == (1,)
    assert default_ep_sizes(catalog.model(SMALL), frameworks.framework("megatron-core")) == (1,)


def test_expert_sizes_on_a_framework_without_expert_parallelism_name_the_framework():
    # the framework's lack is the first thing said, before the model's
    with pytest.raises(ValueError, match=r"^ep=2: megatron-lm-2021 has no expert parallelism"):
        search(SMALL, A100, 2, 4, framework="megatron-lm-2021", ep_sizes=(1, 2))


def test_no_layout_message_counts_every_split_once():
    # 7 GPUs: (tp, pp, dp) = (1, 1, 7) breaks the batch of 8, (1, 7, 1) the 24 layers,
    # (7, 1, 1) the 24 heads: three splits, one each
    with pytest.raises(NoPlanError) as e:
        search(SMALL, A100, 7, 8, uneven_layers=False, max_interleave=1)
    text = str(e.value)
    assert "of the 3 ways to split 7 GPUs" in text
    assert text.count("(1 of 3)") == 3


def test_a_plan_needing_exactly_the_gpus_memory_fits():
    kw = {"recompute": ("none",), "sequence_parallel": (False,), "max_micro_batch": 1}
    reserve_gib = 4.0
    for _ in range(4):  # move the fixed reserve until the one plan fills the 80 GiB exactly
        a = search(SMALL, A100, 1, 8, reserve_gib=reserve_gib, **kw).arrays
        gap = float(a["memory_bytes"][0] - a["capacity_bytes"][0])
        if gap == 0:
            break
        reserve_gib -= gap / GIB
    r = search(SMALL, A100, 1, 8, reserve_gib=reserve_gib, **kw)
    assert r.arrays["capacity_bytes"][0] == 80 * GIB
    assert r.arrays["memory_bytes"][0] == 80 * GIB
    assert r.n_fit == 1


def test_the_closest_plan_is_the_smallest_and_evaluated_with_the_searched_settings():
    gpu, model = "A100-SXM4-40GB", "megatron-7.5b"
    net = default_network(gpu, 1)  # one GPU a node: every collective crosses the network
    settings = {"calibration": Calibration(gemm_efficiency=0.5), "recipe": "fp32-adam",
                "framework": "deepspeed-2021", "uneven_layers": False}
    with pytest.raises(NoPlanError) as e:
        search(model, gpu, 2, 4, net, seq_len=1024, **settings)
    closest = e.value.closest
    assert closest.plan.seq_len == 1024
    again = evaluate(model, gpu, closest.plan, net, **settings)
    assert closest.memory_bytes == again.memory_bytes
    assert closest.step_s == again.step_s
    # a plain loop over every plan of 2 GPUs and a batch of 4 that evaluate accepts
    least = np.inf
    for tp, pp, mb, v, z, sp, rc in itertools.product(
            (1, 2), (1, 2), (1, 2, 4), range(1, 9), range(4), (False, True), RECOMPUTE_MODES):
        if tp * pp > 2:
            continue
        try:  # the plan and evaluate refuse what the layout rules do not allow
            p = Plan(tp=tp, pp=pp, dp=2 // (tp * pp), micro_batch=mb, global_batch=4,
                     interleave=v, zero_stage=z, sp=sp, recompute=rc, seq_len=1024)
            least = min(least, evaluate(model, gpu, p, net, **settings).memory_bytes)
        except ValueError:
            continue
    assert least > 40 * GIB
    assert closest.memory_bytes == least
