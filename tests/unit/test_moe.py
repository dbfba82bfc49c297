"""scaleout.moe: placement, routing, capacity, the all-to-all's bytes and time, expert memory,
parallel folding and the step estimate, against hand calculations and published figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleout import catalog, collectives, memory, moe
from scaleout.collectives import AlphaBeta

NVL = AlphaBeta(0.5e-6, 450e9)
IB = AlphaBeta(1e-6, 50e9)


# --------------------------------------------------------------------- placement
def test_placement_gives_each_gpu_e_over_ep_experts():
    p = moe.placement(256, 64)
    assert p.shape == (64, 4) and sorted(p.ravel()) == list(range(256))
    assert list(p[1]) == [4, 5, 6, 7]
    assert moe.experts_per_gpu(256, np.array([1, 8, 64, 256])).tolist() == [256, 32, 4, 1]
    assert moe.ep_sizes("mixtral-8x7b") == [1, 2, 4, 8]


@pytest.mark.parametrize(("call", "match"), [
    (lambda: moe.check_ep("deepseek-v3", 3), r"ep=3 must divide experts of deepseek-v3=256; "
                                             r"allowed: 1, 2, 4"),
    (lambda: moe.check_ep("gpt3-175b", 2), r"ep=2: model 'gpt3-175b' has no experts; allowed"),
    (lambda: moe.experts_per_gpu(8, np.array([2, 3])), r"ep=3 must divide experts=8"),
    (lambda: moe.route_tokens(10, 8, 9), r"top_k=9 must be at most experts=8"),
    (lambda: moe.fold(100, tp=8), r"tp x cp x pp=8 must divide n_gpus=100"),
    (lambda: moe.fold(64, pp=4, ep=32), r"etp x ep x pp=128 must divide n_gpus=64"),
])
def test_bad_input_names_parameter_value_and_allowed(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------- routing and load
def test_router_draws_distinct_experts_and_balanced_loads_sum_to_nk():
    choice = moe.route_tokens(1000, 16, 4, seed=1)
    assert choice.shape == (1000, 4)
    assert all(len(set(row)) == 4 for row in choice)
    loads = moe.expert_loads(1000, 16, 4, seed=1)
    assert loads.sum() == 4000 and loads.size == 16


def test_skewed_router_concentrates_load():
    flat = moe.expert_loads(4096, 64, 8, seed=2)
    skewed = moe.expert_loads(4096, 64, 8, skew=1.0, seed=2)
    assert skewed.max() > 2 * flat.max()
    assert moe.rank_imbalance(skewed, 8) > moe.rank_imbalance(flat, 8)
    p = moe.popularity(4, 1.0)
    assert p == pytest.approx(np.array([1, 1 / 2, 1 / 3, 1 / 4]) / (25 / 12))


def test_expected_max_load_matches_simulated_routings():
    """The normal approximation against 200 simulated balanced routings (seeded)."""
    tokens, E, k = 4096, 64, 8
    maxima = [moe.expert_loads(tokens, E, k, seed=s).max() for s in range(200)]
    assert moe.expected_max_load(tokens, E, k) == pytest.approx(np.mean(maxima), rel=0.05)
    # many tokens per expert: the busiest is close to the mean
    assert moe.expected_max_load(1e6, E, k) / (1e6 * k / E) < 1.05


def test_capacity_factor_drops_and_pads_by_hand():
    loads = np.array([6, 2, 0, 4])  # n k = 12, mean 3
    out = moe.capacity_outcome(loads, 1.0)
    assert out.capacity == 3
    assert out.dropped == pytest.approx((3 + 1) / 12)  # 3 over at expert 0, 1 at expert 3
    assert out.padded == pytest.approx((1 + 3) / 12)
    assert out.compute_factor == pytest.approx(1.0)
    roomy = moe.capacity_outcome(loads, 2.0)
    assert roomy.dropped == 0 and roomy.compute_factor == pytest.approx(2.0)
    assert moe.capacity_outcome(loads, 1.0, pad=False).compute_factor == pytest.approx(8 / 12)


# --------------------------------------------------------------------- traffic
def test_a2a_bytes_is_tokens_hidden_topk_bytes():
    assert moe.a2a_bytes(4096, 7168, 8, 1) == 4096 * 7168 * 8
    assert moe.a2a_bytes(np.array([1, 2]), 10, 2).tolist() == [40, 80]


def test_expected_nodes_by_hypergeometric_hand_count():
    # 8 experts over 4 nodes of 2, k = 2: P(node missed) = C(6,2)/C(8,2) = 15/28
    assert moe.expected_nodes_per_token(8, 2, 4) == pytest.approx(4 * (1 - 15 / 28))
    # DeepSeek-V3: 256 experts on 8 nodes, top-8 within at most 4 nodes
    limited = moe.expected_nodes_per_token(256, 8, 8, 4)
    assert limited == pytest.approx(4 * (1 - math.comb(96, 8) / math.comb(128, 8)))
    assert limited < moe.expected_nodes_per_token(256, 8, 8) < 8


def test_dispatch_copies_add_up_to_k_without_dedup():
    c = moe.dispatch_copies(256, 8, np.array([8, 16, 64]), 8)
    total = c["local"] + c["nvlink"] + c["network"]
    assert np.allclose(total, 8)
    assert c["network"].tolist() == [0, 4, 7]  # 8 ranks in a node: none; 16: half; 64: 7/8
    dedup = moe.dispatch_copies(256, 8, 64, 8, max_nodes_per_token=4, dedup_nodes=True)
    assert dedup["network"] < 4 < c["network"][2]  # node dedup and limit cut IB copies


def test_dispatch_copies_once_per_destination_gpu_by_hand():
    """Qwen3-30B-A3B's 8 of 128 experts over EP 8 (16 a GPU, one 8-GPU node): a GPU misses
    all 8 of a token's experts with probability C(112, 8)/C(128, 8), so a token's experts sit
    on 8 (1 - C(112, 8)/C(128, 8)) = 5.34 GPUs on average. DeepEP and HybridEP send it once
    to each: 5.34/8 to the sender itself, 5.34 x 7/8 over NVLink, against 1 and 7 copies an
    all-to-all of one copy per expert sends."""
    d = 8 * (1 - math.comb(112, 8) / math.comb(128, 8))
    assert d == pytest.approx(5.34, abs=0.005)
    c = moe.dispatch_copies(128, 8, 8, 8, dedup_ranks=True)
    assert c["local"] == pytest.approx(d / 8, rel=1e-12)
    assert c["nvlink"] == pytest.approx(d * 7 / 8, rel=1e-12)
    assert c["network"] == 0
    plain = moe.dispatch_copies(128, 8, 8, 8)
    assert (plain["local"], plain["nvlink"]) == (1.0, 7.0)


def test_layer_comm_time_follows_the_dispatcher():
    """DeepSeek-V3 over EP 64 on 8-GPU nodes, 4,096 tokens a GPU: Megatron-Core's all-to-all
    dispatcher sends each of a token's 8 copies to its expert, 8 x 56/64 = 7 of them across
    nodes; DeepEP sends a token once per other node it needs (node-limited to 4), which the
    model's default assumed already; HybridEP the same. The dispatcher name is checked."""
    kw = dict(intra=NVL, inter=IB, recipe="mixed-adam")
    a2a = moe.layer_comm_time("deepseek-v3", 4096, 64, 8, dispatcher="alltoall", **kw)
    assert a2a["network_bytes"] == pytest.approx(4096 * 7168 * 7 * 2, rel=1e-12)
    deepep = moe.layer_comm_time("deepseek-v3", 4096, 64, 8, dispatcher="deepep", **kw)
    default = moe.layer_comm_time("deepseek-v3", 4096, 64, 8, **kw)
    assert deepep["network_bytes"] == default["network_bytes"] < a2a["network_bytes"]
    assert deepep["nvlink_bytes"] < default["nvlink_bytes"]  # one copy per GPU in the node
    with pytest.raises(ValueError, match="dispatcher"):
        moe.layer_comm_time("deepseek-v3", 4096, 64, 8, dispatcher="ring", **kw)


