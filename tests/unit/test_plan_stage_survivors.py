"""Surviving mutants of the planner's per-stage memory (``scaleout.plan.stages``), its
data-parallel bucketing and collectives (``plan.step._bucketed``, ``plan.step._colls``) and
``plan.evaluate``, killed with expected values worked by hand or properties that must hold.

- ``layers_per_gpu``: an uneven split is kept when ``pp`` divides the layers too;
- ``stage_memory``: the plan at index ``i`` of several, every stage's bytes by hand; a
  multi-token-prediction module's layer is an MoE layer exactly when the model's last layer
  is; under DualPipe a GPU holds both its stages' MoE layers, and with one stage there is
  nothing to pair; tensor parallelism halves a stage's non-routed parameters (the dense
  layers' MLPs included) and expert parallelism its routed ones;
- ``_bucketed``: Li et al. 2020's (PyTorch DDP, Sec. 3.2.3) buckets against a plain loop
  over their ready times, with a made-up linear cost per call;
- ``_colls``: which group each data-parallel collective runs over and whether DeepSpeed
  2021's flat rings reach the collective model, priced by a made-up cost model;
- ``evaluate``: the plan's own sequence length, no training time without a token budget,
  and the framework's name.

See ``tests/MUTATION.md``.
"""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scaleout import catalog, plan
from scaleout.plan import step
from scaleout.plan.evaluate import _arrays
from scaleout.plan.stages import layers_per_gpu, stage_memory
from scaleout.units import GIB

# The GPT-shaped model of test_plan_stages.py: 8 layers, h = 1024, a = 16, V = 51,200
# (tied embeddings, learned positions, biases), s = 1024.
L, H, A, V, S = 8, 1024, 16, 51_200, 1024
SMALL = catalog.custom_model(L, H, A, vocab=V, seq_len=S)
PER_LAYER = 12 * H * H + 13 * H  # Megatron-LM Eq. 2's per-layer count, biases and LayerNorms
EMBEDDING, POSITIONS, FINAL_NORM = V * H, S * H, 2 * H
BYTES_PER_PARAM = 2 + 2 + 12  # ZeRO Sec. 3.1: fp16 weights and gradients, fp32 Adam state
FIXED = 0.75 * GIB + 1.0 * GIB  # CUDA context and NCCL buffers (plan.RESERVE)
LOGITS = 8 * 1 * S * V  # fp32 logits and their gradient on the last stage


def _act_per_layer(s):
    """Korthikanti et al. 2022 Table 2, no parallelism, no recomputation, b = 1:
    ``s b h (34 + 5 a s / h)``."""
    return s * 1 * H * (34 + 5 * A * s / H)


def _hand(layers, in_flight, params, output):
    """Bytes of one GPU by hand: model state, activations, 5 % slack, the reserve, and the
    logits on the stage with the output layer."""
    held = params * BYTES_PER_PARAM + _act_per_layer(S) * layers * in_flight
    return held * 1.05 + FIXED + (LOGITS if output else 0)


# ============================================================================ layers_per_gpu
def test_uneven_split_kept_when_pp_divides_the_layers():
    """8 layers over 4 stages, 3 on the first and 1 on the last: the 7 before the last go
    3, 2, 2 (the earlier stages full), not the even 2, 2, 2, 2 a divisible count would
    give; an even split asked for is the even one."""
    assert layers_per_gpu(8, 4, 1, 3, 1).tolist() == [0, 0, 0, 1, 1, 2, 2, 3]
    assert layers_per_gpu(8, 4, 1, 2, 2).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert layers_per_gpu(12, 3, 1, 5, 3).tolist() == [0] * 5 + [1] * 4 + [2] * 3


# ============================================================================ stage_memory
def _two_plans():
    """SMALL on H100s under two plans at once: (tp 1, pp 4) and (tp 1, pp 2), dp 1, b 1,
    global batch 8 (8 micro-batches)."""
    ctx = step.context(SMALL, "H100", None, None, "mixed-adam", None, 8, None)
    one = [_arrays(plan.Plan(tp=1, pp=p, dp=1, micro_batch=1, global_batch=8)) for p in (4, 2)]
    arrays = {k: np.concatenate([a[k] for a in one]) for k in one[0]}
    return ctx, step._shape(ctx, arrays)


