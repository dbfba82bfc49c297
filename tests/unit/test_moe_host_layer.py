"""The whole stretch between two of the host's waits in a dropless MoE layer: one transformer
layer's calls issued from Python in order, against the GPU's work, on each system's host CPU.

Expected values are worked by hand: the host costs from NVIDIA TransformerEngine issue #2053's
table (torch.nn.Linear and te.Linear forward, BF16, hidden 2048, 8192 tokens: 13.48 us on the
DGX H100's Xeon 8480C, 37.08 and 99.66 us on GB200's Grace, 33.17 and 90.53 us on GH200's
Grace), the GEMM loop's 24.75 us per GEMM ((0.267 - 0.069) ms / 8, TE PR #3134), and the calls
counted in Megatron-LM 92c8482e (scaleout.moe.LAYER_HOST_CALLS).
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
CORE = FRAMEWORKS["megatron-core"]
C_GEMM, OP_X86 = 24.75e-6, 13.48e-6
#: a TE module on the x86 host: 13.48 us times the mean te.Linear / torch.nn.Linear ratio of
#: the two Grace hosts that have both rows
MODULE_X86 = 13.48e-6 * (99.66 / 37.08 + 90.53 / 33.17) / 2


# ------------------------------------------------------------------ host cost per system
def test_each_system_has_its_host_cpu_cost():
    assert moe.host_call_s(GPU) == pytest.approx(13.48e-6, rel=1e-12)
    assert moe.host_call_s("B200") == pytest.approx(13.48e-6, rel=1e-12)  # x86 DGX B200
    assert moe.host_call_s("GB200") == pytest.approx(37.08e-6, rel=1e-12)  # Grace
    assert moe.host_call_s("GB200", "te.Linear") == pytest.approx(99.66e-6, rel=1e-12)
    # no te.Linear row for the x86 host: 13.48 x mean(2.6877, 2.7293) = 36.51 us
    assert moe.host_call_s(GPU, "te.Linear") == pytest.approx(MODULE_X86, rel=1e-12)
    assert MODULE_X86 == pytest.approx(36.51e-6, abs=0.01e-6)
    # the Grace host is 2.75 times slower per eager operator than the DGX H100's Xeon
    assert moe.host_call_s("GB200") / moe.host_call_s(GPU) == pytest.approx(2.75, abs=0.01)
    with pytest.raises(ValueError, match="call"):
        moe.host_call_s(GPU, "te.Linaer")


def test_a_host_without_te_rows_anywhere_cannot_price_a_module(monkeypatch):
    only_x86 = {"pytorch-eager-op-x86": moe.host_op_cost()}
    monkeypatch.setattr(moe, "_host_ops", lambda: only_x86)
    assert moe.host_call_s(GPU) == pytest.approx(13.48e-6, rel=1e-12)
    with pytest.raises(ValueError, match=r"host_overheads.toml.*te\.Linear"):
        moe.host_call_s(GPU, "te.Linear")


@pytest.mark.parametrize("field, value, match", [
    ("call", "torch.linear", "call"), ("gpus", [3], "gpus"), ("gpus", "GB200", "gpus")])
def test_a_malformed_op_entry_is_refused_naming_file_entry_and_field(tmp_path, field, value,
                                                                     match):
    good = catalog.read_toml(catalog.DATA_DIR / "host_overheads.toml")["op"][1]
    assert good["call"] == "torch.nn.Linear" and good["gpus"] == ["GB200"]
    bad = write_entry(tmp_path / "host_overheads.toml", "op", dict(good, **{field: value}))
    with pytest.raises(ValueError, match=rf"host_overheads.toml.*entry 1.*{match}"):
        catalog.load_entries(bad, "op", moe.HostOpCost)


# ------------------------------------------------------------------ the calls of one layer
def test_the_calls_of_one_layer_are_those_counted_in_the_code():
    m = catalog.model(MOE)
    got = moe.layer_host_calls(m, 16, 8, fp8=True)
    # after the wait: the dispatch to the experts' output, moe_host_ops' 8 (2 all-to-alls,
    # 2 sorts, 1 SwiGLU, 3 FP8 paddings), and TEGroupedMLP's two TEGroupedLinear modules
    assert got["forward_experts"] == {"module": 2.0, "op": 8.0}
    # the restore sort (2), the combine all-to-all (1), the unpermute (1)
    assert got["forward_combine"] == {"module": 0.0, "op": 4.0}
    # linear_qkv, core_attention, linear_proj; RoPE 2 + bias-dropout-add 2 + pre-MLP norm 1,
    # router 4, the dispatcher's preprocessing 14
    assert got["forward_rest"] == {"module": 3.0, "op": 23.0}
    # backward: the 5 modules again; 5 + 4 + moe_host_ops' 11
    assert got["backward"] == {"module": 5.0, "op": 20.0}


def test_mla_and_shared_experts_add_their_modules():
    got = moe.layer_host_calls(catalog.model("deepseek-v3"), 8, 32)
    # MLA's q down/up, kv down/up, core attention, projection: 6; the shared expert's fc1, fc2
    assert got["forward_rest"]["module"] == 8.0
    assert got["backward"]["module"] == 10.0  # and the two grouped linears


def test_without_expert_parallelism_or_with_another_dispatcher_fewer_calls_count():
    m = catalog.model(MOE)
    one = moe.layer_host_calls(m, 16, 1, fp8=True)
    assert one["forward_combine"]["op"] == 3.0  # no combine all-to-all
    assert one["forward_rest"]["op"] == 9.0  # no preprocessing for the all-to-all
    assert one["forward_experts"]["op"] == 4.0  # the SwiGLU and the 3 FP8 paddings
    deepep = moe.layer_host_calls(m, 16, 8, dispatcher="deepep")
    assert deepep["forward_combine"]["op"] == 0.0  # DeepEP's own launches: not counted
    assert deepep["forward_rest"] == {"module": 3.0, "op": 9.0}
    arr = moe.layer_host_calls(m, np.array([1.0, 16.0]), np.array([8, 8]))
    assert arr["forward_combine"]["op"] == pytest.approx([2.0, 4.0])  # one expert: no sort
    with pytest.raises(ValueError, match="model"):
        moe.layer_host_calls(MOE, 16, 8)


# ------------------------------------------------------------------ the timeline of a stretch
def test_the_stretch_is_timed_part_by_part_in_issue_order():
    us = 1e-6
    segments = [(0.0, 100 * us, True),  # dispatch all-to-all, issued first after the wait
                (900 * us, 50 * us, False),  # the expert GEMM loop: host-bound
                (40 * us, 80 * us, True),  # combine all-to-all, issued after the loop
                (300 * us, 600 * us, False)]  # next attention block: GPU-bound
    got = moe.host_stretch_exposed_s(segments, 2000 * us, 1500 * us)
    # F1 = 0 + 100 = 100; F2 = max(100 + 50, 900) = 900; F3 = max(900, 940) + 80 = 1020;
    # F4 = max(1020 + 600, 1240) = 1620; the GPU worked 830 of it: 790 idle
    assert got["forward_s"] == pytest.approx(790 * us, rel=1e-12)
    assert got["backward_s"] == pytest.approx(500 * us, rel=1e-12)  # 2000 - 1500, no wait
    assert got["total_s"] == pytest.approx(1290 * us, rel=1e-12)
    # the whole-stretch maximum alone, max(1240, 830) - 830 = 410 us, is below it: the host's
    # lead in the MoE part is not made up by the attention block's GPU work issued after it
    assert got["forward_s"] > 1240 * us - 830 * us
    # one part: spread work hides under the host's issue time, a single launch does not
    assert moe.host_stretch_exposed_s([(500 * us, 300 * us, False)])["forward_s"] == \
        pytest.approx(200 * us, rel=1e-12)
    assert moe.host_stretch_exposed_s([(500 * us, 300 * us, True)])["forward_s"] == \
        pytest.approx(500 * us, rel=1e-12)
    arr = moe.host_stretch_exposed_s([(np.array([1.0, 3.0]), 2.0, False)])
    assert arr["forward_s"] == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize("segments, match", [
    ([], "segments"), ([(1.0, 2.0)], r"segments\[0\]"),
    ([(-1.0, 2.0, False)], r"segments\[0\] host_s"),
    ([(1.0, 2.0, "yes")], r"segments\[0\] last")])
def test_bad_segments_name_the_parameter(segments, match):
    with pytest.raises(ValueError, match=match):
        moe.host_stretch_exposed_s(segments)
    with pytest.raises(ValueError, match="gpu_backward_s"):
        moe.host_stretch_exposed_s([(1.0, 2.0, False)], 1.0, -1.0)


# ------------------------------------------------------------------ the switch and the planner
def test_the_switch_is_megatron_cores_with_its_source_and_needs_the_wait():
    assert {n for n, f in FRAMEWORKS.items() if f.moe_host_layer} == {"megatron-core"}
    src = CORE.sources["moe_host_layer"]
    assert "92c8482e" in src and "LAYER_HOST_CALLS" in src and "TEDotProductAttention" in src
    with pytest.raises(ValueError, match="moe_host_layer"):
        Framework("x", "x", moe_host_layer=True)
    dense = step.context("llama3-8b", GPU, None, None, "mixed-adam", None, 16, "megatron-core")
    assert dense.host_module_s == 0.0 and dense.host_op_s == 0.0
    ctx = step.context(MOE, "GB200", None, None, "mixed-adam", None, 16, "megatron-core")
    assert (ctx.host_op_s, ctx.host_module_s) == pytest.approx((37.08e-6, 99.66e-6), rel=1e-12)


def _parts(p, framework, recipe="fp8-te-cs", model=MOE):
    from scaleout.plan.evaluate import _arrays

    ctx = step.context(model, GPU, None, None, recipe, p.seq_len, p.global_batch, framework)
    x = step._shape(ctx, _arrays(p))
    return ctx, x, step.compute_parts(ctx, x), step.expert_gemm_parts(ctx, x)


def test_the_planner_times_the_stretch_by_hand():
    """Qwen3-30B-A3B in FP8 over EP 8 on H100s (x86 host), 16 local experts. The host's issue
    time per part, by hand: experts 32 GEMMs x 24.75 + 8 ops x 13.48 + 2 modules x 36.51 us;
    combine 4 ops; rest 23 ops + 3 modules; backward 64 GEMMs + 20 ops + 5 modules. The GPU's
    work from the planner's own parts: the all-to-alls, the expert GEMMs, the rest of the
    layer's forward (the layer without its experts, read off the run without the switch)."""
    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=16, flash_attention=True)
    off = replace(CORE, moe_host_layer=False)
    _, _, old, parts = _parts(p, off)
    ctx, x, new, _ = _parts(p, CORE)
    a2a = step._ep_comm(ctx, x, parts["rank_imbalance"])
    dispatch, fwd_a2a, bwd_a2a = (float(a2a[k][0]) for k in ("dispatch_s", "forward_s",
                                                             "backward_s"))
    rest = float(old["layer_forward_s"][0] - parts["layer_expert_gemm_s"][0]
                 - old["layer_expert_loop_s"][0])
    g_exp, g_exp_b = float(parts["moe_forward_gemm_s"][0]), float(parts["moe_backward_gemm_s"][0])
    h_exp = 32 * C_GEMM + 8 * OP_X86 + 2 * MODULE_X86
    h_comb = 4 * OP_X86
    h_rest = 23 * OP_X86 + 3 * MODULE_X86
    f1 = dispatch
    f2 = max(f1 + g_exp, h_exp)
    f3 = max(f2, h_exp + h_comb) + (fwd_a2a - dispatch)
    f4 = max(f3 + rest, h_exp + h_comb + h_rest)
    fwd = f4 - (fwd_a2a + g_exp + rest)
    bwd = max(64 * C_GEMM + 20 * OP_X86 + 5 * MODULE_X86 - (2 * rest + g_exp_b + bwd_a2a), 0.0)
    assert fwd > 0
    assert float(new["layer_expert_loop_s"][0]) == pytest.approx((fwd + bwd) / 3, rel=1e-9)