def test_point_to_point_all_to_all_on_one_link_is_n_minus_1_over_n():
    S = 64e6
    t = moe.all_to_all_time(S, 8, 8, NVL, IB)
    assert t == pytest.approx(NVL.latency_s + 7 / 8 * S / NVL.bandwidth_bytes_s)
    # busbw = algbw (n-1)/n equals the link's bandwidth, as nccl-tests defines it
    busbw = collectives.busbw(S, t - NVL.latency_s, "all_to_all", 8)
    assert busbw == pytest.approx(NVL.bandwidth_bytes_s)
    # across 4 nodes the network carries 24/32 of it and sets the time
    t4 = moe.all_to_all_time(S, 32, 8, NVL, IB)
    assert t4 == pytest.approx(NVL.latency_s + IB.latency_s + S * 24 / 32 / IB.bandwidth_bytes_s)


def test_nvl72_keeps_the_all_to_all_on_nvlink():
    """The same EP64 dispatch: on 8-GPU nodes it crosses the network, in a 72-GPU rack not."""
    m = catalog.model("deepseek-v3")
    board = moe.layer_comm_time(m, 4096, 64, 8, "NVLink 4", "InfiniBand NDR")
    rack = moe.layer_comm_time(m, 4096, 64, 72, "NVLink 5", "InfiniBand XDR")
    assert rack["network_bytes"] == 0 and board["network_bytes"] > 0
    assert board["total_s"] > 5 * rack["total_s"]


