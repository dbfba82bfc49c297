"""scaleout.context_parallel and scaleout.roofline against hand calculations and datasheets."""

from __future__ import annotations

import numpy as np
import pytest
from scaleout import catalog, compute, memory, roofline
from scaleout import context_parallel as cp
from scaleout.collectives import AlphaBeta


# --------------------------------------------------------------------- context parallelism
def test_ring_schedule_visits_every_block_once():
    sched = cp.ring_schedule(8)
    assert sched.shape == (8, 8)
    for gpu in range(8):
        assert sorted(sched[:, gpu]) == list(range(8))
    assert list(sched[1]) == [7, 0, 1, 2, 3, 4, 5, 6]  # each GPU holds its left neighbour's


@pytest.mark.parametrize(("call", "match"), [
    (lambda: cp.check_cp(4096, 3), r"cp=3: 2 x cp = 6 .* must divide seq_len=4096; allowed:"),
    (lambda: cp.check_cp(4098, 4, load_balanced=False), r"cp=4 must divide seq_len=4098"),
    (lambda: cp.check_cp(8192, 16, variant="all-to-all", model="llama3-70b"),
     r"cp=16 must divide key/value heads of llama3-70b .*=8"),
    (lambda: cp.check_cp(8192, 2, variant="zigzag"), r"variant must be one of 'ring'"),
])
def test_bad_cp_names_parameter_value_and_allowed(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_kv_block_and_attention_block_by_hand():
    m = catalog.model("llama3-70b")  # 8 KV heads of 128
    assert cp.kv_block_bytes(m, 131072, 16) == 2 * 131072 / 16 * 8 * 128 * 2
    # causal attention of a whole sequence, forward: 2 s^2 a d (half of 4 s^2 a d) per layer
    s = 131072
    whole = 2 * s * s * 64 * 128
    assert cp.attention_block_flops(m, s, 16) * 16 * 16 == pytest.approx(whole)


def test_ring_attention_hides_transfers_when_blocks_are_long():
    m = catalog.model("llama3-70b")
    ib = AlphaBeta(1e-6, 35e9)
    long_ = cp.ring_attention_time(m, 131072, 8, ib, attention_flops_per_s=400e12)
    short = cp.ring_attention_time(m, 8192, 8, ib, attention_flops_per_s=400e12)
    assert long_["exposed_s"] == 0 and long_["comm_s"] > 0
    assert short["exposed_s"] > 0  # a short block computes faster than its transfer
    # exposure by hand: 7 steps, forward max(0, send - block) and backward twice that
    send = 1e-6 + cp.kv_block_bytes(m, 8192, 8) / 35e9
    block = cp.attention_block_flops(m, 8192, 8) / 400e12
    assert short["exposed_s"] == pytest.approx(7 * 3 * max(0, send - block))


def test_activations_grow_linearly_with_sequence_and_shrink_with_cp():
    m = catalog.model("llama3-405b")
    seqs = np.array([8192, 32768, 131072])
    one = cp.activation_bytes_per_gpu(m, seqs, tp=8)
    assert np.allclose(one / seqs, one[0] / seqs[0])
    assert np.allclose(cp.activation_bytes_per_gpu(m, seqs, tp=8, cp=16), one / 16)
    # equal to memory's per-layer bytes with flash attention at s/cp
    assert cp.activation_bytes_per_gpu(m, 131072, tp=8, cp=16, per_layer=True) == \
        pytest.approx(memory.activation_bytes_per_layer(m, 1, 8192, 8, True, "selective", True))


def test_cp_beats_a_larger_tp_across_nodes_at_long_context():
    """TP16 on 8-GPU nodes sends its all-reduces over InfiniBand; TP8 x CP2 keeps TP on
    NVLink and hides the ring's transfers behind long attention blocks."""
    out = cp.compare_cp_tp("llama3-70b", "H100", [32768, 65536, 131072], base_tp=8, factor=2)
    assert np.all(out["cp_s"] < out["tp_only_s"])
    assert np.allclose(out["cp_act_bytes"], out["tp_only_act_bytes"])
    assert np.all(out["cp_exposed_s"] < 0.01 * out["cp_s"])


def test_ulysses_sends_four_all_to_alls_each_way():
    from scaleout import moe

    m = catalog.model("llama3-70b")
    nvl, ib = AlphaBeta(0.5e-6, 450e9), AlphaBeta(1e-6, 50e9)
    out = cp.ulysses_time(m, 32768, 8, 8, nvl, ib, attention_flops_per_s=400e12)
    size = 32768 / 8 * (8192 + 1024 + 1024 + 8192) * 2
    assert out["comm_s"] == pytest.approx(2 * moe.all_to_all_time(size, 8, 8, nvl, ib))


# --------------------------------------------------------------------- roofline
def test_ridge_points_from_datasheets():
    r = roofline.ridge_points("H100")
    assert r["hbm"] == pytest.approx(989e12 / 3350e9)
    assert r["scale-up"] == pytest.approx(989e12 / 450e9)
    assert r["scale-out"] == pytest.approx(989e12 / 50e9)
    assert roofline.ridge_points("H100", "fp8")["hbm"] == pytest.approx(2 * r["hbm"], rel=1e-3)
    assert "scale-out" not in roofline.ridge_points("V100")
    with pytest.raises(ValueError, match="no FP8 tensor cores"):
        roofline.ridge_points("A100", "fp8")


def test_matmul_intensity_by_hand():
    # square n x n in BF16: 2n^3 / (2 * 3 n^2) = n/3
    assert roofline.matmul_intensity(3000, 3000, 3000) == pytest.approx(1000)
    assert roofline.attainable_flops(10, 1e15, 1e12) == 1e13
    assert roofline.attainable_flops(1e4, 1e15, 1e12) == 1e15


def test_critical_tokens_solve_the_ridge_equation():
    m = catalog.model("llama3-70b")
    crit = roofline.critical_tokens(m, "H100", tp=8, dp=64)
    T = crit["matmuls"]
    assert roofline.matmul_intensity(T, m.hidden, m.ffn / 8) == pytest.approx(
        roofline.ridge_points("H100")["hbm"])
    # data parallelism: 6 N T FLOPs per 2(n-1)/n x 2 N bytes at the network's ridge
    dp = crit["DP all-reduce"]
    assert 6 * dp / (2 * 63 / 64 * 2) == pytest.approx(roofline.ridge_points("H100")
                                                       ["scale-out"])


def test_step_parts_bounds():
    parts = {p.name: p for p in roofline.step_parts("llama3-70b", "H100", seq_len=8192, tp=8,
                                                     dp=64, micro_batches=16)}
    assert parts["matmuls"].bound == "compute" and parts["norms"].bound == "hbm"
    assert parts["optimizer"].bound == "hbm"
    assert parts["DP all-reduce"].channel == "scale-out"
    moe_parts = {p.name: p for p in roofline.step_parts("deepseek-v3", "H800", seq_len=4096,
                                                         ep=64, fmt="fp8")}
    assert moe_parts["EP all-to-all"].bound == "scale-out"  # FP8 doubles the ridge


def test_bound_by_names_the_largest_part():
    name, share, sentence = roofline.bound_by(
        {"forward_s": 1.0, "ep_comm_s": 2.0, "bubble_s": 1.0},
        {"forward_s": "compute", "ep_comm_s": "the InfiniBand all-to-all"})
    assert name == "ep_comm_s" and share == 0.5
    assert sentence == ("bound by the InfiniBand all-to-all (50% of the step), not by compute "
                        "(25%)")
    with pytest.raises(ValueError, match="at least one part"):
        roofline.bound_by({})


def test_fp8_gain_is_bounded_by_the_bf16_part():
    """Amdahl: the attention core grows with the sequence and stays BF16."""
    gains = []
    for s in (4096, 131072):
        t16 = compute.matmul_seconds("llama3-70b", 1, "H100", "megatron-bf16", s)
        t8 = compute.matmul_seconds("llama3-70b", 1, "H100", "fp8-te", s)
        gains.append(t16 / t8)
    assert 1.5 < gains[0] < 2 and gains[1] < gains[0]
