"""Hybrid sharding (HSDP), a framework's switches and the memory reserve, through the planner."""

from __future__ import annotations

import numpy as np
import pytest
from scaleout import catalog, memory, plan
from scaleout.layout import Plan
from scaleout.plan.frameworks import Framework
from scaleout.plan.step import RESERVE, context
from scaleout.units import GIB

MODEL, GPU = "llama3-70b", "H100-SXM5-80GB"
#: No overlap, no buckets: every collective shows, so the sum can be checked term by term.
BARE = Framework("bare", "no overlap, one call per collective", zero_stages=(0, 1, 2, 3),
                 max_zero_with_pp=3, hybrid_shard=True)


def test_a_shard_group_as_large_as_dp_is_plain_zero():
    assert Plan(tp=8, dp=16, zero_stage=3, zero_shard=16, global_batch=16).zero_shard is None
    assert Plan(tp=8, dp=16, zero_stage=3, global_batch=16).shard_group == 16


def test_hybrid_sharding_holds_state_for_its_group_only():
    """Model state is divided by the shard group, not by dp (ZeRO Sec. 5 with N_d = group)."""
    full = plan.evaluate(MODEL, GPU, Plan(tp=8, dp=32, zero_stage=3, global_batch=32),
                         framework="torchtitan")
    hybrid = plan.evaluate(MODEL, GPU, Plan(tp=8, dp=32, zero_stage=3, zero_shard=4,
                                            global_batch=32), framework="torchtitan")
    params = memory.param_breakdown(catalog.model(MODEL))["total"] / 8
    want = memory.model_state_breakdown(params, 3, 4)
    assert hybrid.memory["weights"] == pytest.approx(want.weights, rel=1e-9)
    assert hybrid.memory["optimizer"] == pytest.approx(want.optimizer, rel=1e-9)
    assert hybrid.memory["optimizer"] == pytest.approx(8 * full.memory["optimizer"], rel=1e-9)
    assert "in groups of 4 (hybrid)" in hybrid.plan.label


def test_hybrid_zero1_costs_a_group_reduce_scatter_a_replica_all_reduce_and_a_group_gather():
    """TP8 fills each H100 node, so a data-parallel group has one rank per node: ZeRO-1 in
    groups of 4 over dp=16 reduce-scatters over 4 nodes, all-reduces a quarter of the
    gradients over the 4 replicas, and all-gathers the weights over 4 nodes."""
    p = Plan(tp=8, dp=16, zero_stage=1, zero_shard=4, global_batch=16)
    r = plan.evaluate(MODEL, GPU, p, framework=BARE)
    ctx = context(MODEL, GPU, None, None, "mixed-adam", None, 16, BARE)
    params = r.memory["weights"] / 2  # 16-bit weights, replicated under ZeRO-1
    rec = memory.get_recipe("mixed-adam")
    col = ctx.collectives
    want = (col.time("reduce_scatter", params * rec.grad_bytes, 4, 1)
            + col.time("all_reduce", params * rec.grad_bytes / 4, 4, 1)
            + col.time("all_gather", params * rec.weight_bytes, 4, 1))
    assert r.step["dp_comm"] == pytest.approx(float(want), rel=1e-9)
    whole = plan.evaluate(MODEL, GPU, Plan(tp=8, dp=16, zero_stage=1, global_batch=16),
                          framework=BARE)
    assert whole.step["dp_comm"] == pytest.approx(float(
        col.time("reduce_scatter", params * rec.grad_bytes, 16, 1)
        + col.time("all_gather", params * rec.weight_bytes, 16, 1)), rel=1e-9)


def test_search_tries_the_shard_groups_asked_for_and_only_where_they_fit():
    r = plan.search("llama3-8b", GPU, 64, 256, framework="pytorch-fsdp", zero_shards=(8,),
                    max_micro_batch=2, max_interleave=1)
    a = r.arrays
    hybrid = a["zero_shard"] < a["dp"]
    assert hybrid.any() and (a["zero_shard"][hybrid] == 8).all()
    assert (a["zero_stage"][hybrid] >= 1).all()
    assert (a["dp"][hybrid] > 8).all() and (a["dp"][hybrid] % 8 == 0).all()
    plain = plan.search("llama3-8b", GPU, 64, 256, framework="pytorch-fsdp",
                        max_micro_batch=2, max_interleave=1)
    assert r.n_evaluated == plain.n_evaluated + int(hybrid.sum())
    i = int(np.flatnonzero(hybrid)[0])
    one = plan.evaluate("llama3-8b", GPU, plan.plan_from_arrays(a, i, global_batch=256),
                        framework="pytorch-fsdp")
    assert one.step_s == pytest.approx(float(a["step_s"][i]), rel=1e-9)