def test_layer_comm_time_by_hand_for_mixtral_on_two_nodes():
    """Mixtral, EP 8 over 2 nodes of 4: per token k(ep-g)/ep = 1 copy to the other node and
    k(g-1)/ep = 0.75 to its own; BF16; four all-to-alls (forward and backward pairs)."""
    m = catalog.model("mixtral-8x7b")
    T = 8192
    out = moe.layer_comm_time(m, T, 8, 4, NVL, IB)
    net, nvl = T * 4096 * 1.0 * 2, T * 4096 * 0.75 * 2
    one = max(net / IB.bandwidth_bytes_s, nvl / NVL.bandwidth_bytes_s) + 1.5e-6
    assert out["network_bytes"] == pytest.approx(net)
    assert out["dispatch_s"] == pytest.approx(one)
    assert out["total_s"] == pytest.approx(4 * one)
    fp8 = moe.layer_comm_time(m, T, 8, 4, NVL, IB, "fp8-deepseek")
    assert fp8["dispatch_s"] < out["dispatch_s"] and fp8["combine_s"] == out["combine_s"]


# --------------------------------------------------------------------- memory and folding
def test_experts_per_gpu_memory_by_hand():
    m = catalog.model("mixtral-8x7b")
    p = moe.expert_params_per_gpu(m, ep=8)
    expert = 3 * 4096 * 14336
    assert p["experts"] == 32 * 8 * expert / 8
    assert p["experts"] + p["dense"] == pytest.approx(memory.param_count(m) - 7 / 8 * 32 * 8
                                                      * expert)
    full = moe.expert_params_per_gpu(m)
    assert full["total"] == memory.param_count(m)


def test_expert_optimizer_state_is_sharded_over_edp():
    state = moe.model_state_per_gpu("deepseek-v3", pp=16, dp=128, ep=64, zero_stage=1,
                                    recipe="mixed-adam")
    p = moe.expert_params_per_gpu("deepseek-v3", 64, 1, 1, 16)
    assert state["experts_optimizer_bytes"] == pytest.approx(12 * p["experts"] / 2)  # edp = 2
    assert state["dense_optimizer_bytes"] == pytest.approx(12 * p["dense"] / 128)


