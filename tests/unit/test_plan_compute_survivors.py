"""Surviving mutants of the planner's per-layer compute (``scaleout.plan.step``: ``experts_of``,
``_shape``, ``expert_gemm_parts``, ``compute_parts``, ``_ep_comm``), killed with counts and
values worked by hand or properties that must hold.

- ``experts_of``: the MoE layers among the first, the last and any ``k`` consecutive layers,
  counted by hand for a model with two dense layers first and experts every second layer;
- ``_shape``: the layout conventions ``iteration`` documents (a shard code 0 is the whole of
  ``dp``, a shard group of 1 stays 1, ``cp`` and ``ep`` are 1 where absent);
- ``expert_gemm_parts``: a few tokens per expert leave the expert GEMMs memory-bound: each
  pass reads the local experts' weights at the GPU's HBM bandwidth (GB/s are 10^9 bytes/s);
- ``compute_parts``: a host-bound MoE layer (one GEMM call per local expert and pass, the
  other launches of ``moe.moe_host_ops``) shows what its host time outlasts of the GPU's work,
  the backward window twice the layer's other forward work plus the experts' backward GEMMs;
  the recomputed kinds' matmuls are split over ``tp`` and run at the recipe's FP8 rate; each
  multi-token-prediction module adds the same projection;
- ``_ep_comm``: expert parallelism of 2 pays ``moe.layer_comm_time`` at the framework's
  dispatcher and the recipe's bytes, ``ep = 1`` nothing.

See ``tests/MUTATION.md``.
"""

from dataclasses import replace

import numpy as np
import pytest
from scaleout import catalog, memory, moe
from scaleout.plan import step
from scaleout.plan.frameworks import FRAMEWORKS

MOE, GPU = "qwen3-30b-a3b", "H100-SXM5-80GB"
CORE = FRAMEWORKS["megatron-core"]


def _arrays(n=1, **changes):
    a = {"tp": np.ones(n, dtype=np.int64), "pp": np.ones(n, dtype=np.int64),
         "dp": np.ones(n, dtype=np.int64), "micro_batch": np.ones(n, dtype=np.int64),
         "interleave": np.ones(n, dtype=np.int64), "zero_stage": np.zeros(n, dtype=np.int64),
         "rc": np.zeros(n, dtype=np.int64), "sp": np.zeros(n, dtype=bool),
         "flash": np.ones(n, dtype=bool), "cp": np.ones(n, dtype=np.int64),
         "ep": np.ones(n, dtype=np.int64)}
    a.update({k: np.asarray(v) for k, v in changes.items()})
    return a


