"""scaleout.data_parallel: gradient all-reduce, buckets and overlap, weak scaling."""

import math

import numpy as np
import pytest
from scaleout import catalog, collectives, compute, memory, units
from scaleout import collectives as C
from scaleout import data_parallel as D
from scaleout.collectives import AlphaBeta

NV, IB = catalog.link("NVLink 4"), catalog.link("InfiniBand NDR")
ALPHA = AlphaBeta(latency_s=10e-6, bandwidth_bytes_s=10e9)


def ring_all_reduce(S, n, link):
    """2(n−1)·α + 2(n−1)/n · S/B, written out (Patarasuk & Yuan 2009)."""
    return 2 * (n - 1) * link.latency_s + 2 * (n - 1) / n * S / link.bandwidth_bytes_s


# --------------------------------------------------------------------------- gradients
def test_gradient_bytes_are_params_times_the_recipes_gradient_bytes():
    assert D.gradient_bytes(175e9) == 350e9  # fp16 gradients of GPT-3: 2 bytes each
    assert D.gradient_bytes(175e9, "megatron-bf16") == 700e9  # fp32 gradients
    assert D.gradient_bytes(1e9, memory.RECIPES["fp32-adam"]) == 4e9
    np.testing.assert_allclose(D.gradient_bytes(np.array([1e9, 2e9])), [2e9, 4e9])


def test_gradients_per_model_parallel_rank():
    """With TP and PP a replica's rank all-reduces only its own shard of the gradients."""
    step = D.dp_step("gpt3-175b", 16, tp=8, pp=8)
    assert step.grad_bytes == 2 * memory.stage_params("gpt3-175b", 8, 8)


# --------------------------------------------------------------------------- fabric
@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_reduce_inside_a_node_is_a_ring_over_nvlink(n):
    S = 3e9
    assert math.isclose(D.gradient_all_reduce_time(S, n), ring_all_reduce(S, n, NV))


def test_all_reduce_across_nodes_is_hierarchical_or_a_flat_ring():
    S, n = 3e9, 64
    hier = D.gradient_all_reduce_time(S, n, C.NodeNetwork())
    assert math.isclose(hier, collectives.hierarchical_all_reduce_time(S, 8, 8, NV, IB))
    flat = D.gradient_all_reduce_time(S, n, C.NodeNetwork(hierarchical=False))
    assert math.isclose(flat, ring_all_reduce(S, n, IB))
    assert hier < flat  # the network carries 1/8 of the data per GPU


@pytest.mark.parametrize("fabric", [C.NodeNetwork(), C.NodeNetwork(hierarchical=False),
                                    C.NodeNetwork(gpus_per_node=1), C.NodeNetwork(gpus_per_node=4)])
@pytest.mark.parametrize("n", [4, 8, 64, 512])
def test_reduce_scatter_plus_all_gather_is_an_all_reduce(fabric, n):
    """A ring all-reduce is a reduce-scatter then an all-gather (Thakur et al. 2005, Sec. 4.4),
    on one link and on the two-level fabric alike."""
    S = 1e9
    rs_ag = fabric.time("reduce_scatter", S, n) + fabric.time("all_gather", S, n)
    assert math.isclose(rs_ag, fabric.time("all_reduce", S, n), rel_tol=1e-12)


def test_fabric_accepts_catalog_names_links_and_alpha_beta():
    f = C.NodeNetwork(intra=NV, inter=ALPHA, gpus_per_node=2)
    assert f.intra is NV and f.inter is ALPHA
    assert "NVLink 4" in f.label and "10 GB/s" in f.label
    assert not f.crosses_network(2) and f.crosses_network(4)
    assert C.NodeNetwork(inter="NDR").inter == IB


# --------------------------------------------------------------------------- buckets
def test_bucket_count():
    assert D.n_buckets(100e6, 25e6) == 4
    assert D.n_buckets(101e6, 25e6) == 5
    assert D.n_buckets(10e6, 25e6) == 1  # a bucket larger than the gradients holds them all
    np.testing.assert_array_equal(D.n_buckets(100e6, np.array([1e6, 30e6, 1e9])), [100, 4, 1])
    assert D.DDP_BUCKET_BYTES == 25 * 2**20  # bucket_cap_mb=25 is MiB


