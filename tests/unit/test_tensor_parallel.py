"""scaleout.tensor_parallel: the column/row split, Megatron's traffic closed form, layer times."""

import math

import numpy as np
import pytest
from scaleout import catalog, collectives, compute, memory
from scaleout import tensor_parallel as T
from scaleout.collectives import AlphaBeta, NodeNetwork

RNG = np.random.default_rng(2019)
X = RNG.normal(size=(6, 16))  # 6 tokens, h = 16
A = RNG.normal(size=(16, 64)) / 4  # h x 4h
B = RNG.normal(size=(64, 16)) / 8  # 4h x h


# --------------------------------------------------------------------------- the split
@pytest.mark.parametrize("t", [1, 2, 4, 8, 16, 64])
def test_column_split_gives_column_blocks_of_the_product(t):
    parts = T.split_columns(A, t)
    assert len(parts) == t and all(p.shape == (16, 64 // t) for p in parts)
    np.testing.assert_allclose(np.hstack([X @ p for p in parts]), X @ A)


@pytest.mark.parametrize("t", [1, 2, 4, 8, 16, 64])
def test_row_split_gives_partial_sums_of_the_product(t):
    y = X @ A
    parts = T.split_rows(B, t)
    y_parts = np.split(y, t, axis=1)
    np.testing.assert_allclose(sum(yi @ bi for yi, bi in zip(y_parts, parts, strict=True)), y @ B)


@pytest.mark.parametrize("t", [1, 2, 4, 8, 16])
def test_megatron_mlp_split_reproduces_the_one_gpu_mlp(t):
    dz = RNG.normal(size=(6, 16))
    r = T.tensor_parallel_mlp(X, A, B, t, grad_output=dz)
    assert r.matches and r.all_reduces == 2 and len(r.partial_outputs) == t
    np.testing.assert_allclose(r.output, T.gelu(X @ A) @ B)
    np.testing.assert_allclose(r.input_grad, r.reference_input_grad)
    if t > 1:  # no single GPU has the answer before the all-reduce
        assert not any(np.allclose(p, r.reference) for p in r.partial_outputs)
        assert not any(np.allclose(p, r.reference_input_grad) for p in r.partial_input_grads)


def test_input_gradient_matches_finite_differences():
    """The backward half (f's all-reduce) is the true gradient of sum(dZ ⊙ MLP(X))."""
    dz = RNG.normal(size=(6, 16))
    r = T.tensor_parallel_mlp(X, A, B, 4, grad_output=dz)
    eps, i, j = 1e-6, 2, 5
    xp, xm = X.copy(), X.copy()
    xp[i, j] += eps
    xm[i, j] -= eps
    numeric = (np.sum(dz * (T.gelu(xp @ A) @ B)) - np.sum(dz * (T.gelu(xm @ A) @ B))) / (2 * eps)
    assert math.isclose(r.input_grad[i, j], numeric, rel_tol=1e-6)


def test_gelu_and_its_derivative():
    x = np.linspace(-4, 4, 41)
    eps = 1e-6
    numeric = (T.gelu(x + eps) - T.gelu(x - eps)) / (2 * eps)
    np.testing.assert_allclose(T.gelu_derivative(x), numeric, atol=1e-8)
    assert T.gelu(0.0) == 0 and math.isclose(T.gelu(10.0), 10.0)


# --------------------------------------------------------------------------- traffic
@pytest.mark.parametrize("t", [1, 2, 4, 8, 16, 32, 64])
def test_traffic_is_four_ring_all_reduces_and_equals_the_closed_form(t):
    """Narayanan et al. 2021, Sec. 3.2: 8bsh(t−1)/t elements per layer per device per
    micro-batch. Derived here from the ring's bytes per GPU (a link of 1 byte/s and no latency
    turns seconds into bytes): four all-reduces of the bsh tensor."""
    b, s, h = 2, 2048, 12288
    per_all_reduce = collectives.collective_time("all_reduce", b * s * h, t, AlphaBeta(0.0, 1.0))
    derived = T.ALL_REDUCES_PER_LAYER * per_all_reduce
    assert math.isclose(T.tp_traffic_elements_per_layer(b, s, h, t), derived, abs_tol=1e-6)
    assert math.isclose(T.tp_traffic_elements_per_layer(b, s, h, t), 8 * b * s * h * (t - 1) / t)
    # in bytes, with 16-bit activations: 16bsh(t−1)/t
    assert math.isclose(T.tp_traffic_bytes_per_layer(b, s, h, t), 16 * b * s * h * (t - 1) / t)


def test_traffic_is_array_friendly_and_bounded_by_8bsh():
    ts = np.array([1, 2, 4, 8, 64, 4096])
    out = T.tp_traffic_elements_per_layer(1, 2048, 12288, ts)
    assert out[0] == 0 and np.all(np.diff(out) > 0) and np.all(out < 8 * 2048 * 12288)


def test_layer_time_inside_a_node_is_four_nvlink_ring_all_reduces():
    nv = catalog.link("NVLink 4")
    layer = T.tp_layer("gpt3-175b", 8, micro_batch=1, seq_len=2048, fabric=NodeNetwork())
    S = 2 * 2048 * 12288
    want = 4 * (2 * 7 * nv.latency_s + 2 * 7 / 8 * S / nv.bandwidth_bytes_s)
    assert math.isclose(layer.comm_s, want)
    assert not layer.crosses_network


@pytest.mark.parametrize("t", [2, 8, 16, 64])
def test_sequence_parallelism_moves_the_same_bytes_in_the_same_time(t):
    """Korthikanti et al. 2022, Sec. 4.2.2: reduce-scatter + all-gather replace each all-reduce."""
    plain = T.tp_layer("gpt3-175b", t)
    sp = T.tp_layer("gpt3-175b", t, sp=True)
    assert sp.traffic_bytes == plain.traffic_bytes
    assert math.isclose(sp.comm_s, plain.comm_s, rel_tol=1e-12)


def test_sequence_parallelism_splits_the_activations_tp_leaves_whole():
    """Korthikanti et al. Table 2: sbh(10 + 24/t) -> 34 sbh/t with selective recompute."""
    s, b, h, t = 2048, 1, 12288, 8
    tp = memory.activation_bytes_per_layer("gpt3-175b", b, s, t, sp=False, recompute="selective")
    sp = memory.activation_bytes_per_layer("gpt3-175b", b, s, t, sp=True, recompute="selective")
    assert math.isclose(tp, s * b * h * (10 + 24 / t)) and math.isclose(sp, 34 * s * b * h / t)


# --------------------------------------------------------------------------- compute
@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-70b", "gpt2-1.5b"])
def test_layer_flops_add_up_to_flops_per_token(name):
    """l layers plus 6N for the parameters outside the layers = PaLM's 6N + 12lhs per token."""
    m = catalog.model(name)
    outside = memory.param_count(m) - memory.param_breakdown(m)["layers"]
    total = m.n_layers * T.layer_flops(m, 1) + 6 * outside * m.seq_len
    assert math.isclose(total, compute.flops_per_token(m) * m.seq_len, rel_tol=1e-12)


def test_layer_flops_match_korthikanti_model_flops_per_layer():
    """72 b s h² (1 + s/(6h)) per GPT layer without recomputation (Korthikanti et al. 2022,
    App. A, one layer's share; biases add 13h per 12h²)."""
    b, s, h = 4, 2048, 12288
    assert math.isclose(T.layer_flops("gpt3-175b", b, s), 72 * b * s * h**2 * (1 + s / (6 * h)),
                        rel_tol=1e-3)


def test_communication_share_grows_with_t_and_jumps_off_the_node():
    sweep = T.tp_sweep("gpt3-175b", [1, 2, 4, 8, 16, 32, 64])
    frac = sweep["comm_fraction"]
    assert frac[0] == 0 and np.all(np.diff(frac) > 0)
    np.testing.assert_array_equal(sweep["crosses_network"], [False] * 4 + [True] * 3)
    # the same t over InfiniBand instead of NVLink: a far larger share
    ib = T.tp_layer("gpt3-175b", 8, fabric=NodeNetwork(intra="InfiniBand NDR", gpus_per_node=8))
    assert ib.comm_fraction > 3 * T.tp_layer("gpt3-175b", 8).comm_fraction
    # compute per GPU falls as 1/t
    np.testing.assert_allclose(sweep["compute_s"] * sweep["t"], sweep["compute_s"][0])


def test_a_bigger_nvlink_domain_keeps_tp_on_nvlink():
    nvl72 = NodeNetwork(intra="NVLink 5", gpus_per_node=72)
    assert not T.tp_layer("gpt3-175b", 64, fabric=nvl72).crosses_network
    assert T.tp_layer("gpt3-175b", 64, fabric=nvl72).comm_s < T.tp_layer("gpt3-175b", 64).comm_s


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: T.split_columns(A, 3), r"t=3 must divide columns=64"),
    (lambda: T.split_rows(B, 0), r"t must be a whole number >= 1, got 0"),
    (lambda: T.split_columns(np.ones(4), 2), r"w must be a 2-D matrix, got shape \(4,\)"),
    (lambda: T.tensor_parallel_mlp(X, B, A, 2), r"shapes do not chain"),
    (lambda: T.tp_traffic_elements_per_layer(1, 2048, 4096, 0), r"t must be a whole number >= 1"),
    (lambda: T.tp_traffic_elements_per_layer(0, 2048, 4096, 2), r"micro_batch must be a whole"),
    (lambda: T.tp_traffic_bytes_per_layer(1, 2048, 4096, 2, 0), r"bytes_per_element must be"),
    (lambda: T.tp_layer("gpt3-175b", 0), r"t must be a whole number >= 1, got 0"),
    (lambda: T.tp_layer("gpt3-175b", 8, achieved_tflops=-1), r"achieved_tflops must be"),
    (lambda: T.layer_flops("gpt3-175b", 1, 0), r"seq_len must be a whole number >= 1, got 0"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_split_checks_a_broadcast_value_once_and_still_refuses_nan():
    """The diagrams split an h x 4h view of one zero for its block shapes alone (12288 x 49152
    at GPT-3's width): the value is checked once, and NaN in such a view or in one cell of a
    plain matrix is still refused."""
    blocks = T.split_columns(np.broadcast_to(0.0, (12288, 49152)), 8)
    assert [b.shape for b in blocks] == [(12288, 6144)] * 8
    for bad in (np.broadcast_to(np.nan, (4, 8)), np.where(np.eye(4, 8) > 0, np.inf, 1.0)):
        with pytest.raises(ValueError, match="finite"):
            T.split_columns(bad, 2)
