"""Surviving mutants of the planner's step model (``scaleout.plan.step``), its network pricing
(``plan.network``) and its words (``plan.explain``), killed with expected values worked by hand.

Mostly the host-bound stretch of a dropless MoE layer (``step._host_stretch``, Megatron-Core's
``moe_host_layer``): the host's calls between two of its waits, counted by hand from
``scaleout.moe.LAYER_HOST_CALLS`` and ``MOE_HOST_OPS`` (Megatron-LM 92c8482e), priced at
round made-up costs (a GEMM 10 us, an eager operator 1 us, a Transformer Engine module 5 us)
against made-up GPU times, and timed part by part by the recurrence of
``moe.host_stretch_exposed_s`` written out here: after the wait the GPU runs each launch only
once the host has issued it, ``F_i = max(F_{i-1}, H_i) + g_i`` for a single large launch (an
all-to-all), ``max(F_{i-1} + g_i, H_i)`` for work spread over the part's launches; the idle
time is ``F_n`` less the GPU's work, and the backward shows ``max(0, host - GPU)``.
See ``tests/MUTATION.md``.
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scaleout.plan import step
from scaleout.plan.frameworks import FRAMEWORKS

US = 1e-6
MOE, GPU = "qwen3-30b-a3b", "H100-SXM5-80GB"  # GQA attention (3 modules), no shared expert
CORE = FRAMEWORKS["megatron-core"]
GEMM, OP, MODULE = 10 * US, 1 * US, 5 * US


def _stretch(framework, ep, n_local, a2a_us, rest_us=5.0, fwd_gemm_us=100.0,
             bwd_gemm_us=200.0):
    """The host stretch of Qwen3-30B-A3B (BF16 recipe) under ``framework``, host costs made
    round; GPU times in microseconds: ``a2a_us`` = (dispatch, forward total, backward)."""
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", None, 16, framework)
    ctx = replace(ctx, expert_call_s=GEMM, host_op_s=OP, host_module_s=MODULE)
    x = SimpleNamespace(ep=np.array([float(ep)]))
    d, f, b = (np.array([v * US]) for v in a2a_us)
    experts = {"moe_forward_gemm_s": np.array([fwd_gemm_us * US]),
               "moe_backward_gemm_s": np.array([bwd_gemm_us * US])}
    got = step._host_stretch(ctx, x, np.array([rest_us * US]), experts,
                             {"dispatch_s": d, "forward_s": f, "backward_s": b},
                             np.array([float(n_local)]))
    return {k: float(np.asarray(v).reshape(-1)[0]) / US for k, v in got.items()}


def test_alltoall_stretch_host_bound_to_the_end():
    """EP 8, 16 local experts, the alltoall dispatcher, nothing overlapped.
    Host, after the wait: experts 32 GEMMs + 5 ops (2 all-to-alls, 2 sorts, SwiGLU) +
    2 modules = 335 us; combine 4 ops (restore sort 2, combine all-to-all, unpermute) = 4 us;
    rest 23 ops (RoPE 2, bias-dropout-add 2, norm, router 4, preprocessing 10, 4 copies) +
    3 attention modules = 38 us. Backward: 64 GEMMs + 17 ops (9 of the layer, 3 all-to-alls,
    2 permutes, 2 sorts, SwiGLU) + 5 modules = 682 us.
    GPU: dispatch 20, experts 100, combine 50 - 20 = 30, rest 5 (spread).
    F1 = 20; F2 = max(120, 335) = 335; F3 = max(335, 339) + 30 = 369;
    F4 = max(374, 377) = 377; busy 155: 222 us idle. Backward GPU 2*5 + 200 + 60 = 270:
    682 - 270 = 412 us."""
    got = _stretch(CORE, 8, 16, (20, 50, 60))
    assert got["forward_s"] == pytest.approx(222.0, rel=1e-9)
    assert got["backward_s"] == pytest.approx(412.0, rel=1e-9)
    assert got["total_s"] == pytest.approx(634.0, rel=1e-9)


def test_without_expert_parallelism_fewer_calls_count():
    """EP 1, 16 local experts, no all-to-all (its GPU times 0). Host: experts 32 GEMMs +
    1 op (SwiGLU; no all-to-all, the sort after the wait) + 2 modules = 331 us; combine
    3 ops (restore sort 2, unpermute) = 3 us; rest 9 ops + 3 modules = 24 us (no
    preprocessing for an all-to-all). Backward 64 GEMMs + 14 ops (9, permutes 2, sorts 2,
    SwiGLU) + 5 modules = 679 us.
    F1 = 0; F2 = max(100, 331) = 331; F3 = 334; F4 = max(339, 358) = 358; busy 105:
    253 us. Backward: 679 - (10 + 200) = 469 us."""
    got = _stretch(CORE, 1, 16, (0, 0, 0))
    assert got["forward_s"] == pytest.approx(253.0, rel=1e-9)
    assert got["backward_s"] == pytest.approx(469.0, rel=1e-9)


def test_deepep_waits_after_its_dispatch_and_counts_none_of_its_own_launches():
    """DeepEP: its own launches not counted (no MoE operators, no combine, no
    preprocessing), and the dispatch issued last, before the wait. Host: experts 32 GEMMs
    + 2 modules = 330 us; combine 0; rest 9 ops + 3 modules = 24 us; backward 64 GEMMs +
    9 ops + 5 modules = 674 us. GPU: experts 100, combine 25 - 20 = 5, rest 5, dispatch 20.
    F1 = max(100, 330) = 330; F2 = max(330, 330) + 5 = 335; F3 = max(340, 354) = 354;
    F4 = max(354, 354) + 20 = 374; busy 130: 244 us. Backward 674 - 270 = 404 us."""
    got = _stretch(replace(CORE, moe_dispatcher="deepep"), 8, 16, (20, 25, 60))
    assert got["forward_s"] == pytest.approx(244.0, rel=1e-9)
    assert got["backward_s"] == pytest.approx(404.0, rel=1e-9)


def test_captured_cuda_graphs_shorten_the_stretch():
    """The router and preprocessing graphed: rest 23 - norm - router 4 - preprocessing 10
    + 1 graph launch = 9 ops + 3 modules = 24 us; backward 17 - 5 + 1 = 13 ops: 64 GEMMs +
    13 ops + 5 modules = 678 us. As the first test otherwise: F3 = 369,
    F4 = max(374, 335 + 4 + 24 = 363) = 374, busy 155: 219 us; backward 678 - 270 = 408 us."""
    fw = replace(CORE, cuda_graph_scopes=("moe_router", "moe_preprocess"))
    got = _stretch(fw, 8, 16, (20, 50, 60))
    assert got["forward_s"] == pytest.approx(219.0, rel=1e-9)
    assert got["backward_s"] == pytest.approx(408.0, rel=1e-9)


def test_overlapped_all_to_alls_leave_the_gpu_only_its_other_work():
    """``a2a_overlap``: the all-to-alls run beside other work, none of their time in the
    stretch. As the first test's host: F1 = 0; F2 = 335; F3 = 339; F4 = max(344, 377) = 377;
    busy 105: 272 us. Backward 682 - (10 + 200) = 472 us."""
    got = _stretch(replace(CORE, a2a_overlap=True), 8, 16, (20, 50, 60))
    assert got["forward_s"] == pytest.approx(272.0, rel=1e-9)
    assert got["backward_s"] == pytest.approx(472.0, rel=1e-9)
