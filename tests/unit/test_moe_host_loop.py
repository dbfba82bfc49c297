"""The host-bound expert loop: GEMMs issued one per local expert, each at a measured host cost.

Expected values are worked by hand from the published measurement (NVIDIA TransformerEngine
pull request #3134: 8 expert GEMMs take 0.267 ms issued one by one, 0.069 ms in one launch)
and from the GEMMs counted in Megatron-Core's TEGroupedMLP and Transformer Engine's
GroupedLinear (2 forward, 4 backward per local expert).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, moe, plan
from scaleout.layout import Plan
from scaleout.plan import step
from scaleout.plan.frameworks import FRAMEWORKS, Framework
from support import write_entry

MOE, GPU = "qwen3-30b-a3b", "H100-SXM5-80GB"
BARE = Framework("bare", "no overlap", zero_stages=(0, 1, 2, 3), max_zero_with_pp=3,
                 hybrid_shard=True, cp_variant="ring", expert_parallel=True)


def test_the_measured_cost_per_gemm_is_the_loops_extra_time_over_one_launch():
    cost = moe.expert_loop_cost()
    assert (cost.loop_ms, cost.single_ms, cost.calls) == (0.267, 0.069, 8)
    # (0.267 - 0.069) ms / 8 = 0.02475 ms = 24.75 us a GEMM
    assert cost.per_call_s == pytest.approx(24.75e-6, rel=1e-12)
    assert moe.expert_loop_cost("multi_stream_cublas_gemm") is cost  # by alias
    assert "3134" in cost.source


def test_the_gemms_per_local_expert_are_those_counted_in_the_code():
    # TEGroupedMLP: fc1 and fc2; GroupedLinear: one grouped call forward, dgrad + wgrad back
    assert moe.EXPERT_LOOP_GEMMS == {"forward": 2, "backward": 4}


def test_the_loop_shows_where_the_host_outlasts_the_gpu():
    c = 24.75e-6
    # 16 local experts: the host issues 32 GEMMs forward (792 us) and 64 backward (1,584 us)
    got = moe.expert_loop_exposed_s(16, c, 100e-6, 2000e-6)
    assert got["host_forward_s"] == pytest.approx(792e-6, rel=1e-12)
    assert got["host_backward_s"] == pytest.approx(1584e-6, rel=1e-12)
    assert got["forward_s"] == pytest.approx(692e-6, rel=1e-12)  # 792 - 100 (after the sync)
    assert got["backward_s"] == 0.0  # 1,584 us hide under 2,000 us of GPU work
    assert got["total_s"] == pytest.approx(692e-6, rel=1e-12)
    # arrays: 1 and 128 local experts against the same GPU times
    arr = moe.expert_loop_exposed_s(np.array([1.0, 128.0]), c, 100e-6, 2000e-6)
    assert arr["forward_s"] == pytest.approx([0.0, 128 * 2 * c - 100e-6], rel=1e-12)
    assert arr["backward_s"] == pytest.approx([0.0, 128 * 4 * c - 2000e-6], rel=1e-12)
    assert moe.expert_loop_exposed_s(16, 0.0, 1e-3, 1e-3)["total_s"] == 0.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(local_experts=0), "local_experts"),
    (dict(per_call_s=-1.0), "per_call_s"),
    (dict(forward_gpu_s="1"), "forward_gpu_s"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    args = dict(local_experts=4, per_call_s=1e-5, forward_gpu_s=1e-4, backward_gpu_s=1e-4)
    with pytest.raises(ValueError, match=match):
        moe.expert_loop_exposed_s(**(args | kwargs))
    with pytest.raises(ValueError, match="te-multi-stream"):
        moe.expert_loop_cost("te multi stream")


def test_a_malformed_entry_is_refused_naming_file_entry_and_field(tmp_path):
    good = catalog.read_toml(catalog.DATA_DIR / "host_overheads.toml")["call"][0]
    for field, value, match in (("single_ms", 0.3, "single_ms"), ("calls", 0, "calls"),
                                ("loop_ms", "fast", "loop_ms")):
        bad = write_entry(tmp_path / "host_overheads.toml", "call",
                          dict(good, **{field: value}))
        with pytest.raises(ValueError, match=rf"host_overheads.toml.*entry 1.*{match}"):
            catalog.load_entries(bad, "call", moe.HostCallCost)


def test_only_megatron_core_issues_its_expert_gemms_one_by_one():
    loops = {name for name, f in FRAMEWORKS.items() if f.expert_gemm_loop}
    assert loops == {"megatron-core"}
    for name in ("megatron-core", "torchtitan", "deepseek-hai-llm"):
        assert FRAMEWORKS[name].sources["expert_gemm_loop"]


def _layer_parts(p, framework):
    from scaleout.plan.evaluate import _arrays

    ctx = step.context(MOE, GPU, None, None, "mixed-adam", p.seq_len, p.global_batch,
                       framework)
    x = step._shape(ctx, _arrays(p))
    return ctx, step.compute_parts(ctx, x), step.expert_gemm_parts(ctx, x)


def test_the_planner_adds_the_exposed_loop_to_every_moe_layer():
    """Qwen3-30B-A3B (every layer MoE) over EP 8 on H100s: 16 local experts, 4,096 tokens a
    GPU. The layer's forward grows by a third of the exposed loop (forward-pass units), and
    the step by micro-batches x layers x the loop; a framework with grouped GEMMs pays none."""
    p = Plan(dp=8, ep=8, micro_batch=1, global_batch=16, flash_attention=True)
    loop_fw = replace(BARE, expert_gemm_loop=True)
    _, with_loop, parts = _layer_parts(p, loop_fw)
    _, without, _ = _layer_parts(p, BARE)
    c = 24.75e-6
    f_gpu = float(parts["moe_forward_gemm_s"][0])
    b_gpu = float(parts["moe_backward_gemm_s"][0])
    rest = float(without["layer_forward_s"][0] - parts["layer_expert_gemm_s"][0])
    exposed = max(16 * 2 * c - f_gpu, 0.0) + max(16 * 4 * c - (2 * rest + b_gpu), 0.0)
    assert exposed > 0  # 792 us of host time against tens of us of expert GEMMs forward
    assert float(with_loop["layer_expert_loop_s"][0]) == pytest.approx(exposed / 3, rel=1e-9)
    assert float(with_loop["layer_forward_s"][0] - without["layer_forward_s"][0]) == \
        pytest.approx(exposed / 3, rel=1e-9)
    assert float(without["layer_expert_loop_s"][0]) == 0.0
    r_loop = plan.evaluate(MOE, GPU, p, framework=loop_fw)
    r_bare = plan.evaluate(MOE, GPU, p, framework=BARE)
    m = catalog.model(MOE)
    grew = (r_loop.step["forward"] + r_loop.step["backward"]
            - r_bare.step["forward"] - r_bare.step["backward"])
    assert grew == pytest.approx(p.micro_batches * m.n_layers * exposed, rel=1e-9)


def test_a_dense_model_has_no_loop():
    p = Plan(dp=8, micro_batch=1, global_batch=16, flash_attention=True)
    ctx = step.context("llama3-8b", GPU, None, None, "mixed-adam", p.seq_len, p.global_batch,
                       "megatron-core")
    assert ctx.expert_call_s == 0.0