def test_parallel_folding_regroups_the_same_gpus():
    f = moe.fold(2048, pp=16, ep=64)
    assert (f.dp, f.edp) == (128, 2)
    f = moe.fold(64, tp=2, cp=2, ep=8, etp=1)
    assert f.tp * f.cp * f.dp == f.etp * f.ep * f.edp == 64
    groups = moe.fold_groups(f)
    assert groups["attention"].shape == (16, 2, 2) and groups["experts"].shape == (8, 8, 1)
    assert sorted(groups["experts"].ravel()) == list(range(64))


# -------------------------------------------------------------------- the experts' GEMMs
def test_tokens_per_local_expert_by_hand():
    """DeepSeek-V3 on B200 (Megatron Bridge 25.11: 4,096 tokens a GPU, EP 8): 4096 x 8 GPUs
    x 8 copies / 256 experts = 1,024 rows per expert GEMM; Qwen3-30B-A3B (128 experts,
    top-8, EP 8, micro-batch 4 of 4,096): 16384 x 8 x 8 / 128 = 8,192."""
    assert moe.tokens_per_local_expert(4096, 8, 8, 256) == 1024
    assert moe.tokens_per_local_expert(4 * 4096, 8, 8, 128) == 8192
    got = moe.tokens_per_local_expert(np.array([4096.0, 4096.0]), np.array([8, 64]), 8, 256)
    assert got.tolist() == [1024.0, 8192.0]
    with pytest.raises(ValueError, match="ep=3"):
        moe.tokens_per_local_expert(4096, 3, 8, 256)


def test_rank_imbalance_by_hand_for_two_ranks():
    """ep = 2: E[max of two standard normals] = 1/sqrt(pi). 100 tokens a GPU, top-2 of 4
    experts: mu = 200, sigma^2 = 200 (1/2)(2/3) = 66.67, so 1 + 8.165 x 0.5642 / 200."""
    sigma = math.sqrt(200 * 0.5 * 2 / 3)
    assert moe.expected_rank_imbalance(100, 4, 2, 2) == pytest.approx(
        1 + sigma / math.sqrt(math.pi) / 200, rel=1e-4)
    assert moe.expected_rank_imbalance(100, 4, 2, 1) == 1.0


