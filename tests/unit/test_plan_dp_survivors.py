"""Surviving mutants of the planner's pipeline, data-parallel and optimizer parts
(``scaleout.plan.step``) and of its collective pricing (``plan.network``), killed with
expected values worked by hand.

The parts are called directly on made-up inputs: a context of plain namespaces holding only
what the part reads (round link bandwidths, a made-up collective whose seconds are its bytes
over a round bandwidth), so every expected number is a line of arithmetic written out in the
test. A few checks run the real model on the catalog's Qwen3-30B-A3B (every layer MoE) and a
small GPT-shaped model, and assert properties that must hold whatever the numbers: a dense
model holds no expert parameters, the per-layer parts add up to the step's parts, the stages
are balanced on the time of the layers they run. See ``tests/MUTATION.md``.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from scaleout import catalog, plan
from scaleout.collectives import AlphaBeta, NodeNetwork
from scaleout.plan import step
from scaleout.plan.evaluate import _arrays
from scaleout.plan.network import CollectiveModel, derated_links


def _one(v):
    return float(np.asarray(v).reshape(-1)[0])


def _a(v):
    return np.array([v])


# ============================================================================ pipeline_parts
def _pipe_ctx(experts):
    """4 layers of h = 1000, 2-byte sends; nodes of 8 GPUs, 1 GB/s inside a node and
    0.1 GB/s between nodes, no latency; 1F1B, sends not overlapped."""
    links = SimpleNamespace(intra=SimpleNamespace(bandwidth_bytes_s=1e9, latency_s=0.0),
                            inter=SimpleNamespace(bandwidth_bytes_s=1e8, latency_s=0.0))
    return SimpleNamespace(
        model=SimpleNamespace(n_layers=4, hidden=1000), experts=experts,
        recipe=SimpleNamespace(activation_comm_bytes=2.0),
        collectives=SimpleNamespace(links=links), network=SimpleNamespace(gpus_per_node=8),
        framework=SimpleNamespace(p2p_overlap=False, pipeline_schedule="1f1b"))


def _pipe(experts, tp, cp, dp, ep_s=2.0):
    x = SimpleNamespace(tp=_a(tp), cp=_a(cp), dp=_a(dp), pp=_a(2), v=_a(1),
                        micro_batches=_a(4), tokens=_a(1000.0))
    c = {"layer_forward_s": _a(1.0), "layer_recompute_s": _a(0.5), "head_s": _a(3.0)}
    t = {"layer_tp_comm_s": _a(0.25), "layer_cp_comm_s": _a(0.5), "layer_ep_comm_s": _a(ep_s)}
    busy = {"layers": _a(2.0), "head": _a(1.0), "moe_layers": _a(2.0)}
    return step.pipeline_parts(_pipe_ctx(experts), x, c, t, busy)


# layer 0 dense, layers 1-3 MoE: moe_first[k] = MoE layers among the first k
ONE_DENSE_THREE_MOE = SimpleNamespace(moe_first=np.array([0.0, 0.0, 1.0, 2.0, 3.0]))


def test_bubble_is_the_pipeline_fill_of_an_average_stage_with_cp_and_all_to_alls():
    """A layer: forward 1 + backward 2 + recompute 0.5 + TP 0.25 + CP 0.5 = 4.25 s; the
    model's 3 MoE layers add 2 s of all-to-alls each, the output layer 3 s:
    (4 × 4.25 + 3 × 2 + 3) / 2 stages = 13 s a stage; 1F1B's bubble (pp - 1)/v = 1 of them.
    (The CP sends counted negative give 11, no MoE layer 10, two of them 12.)"""
    got = _pipe(ONE_DENSE_THREE_MOE, 2, 2, 2)
    assert _one(got["bubble_s"]) == pytest.approx(13.0, rel=1e-12)


def test_stages_of_a_dense_model_fill_the_pipeline_without_all_to_alls():
    """The same without experts (nor all-to-alls): (17 + 3) / 2 = 10 s."""
    got = _pipe(None, 2, 2, 2, ep_s=0.0)
    assert _one(got["bubble_s"]) == pytest.approx(10.0, rel=1e-12)


@pytest.mark.parametrize(("tp", "cp", "dp", "bandwidth"), [
    (2, 2, 2, 1e8),  # a stage fills its node: tp × cp × dp = 8 GPUs, sends leave the node
    (2, 1, 2, 1e9),  # 4 GPUs a stage: two stages share a node
])
def test_sends_cross_nodes_when_a_stage_fills_its_node(tp, cp, dp, bandwidth):
    """A micro-batch's activations: 1000 tokens × h 1000 × 2 bytes / tp 2 = 10⁶ bytes, sent
    forward and backward for 4 micro-batches: 8 × 10⁶ bytes, 0.08 s at 0.1 GB/s between
    nodes, 0.008 s at 1 GB/s inside one. A stage's GPUs are tp × cp × dp, context
    parallelism multiplying them (not dividing)."""
    got = _pipe(None, tp, cp, dp, ep_s=0.0)
    assert _one(got["p2p_s"]) == pytest.approx(8e6 / bandwidth, rel=1e-12)


# ============================================================================ optimizer_parts
def test_adam_step_sharded_over_the_shard_group_times_cp():
    """ZeRO-1, shard group 4, cp 2: the 10⁹ parameters' Adam traffic, 28 bytes each
    (read 4 + 4 + 4 + 2, write 12 + 2), is split over 4 × 2 = 8 GPUs: 3.5 × 10⁹ bytes at
    1 TB/s, 3.5 ms."""
    ctx = SimpleNamespace(gpu=SimpleNamespace(hbm_gbytes_s=1000.0), experts=None)
    x = SimpleNamespace(zero_stage=_a(1), shard=_a(4), cp=_a(2), edp=_a(1))
    got = step.optimizer_parts(ctx, x, {"params_per_gpu": _a(1e9)})
    assert _one(got["optimizer_s"]) == pytest.approx(3.5e-3, rel=1e-12)


# ============================================================================ data_parallel_parts
class _Fabric:
    """A made-up collective: its bytes at 10 GB/s inside one node (``per_node >= n``), at
    1 GB/s across nodes; nothing over one GPU."""

    def seconds(self, op, size, n, per_node, node_aggregate=True):
        n, per_node = np.asarray(n), np.asarray(per_node)
        size = np.asarray(size, dtype=float)
        return np.where(n > 1, size / np.where(per_node >= n, 1e10, 1e9), 0.0)


def _dp_ctx(experts=None, overlap=0.0, grad_overlap=False, bucket=None):
    fw = SimpleNamespace(grad_bucket_bytes=bucket, grad_overlap=grad_overlap,
                         param_gather_overlap=False, flat_dp_rings=False,
                         zero2_per_unit=False, pp_defers_grad_sync=False)
    return SimpleNamespace(network=SimpleNamespace(gpus_per_node=8), experts=experts,
                           framework=fw, recipe=SimpleNamespace(grad_comm=2.0),
                           collectives=_Fabric(),
                           calibration=SimpleNamespace(dp_overlap=overlap))


def _dp(ctx, tp=1, cp=1, dp=2, ep=1, edp=None, params=1e9, expert_params=0.0, cp_s=0.0):
    """Plain data parallelism (ZeRO-0) of one plan, ``params`` non-expert parameters per GPU
    (2-byte gradients), a layer's forward 0.25 s."""
    x = SimpleNamespace(tp=_a(tp), cp=_a(cp), dp=_a(dp), shard=_a(dp), ep=_a(ep),
                        edp=_a(edp if edp is not None else tp * cp * dp // ep),
                        zero_stage=_a(0), pp=_a(1), micro_batches=_a(1), rc=_a(0))
    mem = {"params_per_gpu": _a(params), "expert_params_per_gpu": _a(expert_params)}
    c = {"layer_forward_s": _a(0.25), "layer_recompute_s": _a(0.0), "layer_gemm_s": _a(0.25)}
    t = {"layer_tp_comm_s": _a(0.0), "layer_cp_comm_s": _a(cp_s)}
    return _one(step.data_parallel_parts(ctx, x, mem, c, t, {"layers": _a(1.0)})["dp_comm_s"])


@pytest.mark.parametrize(("overlap", "want"), [(0.0, 0.2), (0.25, 0.15), (0.5, 0.1)])
def test_calibrated_overlap_hides_its_share_of_the_gradient_reduction(overlap, want):
    """dp 2 in one node: 2 × 10⁹ gradient bytes at 10 GB/s, 0.2 s; the calibration's
    ``dp_overlap`` hides that share of it."""
    assert _dp(_dp_ctx(overlap=overlap)) == pytest.approx(want, rel=1e-12)


def test_gradient_buckets_hide_behind_a_backward_with_its_cp_sends():
    """dp 16 (two nodes), 2 × 10⁹ gradient bytes in buckets of 10⁹: 2 buckets of 1 s.
    The backward they hide behind: one layer of (3 × 0.25 forward + 0.75 CP sends) × 2/3
    = 1 s; the first bucket is ready half-way: max(1, 2 - 1 × 1/2) = 1.5 s shows (the CP
    sends left out: no window, 2 s)."""
    ctx = _dp_ctx(grad_overlap=True, bucket=1e9)
    assert _dp(ctx, dp=16, cp_s=0.75) == pytest.approx(1.5, rel=1e-12)


EXPERTS = SimpleNamespace(moe_share=1.0)


def test_expert_copies_one_a_node_when_expert_parallelism_fills_the_node():
    """dp 16, ep 8 on nodes of 8: the dense part's 16 copies span two nodes (2 × 10⁹ bytes
    at 1 GB/s, 2 s); the experts' edp = 2 copies sit on different nodes, since an expert
    group fills a node: 2 s more, 4 s (one node, 0.2 s: 2.2 s)."""
    got = _dp(_dp_ctx(EXPERTS), dp=16, ep=8, expert_params=1e9)
    assert got == pytest.approx(4.0, rel=1e-12)


def test_moe_dense_part_reduced_over_two_copies_with_one_expert_copy():
    """dp 2, ep 2: edp = 1, one copy of each expert, but the dense part has two, in one
    node: 0.2 s."""
    got = _dp(_dp_ctx(EXPERTS), dp=2, ep=2, expert_params=1e9)
    assert got == pytest.approx(0.2, rel=1e-12)


def test_moe_experts_reduced_over_two_copies_with_one_dense_copy():
    """dp 1, tp 2, ep 1: the dense part has one copy (nothing to reduce), the experts
    edp = tp × cp × dp / ep = 2 copies in one node: 2 × 10⁹ bytes at 10 GB/s, 0.2 s."""
    got = _dp(_dp_ctx(EXPERTS), tp=2, dp=1, ep=1, expert_params=1e9)
    assert got == pytest.approx(0.2, rel=1e-12)


# ============================================================================ CollectiveModel
def test_seconds_of_many_groups_is_the_time_of_each_past_65536_gpus():
    """A measured α-β network (priced by the hierarchical α-β model, one distinct group at
    a time): a group of 2 GPUs in one node and one of 65,538 GPUs, one a node, priced in
    one call, each as :meth:`CollectiveModel.time` prices it alone. The 2-GPU group inside
    a node is far faster than the 65,538 across nodes."""
    net = NodeNetwork(AlphaBeta(1e-6, 100e9), AlphaBeta(5e-6, 10e9), 8)
    model = CollectiveModel(derated_links(net, 1.0), False, "hopper", False, "nvlink")
    size = np.array([1e9, 1e9])
    got = model.seconds("all_reduce", size, np.array([2, 65538]), np.array([2, 1]))
    alone = [float(model.time("all_reduce", size[:1], 2, 2)[0]),
             float(model.time("all_reduce", size[:1], 65538, 1)[0])]
    assert alone[0] < alone[1] / 5
    assert got.tolist() == pytest.approx(alone, rel=1e-12)


# ============================================================================ memory_parts
SMALL = catalog.custom_model(8, 1024, 16, vocab=51_200, seq_len=1024)


def _memory(pp, micro_batch):
    ctx = step.context(SMALL, "H100", None, None, "mixed-adam", None, 8)
    x = step._shape(ctx, _arrays(plan.Plan(pp=pp, micro_batch=micro_batch, global_batch=8)))
    k = 8 / pp
    got = step.memory_parts(ctx, x, {"first_layers": _a(k), "last_layers": _a(k)})
    return {key: _one(v) for key, v in got.items()}


@pytest.mark.parametrize(("pp", "micro_batch", "in_flight"), [(1, 1, 1.0), (2, 2, 2.0)])
def test_dense_model_holds_no_expert_parameters_and_reports_its_micro_batches(
        pp, micro_batch, in_flight):
    """A dense model's fullest GPU holds no routed experts: 0 expert parameters per GPU.
    One stage keeps one micro-batch; two stages of 4 layers, b = 2, 4 micro-batches: the
    first stage (2 × 4 layers of activations, the embedding and the positions) is fuller
    than the last (4 layers, the logits of one micro-batch, the output layer) and keeps
    min(pp, m) = 2 micro-batches in flight (1F1B's warm-up)."""
    got = _memory(pp, micro_batch)
    assert got["expert_params_per_gpu"] == 0.0
    if pp == 2:
        assert got["first_stage_bytes"] > got["last_stage_bytes"]
    assert got["in_flight"] == in_flight


# ============================================================================ iteration
def test_per_layer_cp_sends_add_up_to_the_steps():
    """One stage of the 8-layer model with cp 2 (flash attention): the step's CP part is
    the per-layer, per-micro-batch sends times 8 layers times the micro-batches."""
    ctx = step.context(SMALL, "H100", None, None, "mixed-adam", None, 8)
    a = _arrays(plan.Plan(dp=2, cp=2, global_batch=8, flash_attention=True))
    got = step.iteration(ctx, a, uneven=False)
    per_layer = _one(got["layer_cp_comm_s"])
    assert per_layer > 0.0
    assert _one(got["cp_comm_s"]) == pytest.approx(
        per_layer * 8 * _one(got["micro_batches"]), rel=1e-12)


def test_stages_balanced_on_a_moe_layers_time_with_its_all_to_alls(monkeypatch):
    """Qwen3-30B-A3B (every layer MoE), 16 H100s a stage, ep 16 across two nodes, 5 stages (48
    layers, an uneven split): every layer runs its all-to-alls, so the layer time the split
    balances is the busiest GPU's per-layer time plus a layer's all-to-alls."""
    seen = {}
    split, busiest = step.stage_split, step.busiest_gpu

    def spy_split(ctx, x, per_layer, head_s, uneven):
        seen["balance"] = np.asarray(per_layer, dtype=float).copy()
        return split(ctx, x, per_layer, head_s, uneven)

    def spy_busiest(ctx, x, st, per_layer, ep_layer, head_s):
        seen["per_layer"], seen["ep_layer"] = per_layer, ep_layer
        return busiest(ctx, x, st, per_layer, ep_layer, head_s)

    monkeypatch.setattr(step, "stage_split", spy_split)
    monkeypatch.setattr(step, "busiest_gpu", spy_busiest)
    ctx = step.context("qwen3-30b-a3b", "H100", None, None, "mixed-adam", None, 80)
    a = _arrays(plan.Plan(dp=16, ep=16, pp=5, global_batch=80))
    step.iteration(ctx, a, uneven=True)
    assert _one(seen["ep_layer"]) > 0.0
    assert _one(seen["balance"]) == pytest.approx(
        _one(seen["per_layer"]) + _one(seen["ep_layer"]), rel=1e-12)
