"""ZeRO-2 as PyTorch FSDP runs it (``ShardingStrategy.SHARD_GRAD_OP``,
:attr:`~scaleout.plan.frameworks.Framework.zero2_per_unit`): each unit's weights gathered
before its forward and kept through its backward, its gradients reduce-scattered unit by unit,
every micro-batch; against DeepSpeed's and Megatron-Core's ZeRO-2 (bucketed gradient reduction,
one gather of the updated weights after the optimizer step).

The per-unit timeline is worked by hand on a context of plain namespaces holding only what
``step._dp_full`` reads (a made-up collective whose seconds are its bytes over 1 GB/s), and the
switch is checked end to end through :func:`scaleout.plan.evaluate`.
"""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from scaleout import plan
from scaleout.plan import step


def _a(v):
    return np.array([v])


class _Wire:
    """Every collective takes its bytes at 1 GB/s; none over one GPU."""

    def seconds(self, op, size, n, per_node, node_aggregate=True):
        return np.where(np.asarray(n) > 1, np.asarray(size, dtype=float) / 1e9, 0.0)


def _ctx():
    """4 layers of 10⁸ parameters each, 2-byte weights gathered and gradients reduced; the
    embedding and output layer 10⁸ more; FSDP's per-layer unit, one unit prefetched."""
    fw = SimpleNamespace(zero3_unit="layer", zero3_prefetch=1, zero3_blocking_fetch=False,
                         flat_dp_rings=False)
    return SimpleNamespace(framework=fw, experts=None, collectives=_Wire(),
                           recipe=SimpleNamespace(param_gather=2.0, grad_comm=2.0),
                           parts={"layers": 4e8}, model=SimpleNamespace(n_layers=4))


def _full(per_layer, reshard_after_forward, micro_batches=1, pp=1):
    a = {"dp": _a(8), "shard": _a(8), "per_node_shard": _a(8), "replicas": _a(1),
         "per_node_replica": _a(1), "tp": _a(1), "pp": _a(pp), "layers": _a(4.0),
         "per_layer": _a(per_layer), "params": _a(5e8), "micro_batches": _a(micro_batches),
         "reshard_after_forward": _a(reshard_after_forward)}
    return float(step._dp_full(_ctx(), a)[0])


@pytest.mark.parametrize(("per_layer", "zero2", "zero3"), [
    # a layer's pass 0.6 s (forward 0.2, backward 0.4); gather and reduce-scatter 0.2 s each:
    # ZeRO-2: forward 0.2 + 3 max(0.2, 0.2) + 0.2, backward 0.2 + 3 max(0.4, 0.2) + 0.4, less
    # the 4 x 0.6 of compute: 0.4; the rest (2 x 10^8 bytes gathered and reduce-scattered) 0.4
    (0.6, 0.8, 1.0),
    # ZeRO-3 gathers again for the backward: 0.4 a layer there, 0.4 + 3 x 0.4 + 0.4 - 1.6 = 0.4
    # more than the compute; with a pass of 0.3 s (forward 0.1, backward 0.2) nothing hides:
    # ZeRO-2 0.2 + 3 x 0.2 + 0.1 + 0.2 + 3 x 0.2 + 0.2 - 1.2 + 0.4 = 1.1;
    # ZeRO-3 0.2 + 0.6 + 0.1 + 0.4 + 1.2 + 0.2 - 1.2 + 0.4 = 1.9
    (0.3, 1.1, 1.9),
])
def test_shard_grad_op_gathers_each_layer_once_a_micro_batch(per_layer, zero2, zero3):
    assert _full(per_layer, False) == pytest.approx(zero2, rel=1e-12)
    assert _full(per_layer, True) == pytest.approx(zero3, rel=1e-12)


def test_every_micro_batch_pays_its_gathers_and_pipelining_keeps_zero3s_gather():
    """FSDP without ``no_sync``: each micro-batch gathers and reduce-scatters again (twice the
    one-micro-batch figure); under pipelining ZeRO-3 keeps the forward's gather too, as
    ZeRO-2 does."""
    assert _full(0.3, False, micro_batches=2) == pytest.approx(2.2, rel=1e-12)
    assert _full(0.3, True, pp=2) == pytest.approx(1.1, rel=1e-12)