def test_each_bucket_pays_the_latency_again():
    """k buckets: k·2(n−1)·α of latency plus the same 2(n−1)/n·G/B of bandwidth."""
    G, n = 1e9, 16
    f = C.NodeNetwork(intra=ALPHA, gpus_per_node=16)
    bw = 2 * (n - 1) / n * G / ALPHA.bandwidth_bytes_s
    for B, k in [(1e9, 1), (1e8, 10), (1e6, 1000)]:
        total = D.bucketed_all_reduce_time(G, B, n, f)
        assert math.isclose(total, k * 2 * (n - 1) * ALPHA.latency_s + bw, rel_tol=1e-9)
    sizes = np.array([1e5, 1e6, 1e7, 1e8, 1e9])
    assert np.all(np.diff(D.bucketed_all_reduce_time(G, sizes, n, f)) < 0)


def test_one_bucket_is_one_all_reduce():
    G = 3e9
    assert math.isclose(D.bucketed_all_reduce_time(G, 2 * G, 64), D.gradient_all_reduce_time(G, 64))


GRID = [(B, n, back, overlap)
        for B in (1e6, 25 * 2**20, 3e8, 1e10)
        for n in (2, 64, 1024)
        for back in (0.0, 1e-3, 0.07, 2.0)
        for overlap in (True, False)]