def test_hybrid_sharding_needs_a_framework_that_has_it():
    with pytest.raises(ValueError, match="deepspeed-2021 does not shard in groups"):
        plan.search(MODEL, GPU, 128, 128, framework="deepspeed-2021", zero_shards=(8,))
    with pytest.raises(ValueError, match=r"zero_shard=4 \(hybrid sharding\) is not offered by "
                                         "deepspeed-2021"):
        plan.evaluate(MODEL, GPU, Plan(tp=8, dp=16, zero_stage=1, zero_shard=4,
                                       global_batch=16), framework="deepspeed-2021")
    with pytest.raises(ValueError, match="zero_shard=3 must divide dp=16"):
        Plan(tp=8, dp=16, zero_stage=1, zero_shard=3, global_batch=16)
    with pytest.raises(ValueError, match="zero_stage=0"):
        Plan(tp=8, dp=16, zero_shard=4, global_batch=16)


def test_turning_off_an_overlap_exposes_the_gradient_reduction():
    p = Plan(tp=8, pp=4, dp=8, micro_batch=1, global_batch=64, zero_stage=1)
    on = plan.evaluate(MODEL, GPU, p)
    off = plan.evaluate(MODEL, GPU, p, switches={"grad_overlap": False,
                                                 "param_gather_overlap": False})
    assert off.step["dp_comm"] > on.step["dp_comm"]
    assert off.step["forward"] == on.step["forward"]
    assert "grad_overlap off" in off.framework_label
    assert plan.evaluate(MODEL, GPU, p, switches={"grad_overlap": True}).step == on.step


@pytest.mark.parametrize("switches, message", [
    ({"grad_overlaps": False}, "switch must be one of .*grad_overlap.*got .grad_overlaps"),
    ({"grad_overlap": "no"}, "must be True or False"),
    ({"tp_overlap": True}, "megatron-lm-2021 has no tp overlap to turn on"),
    ([("grad_overlap", False)], "switches must map"),
])
def test_bad_switches_say_what_is_allowed(switches, message):
    p = Plan(tp=8, pp=8, dp=2, global_batch=16)
    with pytest.raises(ValueError, match=message):
        plan.evaluate("gpt3-175b", "A100-SXM4-80GB", p, framework="megatron-lm-2021",
                      switches=switches)


def test_the_fixed_reserve_can_be_set_and_is_checked():
    p = Plan(tp=8, pp=4, dp=4, global_batch=64)
    default = plan.evaluate(MODEL, GPU, p)
    none = plan.evaluate(MODEL, GPU, p, reserve_gib=0)
    fixed = RESERVE["context_gib"] + RESERVE["nccl_gib"]
    assert (default.memory_bytes - none.memory_bytes) / GIB == pytest.approx(fixed, rel=1e-9)
    for bad in (-1, 80, float("nan")):
        with pytest.raises(ValueError, match="reserve_gib"):
            plan.evaluate(MODEL, GPU, p, reserve_gib=bad)
    r = plan.search(MODEL, GPU, 128, 128, reserve_gib=10, max_micro_batch=1, max_interleave=1)
    assert r.result().memory["reserve"] >= 10 * GIB


def test_tp_overlap_reaches_only_an_nvlink_domain():
    """Megatron-Core's userbuffers overlap a tensor-parallel group inside one NVLink domain
    only (Transformer Engine issue #1071): TP16 on 8-GPU nodes exposes exactly what it would
    with the overlap switched off; on a 16-GPU domain the overlap hides part of it."""
    p = plan.Plan(tp=16, pp=8, dp=24, micro_batch=1, global_batch=3072, sp=True,
                  recompute="selective", zero_stage=1)
    for domain, hidden in ((8, False), (16, True)):
        net = plan.default_network("A100-SXM4-80GB", domain)
        on = plan.evaluate("megatron-1t", "A100-SXM4-80GB", p, net, framework="megatron-core",
                           allow_tp_across_nodes=True)
        off = plan.evaluate("megatron-1t", "A100-SXM4-80GB", p, net, framework="megatron-core",
                            switches={"tp_overlap": False}, allow_tp_across_nodes=True)
        assert off.step["tp_comm"] > 0
        if hidden:
            assert on.step["tp_comm"] < off.step["tp_comm"]
        else:
            assert on.step["tp_comm"] == off.step["tp_comm"]
