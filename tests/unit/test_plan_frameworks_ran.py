"""What the frameworks behind the held-out runs actually did: DeepSpeed 2021's blocking,
tensor-by-tensor ZeRO-3 fetch, and Megatron-LM of early 2023 (MegaScale's baseline) without
any of the overlaps Megatron-Core added later. Expected values are hand timelines and the
frameworks' own defaults, not the planner's output."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scaleout import memory, plan
from scaleout.layout import Plan
from scaleout.plan import frameworks, step


def test_the_fetch_chain_matches_a_hand_timeline():
    """Two layers of two units, computation (3, 1) s, gathers (2, 4) s. By hand: gather 0
    exposed (t = 2); unit 0 issues gather 1 (4 s) and computes 3 s: next entry at 6; unit 1
    issues the next layer's gather 0 (2 s), computes 1 s: 8; unit 0 again: 12; the last unit
    has nothing to prefetch: 13 s."""
    t = step.tensor_fetch_chain_s(2, [3.0, 1.0], [2.0, 4.0])
    assert t == pytest.approx(13.0)
    # each unit's gradient reduction queued behind the next gather: unit 0's 0.5 s, per layer
    assert step.tensor_fetch_chain_s(2, [3.0, 1.0], [2.0, 4.0], [0.5, 0.0]) == pytest.approx(14)
    # gathers shorter than the computation: only the first one shows
    assert step.tensor_fetch_chain_s(3, [3.0, 1.0], [0.5, 0.5]) == pytest.approx(0.5 + 12)


def test_one_unit_per_layer_is_the_usual_one_ahead_prefetch():
    """With one unit per layer the chain is g + (L - 1) max(c, g) + c, what the layer-wise
    prefetch of FSDP computes (step._prefetched)."""
    layers = np.array([1.0, 4.0, 96.0])
    for c, g in ((0.148, 0.162), (0.3, 0.1)):
        chain = step.tensor_fetch_chain_s(layers, [np.full(3, c)], [np.full(3, g)])
        assert chain == pytest.approx(g + (layers - 1) * max(c, g) + c)
        assert chain == pytest.approx(step._prefetched(layers, np.full(3, c), np.full(3, g), 1))


def test_deepspeed_2021_settings_are_its_v0_3_16_defaults():
    """stage3_param_persistence_threshold 1e5, stage3_max_reuse_distance 1e9, a blocking
    fetch; every switch it sets names its source."""
    ds = plan.framework("deepspeed-2021")
    assert ds.zero3_blocking_fetch and ds.zero3_unit == "tensor"
    assert ds.zero3_persistence_threshold == 100_000
    assert ds.zero3_max_reuse_distance == 1e9
    for name in ("zero3_blocking_fetch", "zero3_persistence_threshold",
                 "zero3_max_reuse_distance"):
        assert "v0.3.16" in ds.sources[name]
    # the other presets prefetch without blocking
    for name in ("pytorch-fsdp", "torchtitan", "megatron-core"):
        assert not plan.framework(name).zero3_blocking_fetch


def test_gpt3_layer_has_four_gathered_tensors_under_the_persistence_threshold():
    """GPT-3's layer (h = 12288): norms and biases (at most 4h = 49,152 elements) stay whole;
    the four weight matrices (3h^2, h^2, 4h^2, 4h^2) are gathered."""
    h = 12288
    big = [n for n in memory.layer_tensors("korthikanti-175b") if n >= 100_000]
    assert big == [3 * h * h, h * h, 4 * h * h, 4 * h * h]


def _zero3_175b(gpus: int, fw):
    p = Plan(dp=gpus, micro_batch=1536 // gpus, global_batch=1536, zero_stage=3,
             recompute="full")
    return plan.evaluate("korthikanti-175b", "A100-SXM4-80GB", p, framework=fw)


def test_the_blocking_fetch_exposes_gathers_that_a_free_prefetch_would_hide():
    """At 384 GPUs (4 sequences a GPU) the 175B layer's gathers take about as long as its
    computation: a prefetch running freely hides them, DeepSpeed 2021's blocking one does
    not (Narayanan et al. 2021 Table 2 measured 144 TFLOP/s there, not the ~200 a hidden
    gather gives)."""
    ds = plan.framework("deepspeed-2021")
    free = replace(ds, zero3_blocking_fetch=False)
    blocking, hidden = _zero3_175b(384, ds), _zero3_175b(384, free)
    assert blocking.step["dp_comm"] > 10 * hidden.step["dp_comm"]
    assert blocking.megatron_tflops_per_gpu == pytest.approx(144, rel=0.10)
    assert hidden.megatron_tflops_per_gpu > 180


def test_zero3_throughput_still_halves_as_gpus_double_at_a_fixed_batch():
    """Table 2's trend (144 -> 88 -> 44 TFLOP/s): each doubling at a fixed batch halves a
    GPU's computation while its gathers stay the same."""
    ds = plan.framework("deepspeed-2021")
    t = [_zero3_175b(n, ds).megatron_tflops_per_gpu for n in (384, 768, 1536)]
    assert t[1] < 0.75 * t[0] and t[2] < 0.6 * t[1]