def test_stage_memory_of_the_plan_at_index_i():
    """Index 1 is the pp = 2 plan: 4 layers a stage, 2 and 1 micro-batches in flight (1F1B,
    Narayanan et al. 2021 Sec. 2.2.1); the first stage holds the embedding and positions, the
    last the final norm, the tied embedding's copy and the logits. Index 0 is the pp = 4
    plan: 2 layers a stage, 4, 3, 2, 1 in flight."""
    ctx, x = _two_plans()
    got = stage_memory(ctx, x, 4, 4, i=1)
    assert [s.layers for s in got] == [4, 4]
    assert [s.in_flight for s in got] == [2, 1]
    params = [4 * PER_LAYER + EMBEDDING + POSITIONS, 4 * PER_LAYER + FINAL_NORM + EMBEDDING]
    for s, p, flight in zip(got, params, (2, 1), strict=True):
        assert s.params == pytest.approx(p, rel=1e-12)
        assert s.total_bytes == pytest.approx(_hand(4, flight, p, s.output), rel=1e-12)
    got = stage_memory(ctx, x, 2, 2, i=0)
    assert [s.layers for s in got] == [2, 2, 2, 2]
    assert [s.in_flight for s in got] == [4, 3, 2, 1]
    params = [2 * PER_LAYER + EMBEDDING + POSITIONS, 2 * PER_LAYER, 2 * PER_LAYER,
              2 * PER_LAYER + FINAL_NORM + EMBEDDING]
    for s, p, flight in zip(got, params, (4, 3, 2, 1), strict=True):
        assert s.params == pytest.approx(p, rel=1e-12)
        assert s.total_bytes == pytest.approx(_hand(2, flight, p, s.output), rel=1e-12)


def _qwen_variant(name, **changes):
    """Qwen3-30B-A3B (48 layers, no shared expert) with other MoE layers and an MTP module."""
    return replace(catalog.model("qwen3-30b-a3b"), name=name, **changes)


@pytest.mark.parametrize(("step_", "first_dense", "moe"), [
    # every third layer from layer 2: 2, 5, ..., 47; the last (47) is MoE, so is the MTP layer
    (3, 0, [4, 4, 4, 4 + 1]),
    # after one dense layer every second: 2, 4, ..., 46; the last (47) is dense, so is the MTP's
    (2, 1, [5, 6, 6, 6]),
])
def test_mtp_layer_is_moe_as_the_last_layer_is(step_, first_dense, moe):
    """An MTP module's transformer layer is a layer like the model's last (DeepSeek-V3 report
    Sec. 2.2) and runs on the last stage. 48 layers on 4 stages of 12 (layers 0-11, 12-23,
    24-35, 36-47), MoE layers counted by hand; the last stage holds 13 layers."""
    m = _qwen_variant(f"qwen3-mtp-step{step_}", moe_layer_step=step_,
                      first_dense_layers=first_dense, mtp_layers=1)
    assert [j for j in range(48) if m.layer_is_moe(j)][-2:] == ([44, 47] if step_ == 3
                                                                else [44, 46])
    result = plan.evaluate(m, "H100", plan.Plan(tp=1, pp=4, dp=8, ep=8, micro_batch=1,
                                                global_batch=64), uneven_layers=False)
    assert [s.layers for s in result.stages] == [12, 12, 12, 13]
    assert [s.moe_layers for s in result.stages] == moe


def test_dualpipe_gpu_holds_both_stages_moe_layers():
    """DualPipe (DeepSeek-V3 Sec. 3.2.1), Qwen3-30B-A3B (every layer MoE) evenly on 4
    stages of 12: GPU i holds stages i and 3 - i, 24 layers, all 24 MoE, and keeps
    p + 1 = 5 micro-batches."""
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=4, dp=8, ep=8, micro_batch=1, global_batch=64),
        framework="deepseek-hai-llm", uneven_layers=False)
    assert [s.layers for s in result.stages] == [24] * 4
    assert [s.moe_layers for s in result.stages] == [24] * 4
    assert [s.in_flight for s in result.stages] == [5] * 4


def test_dualpipe_framework_without_pipeline_holds_the_model_once():
    """HAI-LLM's framework at pp = 1: no pipeline, no pairing; the one stage holds the 48
    layers once, the embedding and the output layer, and one micro-batch in flight."""
    result = plan.evaluate("qwen3-30b-a3b", "H100", plan.Plan(
        tp=1, pp=1, dp=8, ep=8, micro_batch=1, global_batch=64), framework="deepseek-hai-llm")
    (s,) = result.stages
    assert (s.layers, s.moe_layers, s.in_flight) == (48, 48, 1.0)
    assert s.embedding and s.output