def test_with_the_switch_off_the_moe_part_alone_counts_as_before():
    """Off, the host's launches after the wait in the MoE part only (moe_host_ops: 8 with
    FP8), against the expert GEMMs and the dispatch behind them: the previous model."""
    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=16, flash_attention=True)
    ctx, x, off, parts = _parts(p, replace(CORE, moe_host_layer=False))
    assert ctx.host_module_s == 0.0
    dispatch = float(step._ep_comm(ctx, x, parts["rank_imbalance"])["dispatch_s"][0])
    host_f = 32 * C_GEMM + 8 * OP_X86
    fwd = max(host_f - float(parts["moe_forward_gemm_s"][0]) - dispatch, 0.0)
    assert float(off["layer_expert_loop_s"][0]) == pytest.approx(fwd / 3, rel=1e-9)


def test_dense_models_do_not_move():
    p = Plan(dp=8, micro_batch=1, global_batch=16, flash_attention=True)
    *_, on, _ = _parts(p, CORE, "mixed-adam", "llama3-8b")
    *_, off, _ = _parts(p, replace(CORE, moe_host_layer=False, moe_host_sync=False,
                                   expert_gemm_loop=False), "mixed-adam", "llama3-8b")
    for key in ("layer_forward_s", "layer_recompute_s", "layer_expert_loop_s"):
        assert np.array_equal(on[key], off[key]), key
    assert float(on["layer_expert_loop_s"][0]) == 0.0