def test_megatron_lm_2023_has_no_overlap_and_offers_zero1():
    """Megatron-LM at commit 285068c8 (January 2023): --use-distributed-optimizer, no
    --overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap or
    --overlap-p2p-communication."""
    f = plan.framework("megatron-lm-2023")
    assert f.zero_stages == (0, 1)
    assert not (f.grad_overlap or f.param_gather_overlap or f.tp_overlap or f.p2p_overlap)
    for switch in ("grad_overlap", "param_gather_overlap", "tp_overlap", "p2p_overlap",
                   "zero_stages"):
        assert "285068c8" in f.sources[switch]
    assert "megatron-lm-2023" in frameworks.framework_names()


def test_megascale_baseline_pays_its_tensor_parallel_all_reduces():
    """The same MegaScale layout under Megatron-Core (TP communication pipelined with the
    GEMMs) and under Megatron-LM 2023 (exposed): only the latter shows TP time, and it is
    slower by at least that time."""
    m = plan.published.cases()[0]
    case = next(c for c in m if c.source == "megascale_table2")
    assert case.framework == "megatron-lm-2023"
    old = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                        framework="megatron-lm-2023")
    new = plan.evaluate(case.model, case.gpu, case.plan, case.network,
                        framework="megatron-core")
    assert new.step["tp_comm"] == 0.0 < old.step["tp_comm"]
    assert old.step_s >= new.step_s + old.step["tp_comm"] * 0.9


def test_torchtitan_op_policy_recomputes_every_second_matmul_of_a_block():
    """torchtitan's per-op selective checkpoint (parallelize_llama.py @ 4d88a8a4) saves every
    mm output but the 2nd, 4th, 6th of a block: in Llama 3 8B wk (4096 x 1024), wo (4096 x
    4096) and w3 (4096 x 14336) = 79,691,776 of the block's 218,103,808 matmul parameters.
    The backward pass reruns them: that share of the layer's forward GEMM time."""
    from scaleout import catalog

    m = catalog.model("llama3-8b")
    assert step.every_other_matmul_params(m) == 4096 * 1024 + 4096 * 4096 + 4096 * 14336
    assert step.every_other_matmul_params(catalog.model("qwen3-30b-a3b")) == 0.0  # MoE
    arrays = {k: np.array([v]) for k, v in dict(
        tp=1, pp=1, dp=64, micro_batch=1, interleave=1, zero_stage=3, sp=False,
        rc=memory.recompute_code("selective"), flash=True).items()}
    for fw, share in (("torchtitan", 79_691_776 / 218_103_808), ("megatron-core", 0.0)):
        ctx = step.context("llama3-8b", "A100-SXM4-80GB", None, None, "mixed-adam", 8192, 64,
                           fw)
        c = step.compute_parts(ctx, step._shape(ctx, arrays))
        assert c["layer_recompute_s"][0] == pytest.approx(c["layer_gemm_s"][0] * share,
                                                          rel=1e-3)