def test_tp_halves_the_non_routed_parameters_of_every_stage():
    """DeepSeek-V3 (3 dense layers, then 58 MoE, an MTP module) on 4 stages of 16, 16, 16
    and 13 layers. Tensor parallelism splits every parameter but the routed experts' (dense
    MLPs, shared experts, attention, embedding and output layer: N), expert parallelism only
    the routed experts' (R), so on every stage P(tp 2, ep 1) + P(tp 1, ep 2) =
    (N / 2 + R) + (N + R / 2) = 1.5 (N + R) = 1.5 P(tp 1, ep 1). The first stage holds the
    3 dense layers, whose MLPs are wider than an MoE layer's non-routed parts."""
    def params(tp, ep):
        ctx = step.context("deepseek-v3", "H800", None, None, "mixed-adam", 4096, 64, None)
        p = plan.Plan(tp=tp, pp=4, dp=2, ep=ep, micro_batch=1, global_batch=64, seq_len=4096)
        got = stage_memory(ctx, step._shape(ctx, _arrays(p)), 16, 13)
        assert [s.layers for s in got] == [16, 16, 16, 14]
        assert [s.moe_layers for s in got] == [13, 16, 16, 14]
        return np.array([s.params for s in got])

    np.testing.assert_allclose(params(2, 1) + params(1, 2), 1.5 * params(1, 1), rtol=1e-12)


# ============================================================================ _bucketed
def _linear(alpha, per_byte):
    """A made-up collective: ``alpha + per_byte * bytes`` seconds for one call."""
    return lambda size: alpha + per_byte * np.asarray(size, dtype=float)


def _bucket_loop(calls, bucket, window):
    """Li et al.'s buckets by a plain loop: every call's bytes cut into ``ceil(size /
    bucket)`` equal buckets (one at least), all ``n`` buckets ready one after another, bucket
    ``j`` (1-based) at ``window j / n``, each running once ready and once the one before it
    has ended; what shows is the end less the window."""
    times = []
    for cost, size in calls:
        k = max(int(np.ceil(size / bucket)), 1)
        times += [float(cost(size / k))] * k
    n, end = len(times), 0.0
    for j, t in enumerate(times, start=1):
        end = max(end, window * j / n) + t
    return end - window


def test_one_small_call_is_one_bucket():
    """0.5 MB in buckets of 1 MB: one bucket of 0.5 MB, 1 s + 0.5 s; after a window of 10 s
    its 1.5 s still show (the last bucket starts when the window ends)."""
    cost = _linear(1.0, 1e-6)
    calls = [(cost, np.array([0.5e6]))]
    assert step._bucketed(calls, 1e6, None)[0] == pytest.approx(1.5, rel=1e-12)
    assert step._bucketed(calls, 1e6, np.array([10.0]))[0] == pytest.approx(1.5, rel=1e-12)
    assert _bucket_loop([(cost, 0.5e6)], 1e6, 10.0) == pytest.approx(1.5, rel=1e-12)


def test_two_calls_share_the_window_bucket_by_bucket():
    """Non-expert gradients of 4 MB and expert gradients of 2 MB in buckets of 1 MB: 4 + 2
    buckets of 1 s + 1 s = 2 s each, 12 s in all. Over a window of 6 s bucket j is ready at
    j s; run back to back from 1 s they end at 13 s: 7 s show, T - window (n - 1)/n =
    12 - 6 * 5/6. With a window of 60 s the buckets are ready 10 s apart and only the last,
    2 s, shows."""
    cost = _linear(1.0, 1e-6)
    calls = [(cost, np.array([4e6])), (cost, np.array([2e6]))]
    assert step._bucketed(calls, 1e6, None)[0] == pytest.approx(12.0, rel=1e-12)
    assert step._bucketed(calls, 1e6, np.array([6.0]))[0] == pytest.approx(7.0, rel=1e-12)
    assert step._bucketed(calls, 1e6, np.array([60.0]))[0] == pytest.approx(2.0, rel=1e-12)
    for window in (6.0, 60.0, 9.0):
        want = _bucket_loop([(cost, 4e6), (cost, 2e6)], 1e6, window)
        assert step._bucketed(calls, 1e6, np.array([window]))[0] == pytest.approx(want,
                                                                              rel=1e-12)


# ============================================================================ _colls
class _FakeCollectives:
    """A made-up collective model: ``size (n - 1) / n`` seconds a byte for a reduce-scatter
    or all-gather over ``n`` GPUs, twice that for an all-reduce; a node-aggregated one (a
    hierarchical algorithm using every GPU's NIC) 8 times faster than a flat ring."""

    def seconds(self, op, size, n, per_node, *, node_aggregate=True):
        n = np.asarray(n, dtype=float)
        t = {"all_reduce": 2.0, "reduce_scatter": 1.0, "all_gather": 1.0}[op]
        return t * np.asarray(size, dtype=float) * (n - 1) / n / (8.0 if node_aggregate
                                                                   else 1.0)