def test_rank_imbalance_matches_random_logits_routing():
    """Megatron's force-balanced benchmark routing: normal random logits, top-k. The busiest
    of 8 ranks over 400 simulated routings of 8 x 256 tokens, top-4 of 64 experts."""
    rng = np.random.default_rng(7)
    E, k, ep, t, trials = 64, 4, 8, 256, 400
    ratios = []
    for _ in range(trials):
        top = np.argsort(-rng.standard_normal((ep * t, E)), axis=1)[:, :k]
        per_rank = np.bincount(top.ravel() // (E // ep), minlength=ep)
        ratios.append(per_rank.max() / per_rank.mean())
    assert moe.expected_rank_imbalance(t, E, k, ep) == pytest.approx(np.mean(ratios), rel=0.01)


def test_expert_weight_bytes_by_hand():
    """A million parameters of local experts: the forward and data-gradient GEMMs read them
    once each at the operand width, the weight-gradient GEMM reads and writes the gradient."""
    assert moe.expert_weight_bytes(1e6, 2, 4) == {"forward": 2e6, "dgrad": 2e6, "wgrad": 8e6}
    assert moe.expert_weight_bytes(1e6, 1, 2)["wgrad"] == 4e6
    with pytest.raises(ValueError, match="operand_bytes"):
        moe.expert_weight_bytes(1e6, 0, 2)


# -------------------------------------------------------------------- token permutations
def test_permutation_bytes_of_the_all_to_all_dispatcher_by_hand():
    """Qwen3-30B-A3B at micro-batch 1 on B200 (Megatron Bridge 25.11: 4,096 tokens a GPU,
    EP 8, 128/8 = 16 local experts, top-8, h = 2,048), BF16, a balanced deal (ρ = 1). One
    token row: 2,048 values, 4,096 bytes; its 8 copies: 32,768 bytes.

    forward: permute reads 1 row and writes 8, (1 + 8) x 4,096 = 36,864 bytes a token; the
    sort by local expert and its restore read and write the 8 copies, 2 x 32,768 = 65,536
    each; unpermute reads 8 rows and writes their sum, 36,864: 204,800 bytes a token.
    backward: the same passes on the gradients, 2 x 36,864 + 4 x 32,768 = 204,800.
    4,096 tokens: 409,600 x 4,096 = 1,677,721,600 bytes, 0.2097 ms at 8 TB/s. With one
    local expert (EP 128) nothing is sorted: 4 x 36,864 = 147,456 bytes a token."""
    got = moe.permutation_bytes(4096, 2048, 8, 128, 8)
    assert got["permute"] == got["unpermute"] == 36_864 * 4096
    assert got["sort"] == got["unsort"] == 65_536 * 4096
    assert got["forward"] == got["backward"] == 204_800 * 4096
    assert got["total"] == 1_677_721_600
    assert got["total"] / 8e12 == pytest.approx(0.2097e-3, rel=1e-3)
    one = moe.permutation_bytes(4096, 2048, 8, 128, 128)
    assert one["sort"] == 0.0 and one["total"] == 147_456 * 4096


def test_permutation_bytes_by_dispatcher_with_the_recipe_widths_and_the_busiest_rank():
    """t = 10 tokens of h = 4 values, top-2 of 8 experts over EP 4 (2 local experts), the
    busiest rank at ρ = 1.1, dispatched in FP8 (1 byte), combined in BF16.

    alltoall: permute (40 + 80) x 1 = 120; sort 2 x 88 x 1 = 176 (R = 10 x 2 x 1.1 x 4 = 88
    values); unsort 2 x 88 x 2 = 352; unpermute (80 + 40) x 2 = 240: 888 forward; backward
    2 x 120 x 2 + 4 x 88 x 2 = 1,184.
    deepep: a token's 2 experts sit on 4 (1 - C(6,2)/C(8,2)) = 4 x 13/28 = 13/7 ranks on
    average, so the busiest rank receives 10 x 13/7 x 1.1 x 4 = 572/7 values of token rows
    and lays them out as its 88 values of copies: permute (572/7 + 88) x 1, unpermute the
    same x 2, backward both x 2 bytes: (572/7 + 88) x 7 = 1,188 bytes in all.
    hybridep: the permutations are inside the communication kernels: none."""
    kw = dict(imbalance=1.1, dispatch_bytes=1.0, combine_bytes=2.0)
    a2a = moe.permutation_bytes(10, 4, 2, 8, 4, **kw)
    assert a2a["forward"] == pytest.approx(888.0, rel=1e-12)
    assert a2a["backward"] == pytest.approx(1184.0, rel=1e-12)
    deepep = moe.permutation_bytes(10, 4, 2, 8, 4, dispatcher="deepep", **kw)
    assert deepep["permute"] == pytest.approx(572 / 7 + 88, rel=1e-12)
    assert deepep["sort"] == 0.0
    assert deepep["total"] == pytest.approx(1188.0, rel=1e-12)
    assert moe.permutation_bytes(10, 4, 2, 8, 4, dispatcher="hybridep", **kw)["total"] == 0.0
    many = moe.permutation_bytes(np.array([10.0, 20.0]), 4, 2, 8, np.array([4, 8]), **kw)
    assert many["total"][0] == pytest.approx(888.0 + 1184.0, rel=1e-12)
    assert many["sort"][1] == 0.0  # one local expert: nothing to sort


def test_permutation_bytes_refuse_bad_input():
    with pytest.raises(ValueError, match="imbalance"):
        moe.permutation_bytes(10, 4, 2, 8, 4, imbalance=0.5)
    with pytest.raises(ValueError, match="ep=3 must divide experts"):
        moe.permutation_bytes(10, 4, 2, 8, 3)
    with pytest.raises(ValueError, match="dispatcher"):
        moe.permutation_bytes(10, 4, 2, 8, 4, dispatcher="nccl")
    with pytest.raises(ValueError, match="dispatch_bytes"):
        moe.permutation_bytes(10, 4, 2, 8, 4, dispatch_bytes=0)