# ============================================================================ experts_of
def test_experts_of_counts_moe_layers_first_last_and_in_any_window():
    """Qwen3-30B-A3B cut to 7 layers, 2 dense first, experts every second layer after them:
    layers 3 and 5 have experts (flags 0 0 0 1 0 1 0). Among the first k = 0..7 layers:
    0 0 0 0 1 1 2 2; among the last k: 0 0 1 1 2 2 2 2; the most any k consecutive layers
    hold: 0 1 1 2 2 2 2 2 (layers 3-5 from k = 3; all 7 layers hold both)."""
    m = replace(catalog.model(MOE), name="qwen3-seven", n_layers=7, first_dense_layers=2,
                moe_layer_step=2)
    assert [i for i in range(7) if m.layer_is_moe(i)] == [3, 5]
    ex = step.experts_of(m)
    np.testing.assert_array_equal(ex.moe_first, [0, 0, 0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(ex.moe_last, [0, 0, 1, 1, 2, 2, 2, 2])
    np.testing.assert_array_equal(ex.moe_window, [0, 1, 1, 2, 2, 2, 2, 2])


# ============================================================================ _shape
def test_shape_follows_the_layout_conventions_iteration_documents():
    """A shard code 0 means the whole of ``dp`` (``layout._shard``, ``search``'s codes); a
    shard group of 1 (every rank holds a whole copy, a valid hybrid plan) stays 1; ``cp`` and
    ``ep`` are 1 where the arrays leave them out, so the expert data-parallel size is
    ``tp × dp`` (2 × 4 = 8); the micro-batches a replica runs are a whole count."""
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", 1024, 32, "megatron-core")
    a = _arrays(3, tp=[2, 2, 2], dp=[4, 4, 4], zero_stage=[1, 1, 1], zero_shard=[0, 2, 1])
    del a["cp"], a["ep"]
    x = step._shape(ctx, a)
    np.testing.assert_array_equal(x.shard, [4, 2, 1])
    np.testing.assert_array_equal(x.cp, [1, 1, 1])
    np.testing.assert_array_equal(x.ep, [1, 1, 1])
    np.testing.assert_array_equal(x.edp, [8, 8, 8])
    np.testing.assert_array_equal(x.micro_batches, [8, 8, 8])  # 32 / (4 × 1)
    # a count of whole micro-batches (the rule ``batch``), kept as integers in
    # ``SearchResult.arrays["micro_batches"]``
    assert np.issubdtype(x.micro_batches.dtype, np.integer)


# ============================================================================ expert GEMMs
def test_few_tokens_per_expert_read_the_experts_weights_at_hbm_bandwidth():
    """Qwen3-30B-A3B at s = 128, b = 1, tp = 1, ep = 8: 128 tokens × 8 experts each over 128
    experts × 8 ranks = 64 rows an expert, against 16 local experts' weights of 3 × 2048 × 768
    (BF16): each pass is memory-bound. Forward and data gradient read 2 bytes a weight, the
    weight gradient reads and writes the 2-byte gradients it accumulates into (4 bytes), at the
    H100's 3,350 GB/s (3.35 × 10^12 bytes/s); every layer has experts. Averaged in forward
    units: a third of the three passes."""
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", 128, 8, "megatron-core")
    x = step._shape(ctx, _arrays(ep=[8]))
    got = step.expert_gemm_parts(ctx, x)
    weights = 16 * 3 * 2048 * 768
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    assert ctx.gpu.hbm_gbytes_s == 3350
    assert float(got["tokens_per_expert"][0]) == pytest.approx(64.0)
    np.testing.assert_allclose(got["moe_forward_gemm_s"], [2 * weights / hbm], rtol=1e-13)
    np.testing.assert_allclose(got["moe_backward_gemm_s"], [(2 + 4) * weights / hbm],
                               rtol=1e-13)
    np.testing.assert_allclose(got["layer_expert_gemm_s"], [(2 + 2 + 4) * weights / hbm / 3],
                               rtol=1e-13)


# ============================================================================ compute_parts
GEMM_CALL, OP_CALL = 1e-3, 1e-4  # made-up host costs: slower than any GPU work below


@pytest.mark.parametrize("ep", [1, 4])
def test_host_bound_moe_layer_shows_what_its_launches_outlast(ep):
    """Qwen3-30B-A3B (every layer MoE) under Megatron-Core's alltoall dispatcher, host costs
    made large: a GEMM call 1 ms, another launch 0.1 ms, no module cost. ``n = 128/ep`` local
    experts; forward: ``2n`` GEMM calls and ``moe_host_ops``' forward launches against the
    experts' forward GEMMs (and, from ``ep = 2``, the dispatch, which waits behind the
    host); backward: ``4n`` calls and the backward launches against twice the layer's other
    forward work (``rest``: the layer's forward less the experts' GEMMs) plus the experts'
    backward GEMMs. The idle time, a third of it in forward units, is added to the forward."""
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", 1024, 8, "megatron-core")
    ctx = replace(ctx, expert_call_s=GEMM_CALL, host_op_s=OP_CALL, host_module_s=0.0)
    x = step._shape(ctx, _arrays(ep=[ep]))
    got = step.compute_parts(ctx, x)
    ex = step.expert_gemm_parts(ctx, x)
    a2a = step._ep_comm(ctx, x, ex["rank_imbalance"])
    n = 128 / ep
    ops = moe.moe_host_ops(n, ep, dispatcher="alltoall")  # counted from MOE_HOST_OPS
    loop = float(got["layer_expert_loop_s"][0])
    rest = float(got["layer_forward_s"][0]) - loop - float(ex["layer_expert_gemm_s"][0])
    host_f = 2 * n * GEMM_CALL + float(ops["forward"]) * OP_CALL
    host_b = 4 * n * GEMM_CALL + float(ops["backward"]) * OP_CALL
    gpu_f = float(ex["moe_forward_gemm_s"][0]) + float(a2a["dispatch_s"][0])
    gpu_b = 2 * rest + float(ex["moe_backward_gemm_s"][0])
    assert host_f > gpu_f and host_b > gpu_b and rest > 0
    assert loop == pytest.approx((host_f - gpu_f + host_b - gpu_b) / 3, rel=1e-12)


def test_host_op_count_depends_on_local_experts_and_expert_parallelism():
    """The same host-bound layer at ``ep = 1``, another launch costing 1 s: 128 local experts
    and no all-to-all, so forward only the activation counts and backward the activation, the
    permutes and the sorts; not the counts of 2 ranks, nor of one local expert."""
    ctx = step.context(MOE, GPU, None, None, "mixed-adam", 1024, 8, "megatron-core")
    ctx = replace(ctx, expert_call_s=GEMM_CALL, host_op_s=1.0, host_module_s=0.0)
    x = step._shape(ctx, _arrays())
    got = step.compute_parts(ctx, x)
    ex = step.expert_gemm_parts(ctx, x)
    # MOE_HOST_OPS["alltoall"]: forward 1 activation (the all-to-alls and sorts need ep > 1);
    # backward 1 activation, 2 permutes, 2 sorts (128 local experts)
    fwd, bwd = 1, 1 + 2 + 2
    loop = float(got["layer_expert_loop_s"][0])
    rest = float(got["layer_forward_s"][0]) - loop - float(ex["layer_expert_gemm_s"][0])
    want = ((256 * GEMM_CALL + fwd - float(ex["moe_forward_gemm_s"][0]))
            + (512 * GEMM_CALL + bwd - 2 * rest - float(ex["moe_backward_gemm_s"][0]))) / 3
    assert loop == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("tp", [1, 2])
def test_recomputed_kinds_split_over_tp_at_the_recipes_fp8_rate(tp):
    """DeepSeek-V3 under HAI-LLM (recomputing RMSNorms, MLA up-projections and SwiGLU) with
    its FP8 recipe, no recomputation mode: the layer recomputes only those kinds, their
    matmuls ``2 × tokens × params`` FLOPs split over ``tp`` at the recipe's seconds per FLOP
    (its FP8 share at the FP8 rate), their memory-bound traffic at HBM bandwidth, a third of
    it (forward units)."""
    ctx = step.context("deepseek-v3", GPU, None, None, "fp8-deepseek", 1024, 8,
                       "deepseek-hai-llm")
    assert ctx.fp8_share > 0
    x = step._shape(ctx, _arrays(tp=[tp]))
    got = float(step.compute_parts(ctx, x)["layer_recompute_s"][0])
    kinds = memory.recomputed_kinds_per_layer(ctx.framework.recompute_kinds, ctx.model,
                                              1024.0, 1, tp, False,
                                              ctx.recipe.gemm_input_bytes)
    assert kinds["params"] > 0
    per_flop = float(step._seconds_per_flop(ctx, step._matmul_rate(ctx, x))[0])
    hbm = ctx.gpu.hbm_gbytes_s * 1e9
    want = (2 * 1024 * kinds["params"] / tp * per_flop
            + ctx.calibration.nonmatmul_traffic * kinds["traffic_bytes"] / hbm / 3)
    assert got == pytest.approx(float(want), rel=1e-12)


def test_every_mtp_module_adds_the_same_projection():
    """The output layer's forward and backward ``O`` on the last stage; each multi-token
    prediction module runs it once more after its ``2h × h`` projection ``P``: with ``k``
    modules ``O (1 + k) + k P``, so (head(2) - 3 head(0)) is twice (head(1) - 2 head(0)),
    and positive."""
    base = catalog.custom_model(8, 1024, 16, vocab=51_200, seq_len=1024)
    heads = []
    for k in (0, 1, 2):
        m = replace(base, name=f"gpt-mtp-{k}", mtp_layers=k)
        ctx = step.context(m, GPU, None, None, "mixed-adam", 1024, 8, "megatron-core")
        heads.append(float(step.compute_parts(ctx, step._shape(ctx, _arrays()))["head_s"][0]))
    one, two = heads[1] - 2 * heads[0], heads[2] - 3 * heads[0]
    assert one > 0
    assert two == pytest.approx(2 * one, rel=1e-9)


# ============================================================================ _ep_comm
def test_expert_parallel_all_to_alls_at_the_framework_dispatcher_and_recipe():
    """Qwen3-30B-A3B with DeepEP's dispatcher and DeepSeek's FP8 recipe (dispatch in FP8 with
    its scales, 1.03125 bytes a value): at ``ep = 2`` a layer's all-to-alls are
    ``moe.layer_comm_time`` for the busiest rank's ``ρ`` times 1,024 tokens over the node's
    links, full recomputation adding the forward pair; at ``ep = 1`` nothing is sent."""
    fw = replace(CORE, moe_dispatcher="deepep")
    ctx = step.context(MOE, GPU, None, None, "fp8-deepseek", 1024, 8, fw)
    x = step._shape(ctx, _arrays(3, ep=[1, 2, 2], rc=[0, 0, 2]))
    rho = moe.expected_rank_imbalance(1024.0, 128, 8, 2)
    got = step._ep_comm(ctx, x, np.array([1.0, rho, rho]))
    links = ctx.collectives.links
    want = moe.layer_comm_time(MOE, 1024.0 * rho, 2, 8, links.intra, links.inter,
                               "fp8-deepseek", dispatcher="deepep")
    plain = moe.layer_comm_time(MOE, 1024.0 * rho, 2, 8, links.intra, links.inter)
    assert want["total_s"] < plain["total_s"]  # fewer copies, fewer bytes than alltoall BF16
    np.testing.assert_allclose(got["total_s"], [0.0, want["total_s"],
                                                want["total_s"] + want["forward_s"]],
                               rtol=1e-12)
    np.testing.assert_allclose(got["dispatch_s"], [0.0, want["dispatch_s"],
                                                   want["dispatch_s"]], rtol=1e-12)