# dp 16 in shard groups of 8 (2 replicas), routed experts over 4 copies
_GROUPS = {"dp": np.array([16]), "per_node_dp": np.array([8]), "shard": np.array([8]),
           "per_node_shard": np.array([8]), "replicas": np.array([2]),
           "per_node_replica": np.array([1]), "edp": np.array([4]),
           "per_node_edp": np.array([4])}


def test_collectives_of_deepspeed_2021_run_as_flat_rings():
    """``flat_dp_rings`` (DeepSpeed 2021): every collective over the whole group, the
    shards or the experts' copies priced as a flat ring. All-reduce of 1,600 B over 16:
    2 * 1600 * 15/16 = 3,000; reduce-scatter of 1,600 B over the shard group of 8, 1,400,
    plus the shard (200 B) all-reduced over the 2 replicas, 2 * 200 / 2 = 200: 1,600;
    all-gather of 400 B over 4 expert copies: 300."""
    ctx = SimpleNamespace(framework=SimpleNamespace(flat_dp_rings=True),
                          collectives=_FakeCollectives())
    coll, sharded, expert = step._colls(ctx, _GROUPS)
    assert coll("all_reduce", np.array([1600.0]))[0] == pytest.approx(3000.0, rel=1e-12)
    assert sharded("reduce_scatter", np.array([1600.0]))[0] == pytest.approx(1600.0,
                                                                              rel=1e-12)
    assert sharded("all_gather", np.array([1600.0]))[0] == pytest.approx(1400.0, rel=1e-12)
    assert expert("all_gather", np.array([400.0]))[0] == pytest.approx(300.0, rel=1e-12)


def test_collectives_aggregated_per_node_and_hybrid_with_two_replicas():
    """Without flat rings every collective is node-aggregated (8 times faster here):
    3,000 / 8 = 375; (1,400 + 200) / 8 = 200; 300 / 8 = 37.5. The replicas' all-reduce is
    added with 2 replicas as with more."""
    ctx = SimpleNamespace(framework=SimpleNamespace(flat_dp_rings=False),
                          collectives=_FakeCollectives())
    coll, sharded, expert = step._colls(ctx, _GROUPS)
    assert coll("all_reduce", np.array([1600.0]))[0] == pytest.approx(375.0, rel=1e-12)
    assert sharded("reduce_scatter", np.array([1600.0]))[0] == pytest.approx(200.0, rel=1e-12)
    assert expert("all_gather", np.array([400.0]))[0] == pytest.approx(37.5, rel=1e-12)


# ============================================================================ evaluate
def test_evaluate_uses_the_plans_sequence_length():
    """SMALL (s = 1024 in the catalog) run at s = 2048, one GPU, 8 sequences a step: a step
    moves 8 * 2048 tokens, and each of the 8 layers keeps Korthikanti's s b h (34 + 5 a s/h)
    at s = 2048 for one micro-batch."""
    result = plan.evaluate(SMALL, "H100", plan.Plan(tp=1, pp=1, dp=1, micro_batch=1,
                                                    global_batch=8, seq_len=2048))
    assert result.tokens_per_s * result.step_s == pytest.approx(8 * 2048, rel=1e-12)
    assert result.memory["activations"] == pytest.approx(8 * _act_per_layer(2048), rel=1e-12)


def test_training_time_only_with_a_token_budget():
    """Without ``tokens`` no training time; with 10^9 tokens on 8 GPUs: 10^9 / tokens_per_s
    seconds, over 86,400 s a day, times 8 GPUs over 3,600 s an hour."""
    p = plan.Plan(tp=1, pp=1, dp=8, micro_batch=1, global_batch=64)
    result = plan.evaluate(SMALL, "H100", p)
    assert result.training_days is None and result.gpu_hours is None
    result = plan.evaluate(SMALL, "H100", p, tokens=1e9)
    seconds = 1e9 / result.tokens_per_s
    assert result.training_days == pytest.approx(seconds / 86_400, rel=1e-12)
    assert result.gpu_hours == pytest.approx(seconds * 8 / 3_600, rel=1e-12)


@pytest.mark.parametrize(("framework", "name"), [
    (None, "megatron-core"), ("torchtitan", "torchtitan"), ("deepspeed-2021", "deepspeed-2021")])
def test_result_names_its_framework(framework, name):
    """``PlanResult.framework`` names the preset assumed (Megatron-Core by default)."""
    result = plan.evaluate(SMALL, "H100", plan.Plan(tp=1, pp=1, dp=8, micro_batch=1,
                                                    global_batch=64), framework=framework)
    assert result.framework == name
