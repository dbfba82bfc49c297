"""The host-bound MoE layer beyond its expert GEMMs: the launches Megatron-Core issues from Python
after the host's wait, each at the measured host time of one eager PyTorch operator.

Expected values are worked by hand from the published measurement (NVIDIA TransformerEngine
issue #2053: torch.nn.Linear forward, 13.48 us of host time per call against 100.06 us of GPU
time on a DGX H100) and from the launches counted in Megatron-Core's alltoall token dispatcher
and TEGroupedMLP (scaleout.moe.MOE_HOST_OPS).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, moe
from scaleout.layout import Plan
from scaleout.plan import step
from scaleout.plan.frameworks import FRAMEWORKS, Framework
from support import write_entry

MOE, GPU = "qwen3-30b-a3b", "H100-SXM5-80GB"
LOOP = Framework("loop", "expert GEMM loop only", zero_stages=(0, 1, 2, 3), max_zero_with_pp=3,
                 hybrid_shard=True, cp_variant="ring", expert_parallel=True,
                 expert_gemm_loop=True)
SYNC = replace(LOOP, name="sync", moe_host_sync=True)


def test_the_measured_cost_per_operator_is_the_host_time_of_one_eager_call():
    cost = moe.host_op_cost()
    assert (cost.cpu_us, cost.gpu_us) == (13.48, 100.06)
    assert cost.per_op_s == pytest.approx(13.48e-6, rel=1e-12)
    assert moe.host_op_cost("torch eager op") is cost  # by alias
    assert "2053" in cost.source and "8480C" in cost.host
    with pytest.raises(ValueError, match="pytorch-eager-op-x86"):
        moe.host_op_cost("pytorch eager op x86 host")


def test_the_launches_are_those_counted_in_the_code():
    # forward after the wait: 2 all-to-alls, 2 Triton sort kernels (more than one local
    # expert), 1 fused weighted SwiGLU, and with FP8 2 paddings + 1 unpadding
    assert moe.moe_host_ops(16) == {"forward": 5.0, "backward": 8.0}
    assert moe.moe_host_ops(16, fp8=True) == {"forward": 8.0, "backward": 11.0}
    # one local expert: nothing to sort (2 forward, 2 backward fewer)
    assert moe.moe_host_ops(1) == {"forward": 3.0, "backward": 6.0}
    got = moe.moe_host_ops(np.array([1.0, 4.0]), fp8=True)
    assert got["forward"] == pytest.approx([6.0, 8.0])
    assert got["backward"] == pytest.approx([9.0, 11.0])
    # no expert parallelism: no all-to-all (2 forward, 3 backward fewer) and the wait comes
    # after the sort (2 forward fewer); the backward sorts remain
    assert moe.moe_host_ops(16, 1) == {"forward": 1.0, "backward": 5.0}
    assert moe.moe_host_ops(16, np.array([1, 8]), fp8=True)["forward"] == pytest.approx([4, 8])
    # the DeepEP and HybridEP dispatchers' launches are not counted
    assert moe.moe_host_ops(16, dispatcher="deepep") == {"forward": 0.0, "backward": 0.0}
    assert moe.moe_host_ops(16, dispatcher="hybridep", fp8=True)["forward"] == 0.0


def test_the_launches_add_to_the_expert_loop_where_the_host_outlasts_the_gpu():
    c, op = 24.75e-6, 13.48e-6
    ops = moe.moe_host_ops(16, fp8=True)  # 8 forward, 11 backward
    got = moe.expert_loop_exposed_s(16, c, 100e-6, 2000e-6, host_ops=ops, per_op_s=op)
    # forward: 32 GEMMs x 24.75 us = 792 us + 8 x 13.48 us = 107.84 us -> 899.84 us
    assert got["host_forward_s"] == pytest.approx(899.84e-6, rel=1e-12)
    # backward: 64 x 24.75 = 1,584 us + 11 x 13.48 = 148.28 us -> 1,732.28 us
    assert got["host_backward_s"] == pytest.approx(1732.28e-6, rel=1e-12)
    assert got["forward_s"] == pytest.approx(799.84e-6, rel=1e-12)  # 899.84 - 100
    assert got["backward_s"] == 0.0  # hidden under 2,000 us of the layer's backward
    # no GEMM loop, the launches alone: 8 x 13.48 = 107.84 us against 100 us forward
    alone = moe.expert_loop_exposed_s(16, 0.0, 100e-6, 2000e-6, host_ops=ops, per_op_s=op)
    assert alone["total_s"] == pytest.approx(7.84e-6, rel=1e-9)
    # without launches the result is the GEMM loop's alone
    plain = moe.expert_loop_exposed_s(16, c, 100e-6, 2000e-6)
    assert plain["forward_s"] == pytest.approx(692e-6, rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(per_op_s=-1.0), "per_op_s"),
    (dict(host_ops={"forward": 3}), "host_ops"),
    (dict(host_ops={"forward": -1, "backward": 2}), "host_ops"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    args = dict(local_experts=4, per_call_s=1e-5, forward_gpu_s=1e-4, backward_gpu_s=1e-4,
                host_ops={"forward": 3, "backward": 4}, per_op_s=1e-5)
    with pytest.raises(ValueError, match=match):
        moe.expert_loop_exposed_s(**(args | kwargs))
    with pytest.raises(ValueError, match="dispatcher"):
        moe.moe_host_ops(4, dispatcher="alltoal")
    with pytest.raises(ValueError, match="local_experts"):
        moe.moe_host_ops(0)
    with pytest.raises(ValueError, match="ep"):
        moe.moe_host_ops(4, 1.5)


def test_a_malformed_entry_is_refused_naming_file_entry_and_field(tmp_path):
    good = catalog.read_toml(catalog.DATA_DIR / "host_overheads.toml")["op"][0]
    for field, value, match in (("cpu_us", 200.0, "cpu_us"), ("gpu_us", 0, "gpu_us"),
                                ("cpu_us", "fast", "cpu_us"), ("host", 3, "host")):
        bad = write_entry(tmp_path / "host_overheads.toml", "op",
                          dict(good, **{field: value}))
        with pytest.raises(ValueError, match=rf"host_overheads.toml.*entry 1.*{match}"):
            catalog.load_entries(bad, "op", moe.HostOpCost)


def test_only_megatron_core_waits_for_the_gpu_in_its_moe_layer():
    assert {n for n, f in FRAMEWORKS.items() if f.moe_host_sync} == {"megatron-core"}
    assert "before_ep_alltoall" in FRAMEWORKS["megatron-core"].sources["moe_host_sync"]
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", None, 16, "megatron-core")
    assert ctx.host_op_s == pytest.approx(13.48e-6, rel=1e-12)
    dense = step.context("llama3-8b", GPU, None, None, "mixed-adam", None, 16, "megatron-core")
    assert dense.host_op_s == 0.0
    assert step.context(MOE, GPU, None, None, "mixed-adam", None, 16, LOOP).host_op_s == 0.0


def _parts(p, framework, recipe="mixed-adam"):
    from scaleout.plan.evaluate import _arrays

    ctx = step.context(MOE, GPU, None, None, recipe, p.seq_len, p.global_batch, framework)
    x = step._shape(ctx, _arrays(p))
    return ctx, x, step.compute_parts(ctx, x), step.expert_gemm_parts(ctx, x)


@pytest.mark.parametrize("recipe, fwd_ops", [("mixed-adam", 5), ("fp8-te-cs", 8)])
def test_the_planner_adds_the_launches_to_every_moe_layer(recipe, fwd_ops):
    """Qwen3-30B-A3B over EP 8 on H100s: 16 local experts, 4,096 tokens a GPU. After the wait
    the host issues 32 expert GEMMs (24.75 us each) and 5 launches (8 with FP8, 13.48 us
    each); the GPU's work queued behind them is the expert GEMMs' forward and the dispatch
    all-to-all, which the alltoall dispatcher issues first after the wait. The backward
    launches hide under the layer's backward."""
    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=16, flash_attention=True)
    _, _, loop, parts = _parts(p, LOOP, recipe)
    ctx, x, sync, _ = _parts(p, SYNC, recipe)
    c, op = 24.75e-6, 13.48e-6
    f_gpu = float(parts["moe_forward_gemm_s"][0])
    dispatch = float(step._ep_comm(ctx, x, parts["rank_imbalance"])["dispatch_s"][0])
    assert 0 < dispatch < 16 * 2 * c  # the all-to-all hides part of the host's issue time
    host_f = 16 * 2 * c + fwd_ops * op
    assert float(sync["layer_expert_loop_s"][0]) == pytest.approx(
        max(host_f - f_gpu - dispatch, 0.0) / 3, rel=1e-9)  # forward-pass units
    assert float(loop["layer_expert_loop_s"][0]) == pytest.approx(
        max(16 * 2 * c - f_gpu, 0.0) / 3, rel=1e-9)  # the GEMM loop alone: no wait modelled
    assert float(sync["layer_forward_s"][0] - loop["layer_forward_s"][0]) == pytest.approx(
        (fwd_ops * op - dispatch) / 3, rel=1e-9)


def test_only_the_alltoall_dispatcher_hides_host_time_behind_its_dispatch():
    """DeepEP waits after its dispatch (tokens_per_expert.sum().item()), so its all-to-all is
    not queued behind the host; its launches are not counted either: the GEMM loop alone."""
    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=16, flash_attention=True)
    _, _, deepep, parts = _parts(p, replace(SYNC, moe_dispatcher="deepep"))
    f_gpu = float(parts["moe_forward_gemm_s"][0])
    assert float(deepep["layer_expert_loop_s"][0]) == pytest.approx(
        max(16 * 2 * 24.75e-6 - f_gpu, 0.0) / 3, rel=1e-9)