# -------------------------------------------------------------------- through the planner
LAYOUT = plan.Plan(tp=1, pp=1, dp=64, micro_batch=2, global_batch=128, zero_stage=2,
                   recompute="none")


def _dp_comm(framework, layout=LAYOUT):
    return plan.evaluate("llama3-8b", "H100", layout, framework=framework).step["dp_comm"]


def test_pytorch_fsdp_runs_zero2_per_unit_and_the_switch_restores_the_buckets():
    """The pytorch-fsdp preset prices ZeRO-2 per unit: less exposed traffic than its ZeRO-3
    (no second gather, same prefetch), and not the bucketed reduction and trailing gather the
    same preset gives with the switch off, which leaves the whole gather of the updated
    weights exposed (FSDP1 has no gather overlap)."""
    fsdp = plan.framework("pytorch-fsdp")
    assert fsdp.zero2_per_unit and not plan.framework("megatron-core").zero2_per_unit
    bucketed = dataclasses.replace(fsdp, zero2_per_unit=False)
    per_unit = _dp_comm(fsdp)
    assert per_unit < _dp_comm(bucketed)
    assert per_unit <= _dp_comm(fsdp, dataclasses.replace(LAYOUT, zero_stage=3))
    # its sources say what FSDP does
    assert "SHARD_GRAD_OP" in fsdp.sources["zero2_per_unit"]


def test_a_zero3_plan_is_priced_the_same_either_way():
    """The switch touches ZeRO-2 alone."""
    fsdp = plan.framework("pytorch-fsdp")
    z3 = dataclasses.replace(LAYOUT, zero_stage=3)
    assert _dp_comm(fsdp, z3) == _dp_comm(dataclasses.replace(fsdp, zero2_per_unit=False), z3)


def test_torchtitan_zero2_is_per_unit_without_pipelining_and_once_a_step_with_it():
    """torchtitan's FSDP2 without PP reduce-scatters every micro-batch (its train_step runs
    each micro-batch's backward with gradient sync on): priced per unit, as PyTorch FSDP's
    ZeRO-2. Under PP the pipelining schedule syncs the gradients at the last micro-batch:
    the switch changes nothing there (the sharded branch, once a step)."""
    titan = plan.framework("torchtitan")
    assert titan.zero2_per_unit and "train_step" in titan.sources["zero2_per_unit"]
    off = dataclasses.replace(titan, zero2_per_unit=False)
    flat = dataclasses.replace(LAYOUT, global_batch=256)  # two micro-batches a replica
    assert _dp_comm(titan, flat) != _dp_comm(off, flat)
    assert _dp_comm(titan, flat) <= _dp_comm(titan, dataclasses.replace(flat, zero_stage=3))
    piped = plan.Plan(tp=1, pp=2, dp=32, micro_batch=2, global_batch=256, zero_stage=2,
                      recompute="none")
    assert _dp_comm(titan, piped) == _dp_comm(off, piped) > 0


# ------------------------------------------------- torchtitan under pipelining: sync deferred
PIPED = plan.Plan(tp=8, pp=4, dp=8, micro_batch=1, global_batch=64, zero_stage=3,
                  recompute="full", seq_len=8192)


def _run(framework, **changes):
    return plan.evaluate("llama3-70b", "H100", dataclasses.replace(PIPED, **changes),
                         framework=framework)