@pytest.mark.parametrize(("bucket", "n", "backward", "overlap"), GRID)
def test_closed_form_equals_the_bucket_by_bucket_schedule(bucket, n, backward, overlap):
    G, f = 3.1e9, C.NodeNetwork()
    timeline = D.bucket_timeline(G, bucket, backward, n, f, overlap)
    exposed = D.exposed_comm_time(G, bucket, backward, n, f, overlap)
    assert math.isclose(timeline.exposed_s, exposed, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(timeline.comm_s, D.bucketed_all_reduce_time(G, bucket, n, f))
    assert np.all(timeline.start_s >= timeline.ready_s - 1e-15)
    assert np.all(timeline.start_s[1:] >= timeline.end_s[:-1] - 1e-15)  # one stream


def test_exposed_when_communication_is_the_bottleneck():
    """max(0, comm of the first k−1 buckets − backward left after the first bucket) + last."""
    G, B, n, back = 1e9, 1e8, 1024, 0.05
    f = C.NodeNetwork(inter="TCP/IP 100GbE")
    full, last = f.time("all_reduce", B, n), f.time("all_reduce", G - 9 * B, n)
    assert full > back * B / G  # each bucket takes longer than the next one takes to appear
    want = max(0.0, 9 * full - (back - back * B / G)) + last
    assert math.isclose(D.exposed_comm_time(G, B, back, n, f), want)


def test_exposed_when_compute_is_the_bottleneck_is_the_last_bucket():
    G, B, n, back = 1e9, 1e8, 64, 1.0
    f = C.NodeNetwork()
    assert f.time("all_reduce", B, n) < back * B / G
    assert math.isclose(D.exposed_comm_time(G, B, back, n, f), f.time("all_reduce", B, n))


def test_without_overlap_all_communication_is_exposed():
    G, B = 1e9, 1e7
    assert D.exposed_comm_time(G, B, 10.0, 64, overlap=False) == pytest.approx(
        D.bucketed_all_reduce_time(G, B, 64))


def test_bucket_size_has_a_sweet_spot():
    """Li et al. 2020, Sec. 3.2.3: tiny buckets pay α many times, one huge bucket cannot overlap."""
    G, back, n = 3e9, 0.2, 256
    f = C.NodeNetwork(inter="RoCE v2 400GbE")
    sizes = np.array([64 * 2**10, 25 * 2**20, G])
    tiny, ddp, whole = D.exposed_comm_time(G, sizes, back, n, f)
    assert ddp < tiny and ddp < whole
    assert whole == pytest.approx(D.gradient_all_reduce_time(G, n, f))


# --------------------------------------------------------------------------- steps, scaling
def test_compute_time_is_flops_per_token_over_the_achieved_rate():
    t = D.compute_time("gpt2-1.5b", 8 * 1024, 400)
    assert math.isclose(t, compute.flops_per_token("gpt2-1.5b") * 8 * 1024 / 400e12)
    assert math.isclose(D.compute_time("gpt2-1.5b", 8192, 400, model_parallel=4), t / 4)


def test_one_gpu_has_no_communication():
    step = D.dp_step("gpt2-1.5b", 1)
    assert step.comm_s == 0 and step.exposed_comm_s == 0 and step.efficiency == 1
    assert math.isclose(step.backward_s, step.compute_s * 2 / 3)


def test_weak_scaling_matches_dp_step():
    ns = [1, 8, 64, 1024]
    kw = {"fabric": C.NodeNetwork(inter="RoCE v2 400GbE"), "batch_per_gpu": 4, "overlap": False}
    curve = D.weak_scaling("megatron-1.7b", ns, **kw)
    for i, n in enumerate(ns):
        step = D.dp_step("megatron-1.7b", n, **kw)
        assert curve["efficiency"][i] == pytest.approx(step.efficiency)
        assert curve["effective_gpus"][i] == pytest.approx(n * step.efficiency)
        assert curve["step_s"][i] == pytest.approx(step.step_s)


def test_a_thousand_gpus_as_slow_as_a_few_dozen_on_tcp():
    """Flat ring over kernel TCP, no overlap: every bucket pays 2(n−1)·α, so the throughput
    can never exceed compute / (k · 2α) GPUs' worth, however many GPUs are added."""
    tcp = catalog.link("TCP/IP 100GbE")
    kw = {"batch_per_gpu": 4, "overlap": False,
          "fabric": C.NodeNetwork(inter=tcp, gpus_per_node=1, hierarchical=False)}
    step = D.dp_step("gpt2-1.5b", 1024, **kw)
    ceiling = step.compute_s / (step.n_buckets * 2 * tcp.latency_s) * 1024 / 1023
    assert step.effective_gpus < ceiling
    assert step.effective_gpus < 30  # 1024 GPUs deliver the throughput of fewer than 30
    fast = D.dp_step("gpt2-1.5b", 1024, batch_per_gpu=4, fabric=C.NodeNetwork())
    assert fast.effective_gpus > 0.95 * 1024  # NVLink + InfiniBand, hierarchical, overlapped


def test_efficiency_falls_with_gpus_and_rises_with_link_speed():
    ns = [2**k for k in range(0, 15, 2)]
    tcp = D.weak_scaling("gpt2-1.5b", ns, fabric=C.NodeNetwork(inter="TCP/IP 100GbE"))
    ib = D.weak_scaling("gpt2-1.5b", ns, fabric=C.NodeNetwork(inter="InfiniBand NDR"))
    assert np.all(np.diff(tcp["efficiency"]) <= 1e-12)
    assert np.all(ib["efficiency"] >= tcp["efficiency"] - 1e-12)


def test_data_parallelism_alone_needs_the_whole_model_state_on_every_gpu():
    """ZeRO Sec. 3.1: 16 bytes per parameter per GPU, whatever the DP size; an 8B model's 128 GB
    of training state does not fit an 80 GB GPU however many replicas there are."""
    for dp in (1, 64, 4096):
        mem = memory.training_memory("llama3-8b", "H100", dp=dp, zero_stage=0,
                                     recompute="full")
        assert mem.weights + mem.grads + mem.optimizer == 16 * memory.param_count("llama3-8b")
        assert not mem.fits
    assert units.bytes_to_gb(16 * memory.param_count("gpt2-1.5b")) < 80
    assert memory.training_memory("gpt2-1.5b", "H100", dp=1024, recompute="full").fits


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: D.gradient_bytes(0), r"params must be a finite number > 0, got 0"),
    (lambda: D.gradient_bytes(1e9, "adam"), r"recipe must be one of .*did you mean"),
    (lambda: D.n_buckets(1e9, 0), r"bucket_bytes must be a finite number > 0, got 0"),
    (lambda: D.n_buckets(-1, 1e6), r"grad_bytes must be a finite number > 0"),
    (lambda: D.exposed_comm_time(1e9, 1e6, -1, 8), r"backward_s must be a finite number >= 0"),
    (lambda: D.bucket_timeline(1e9, 1e6, 0.1, 0), r"n_gpus must be a whole number >= 1, got 0"),
    (lambda: D.dp_step("gpt2-1.5b", 0), r"n_gpus must be a whole number >= 1, got 0"),
    (lambda: D.dp_step("gpt2-1.5b", 8, batch_per_gpu=0), r"batch_per_gpu must be a whole"),
    (lambda: D.dp_step("gpt-9", 8), r"model 'gpt-9' is not in the catalog"),
    (lambda: D.compute_time("gpt2-1.5b", 1024, 0), r"achieved_tflops must be a finite number > 0"),
    (lambda: C.NodeNetwork(gpus_per_node=0), r"gpus_per_node must be a whole number >= 1, got 0"),
    (lambda: C.NodeNetwork(inter="NRD"), r"link 'NRD' is not in the catalog"),
    (lambda: C.NodeNetwork(inter=42), r"inter must be a catalog link name, a catalog Link or an "
                                 r"AlphaBeta, got 42"),
    (lambda: C.NodeNetwork(inter_algorithm="mesh"), r"inter_algorithm must be one of"),
    (lambda: C.NodeNetwork().time("broadcast", 1e6, 8), r"op must be one of 'all_reduce'"),
    (lambda: C.NodeNetwork().time("all_reduce", 1e6, 12),
     r"gpus_per_node=8 must divide n \(GPUs in the group\)=12"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