# ------------------------------------------------------------------ captured CUDA graphs
def test_captured_scopes_leave_the_count_for_one_graph_launch():
    m = catalog.model(MOE)
    plain = moe.layer_host_calls(m, 16, 8, fp8=True)
    graphed = moe.layer_host_calls(m, 16, 8, fp8=True, graphed=("moe_router", "moe_preprocess"))
    # forward rest: 23 ops - norm 1 - router 4 - preprocess 10 (the 4 copies stay) + 1 launch
    assert graphed["forward_rest"] == {"module": 3.0, "op": 9.0}
    # backward: 20 ops - norm 1 - router 4 + 1 launch; the modules stay
    assert graphed["backward"] == {"module": 5.0, "op": 16.0}
    assert graphed["forward_experts"] == plain["forward_experts"]
    assert graphed["forward_combine"] == plain["forward_combine"]
    full = moe.layer_host_calls(m, 16, 8, graphed=("attn", "moe_router", "moe_preprocess"))
    # and the attention block: its 3 modules, RoPE 2 and the first bias-dropout-add go too
    assert full["forward_rest"] == {"module": 0.0, "op": 6.0}
    assert full["backward"] == {"module": 2.0, "op": 10.0}  # the grouped linears, 8 + 2
    # DeepSeek-V3 with its router graphed: the shared expert is computed inside the graph
    ds = moe.layer_host_calls(catalog.model("deepseek-v3"), 8, 32, graphed=("moe_router",))
    assert ds["forward_rest"]["module"] == 6.0


@pytest.mark.parametrize("graphed, match", [
    (("moe_preprocess",), "moe_router"), (("router",), "graphed"), ("attn", "graphed")])
def test_bad_graph_scopes_name_the_parameter(graphed, match):
    with pytest.raises(ValueError, match=match):
        moe.layer_host_calls(catalog.model(MOE), 16, 8, graphed=graphed)
    with pytest.raises(ValueError, match=match):
        replace(CORE, cuda_graph_scopes=graphed)


def test_a_runs_recipe_sets_its_cuda_graphs():
    from scaleout.plan import published

    cases, _ = published.cases()
    by = {c.label: c for c in cases}
    b200 = by["qwen3-30b-a3b FP8-MX on 8 × B200"].framework
    assert b200.cuda_graph_scopes == ("moe_router", "moe_preprocess")
    h100 = by["qwen3-30b-a3b FP8-CS on 16 × H100-SXM5-80GB"].framework
    assert h100.cuda_graph_scopes == ()  # the recipe sets none for H100 FP8-CS
    assert CORE.cuda_graph_scopes == () and "cuda_graph_impl" in CORE.sources[
        "cuda_graph_scopes"]