def test_torchtitan_under_pipelining_runs_zero3_as_its_zero2():
    """torch.distributed.pipelining keeps the FSDP2 units gathered and their gradients unsynced
    through every micro-batch and reduces once after the schedule: a ZeRO-3 plan is gathered
    and reduced once a step, as the same preset's ZeRO-2, not once per micro-batch per unit
    as it is with the switch off."""
    titan = plan.framework("torchtitan")
    assert titan.pp_defers_grad_sync
    assert "set_requires_gradient_sync(False)" in titan.sources["pp_defers_grad_sync"]
    off = dataclasses.replace(titan, pp_defers_grad_sync=False)
    z3, z2 = _run(titan), _run(titan, zero_stage=2)
    assert z3.step["dp_comm"] == z2.step["dp_comm"] > 0
    assert _run(off).step["dp_comm"] != z3.step["dp_comm"]
    # the switch off leaves ZeRO-2 under pipelining where it was (the sharded branch)
    assert _run(off, zero_stage=2).step["dp_comm"] == z2.step["dp_comm"]


def test_a_deferred_sync_holds_whole_weights_and_float32_gradients():
    """Under the deferred sync a GPU holds its stage's weights whole (as without ZeRO), its
    gradients whole in FSDP2's float32 reduce dtype (twice the 2-byte gradients of plain data
    parallelism), and only the optimizer state sharded (as ZeRO-2 shards it); ZeRO-3's
    gathered-unit buffers are gone, everything being gathered already."""
    titan = plan.framework("torchtitan")
    off = dataclasses.replace(titan, pp_defers_grad_sync=False)
    plain = _run(off, zero_stage=0).memory
    sharded = _run(off, zero_stage=2).memory
    for stage in (2, 3):
        held = _run(titan, zero_stage=stage).memory
        assert held["weights"] == pytest.approx(plain["weights"], rel=1e-12)
        assert held["grads"] == pytest.approx(2 * plain["grads"], rel=1e-12)
        assert held["optimizer"] == pytest.approx(sharded["optimizer"], rel=1e-12)
    assert _run(titan).memory["reserve"] == _run(titan, zero_stage=2).memory["reserve"]
    assert _run(off).memory["reserve"] > _run(off, zero_stage=2).memory["reserve"]


def test_without_pipelining_the_deferred_sync_changes_nothing():
    """The switch acts under pipelining alone: without it FSDP2 syncs every micro-batch."""
    titan = plan.framework("torchtitan")
    off = dataclasses.replace(titan, pp_defers_grad_sync=False)
    flat = dict(tp=8, pp=1, dp=32)
    for stage in (2, 3):
        a, b = _run(titan, zero_stage=stage, **flat), _run(off, zero_stage=stage, **flat)
        assert a.step == b.step and a.memory == b.memory


def test_the_deferred_sync_holds_a_mixture_of_experts_whole_too():
    """The experts' gradients are held whole in float32 as the rest are: twice the 2-byte
    gradients of plain data parallelism, experts and all (Qwen3-30B-A3B, EP 8, two stages)."""
    titan = plan.framework("torchtitan")
    moe = plan.Plan(tp=1, pp=2, dp=8, ep=8, micro_batch=1, global_batch=64, zero_stage=2,
                    recompute="full", seq_len=4096)

    def memory(stage):
        return plan.evaluate("qwen3-30b-a3b", "H100", dataclasses.replace(moe, zero_stage=stage),
                             framework=titan).memory

    plain = memory(0)
    for stage in (2, 3):
        held = memory(stage)
        assert held["grads"] == pytest.approx(2 * plain["grads"], rel=1e-12)
        assert held["weights"] == pytest.approx(plain["weights"], rel=1e-12)


def test_which_plans_defer_their_sync():
    """One flag per plan: two or more stages and ZeRO-2 or 3, under a framework that defers;
    none under one that does not."""
    pp, zero = np.array([1, 2, 2, 2, 4]), np.array([3, 1, 2, 3, 2])
    x = SimpleNamespace(pp=pp, zero_stage=zero)
    on = SimpleNamespace(framework=SimpleNamespace(pp_defers_grad_sync=True))
    off = SimpleNamespace(framework=SimpleNamespace(pp_defers_grad_sync=False))
    assert step.deferred_grad_sync(on, x).tolist() == [False, False, True, True, True]
    got = step.deferred_grad_sync(off, x)
    assert got.dtype == bool and got.tolist() == [False] * 5
