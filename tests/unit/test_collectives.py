"""scaleout.collectives: α-β costs against their closed forms and NCCL-tests' definitions."""

import math

import numpy as np
import pytest
from scaleout import catalog
from scaleout import collectives as C

AB = C.AlphaBeta(latency_s=5e-6, bandwidth_bytes_s=50e9)


@pytest.mark.parametrize("n", [2, 3, 8, 64, 1000])
@pytest.mark.parametrize("size", [8.0, 1e6, 1e9])
def test_ring_all_reduce_exact(n, size):
    """2(n−1)·α + 2(n−1)/n · S/B exactly (Thakur et al. 2005; Patarasuk & Yuan 2009)."""
    want = 2 * (n - 1) * 5e-6 + 2 * (n - 1) / n * size / 50e9
    assert math.isclose(C.ring_all_reduce_time(size, n, 5e-6, 50e9), want, rel_tol=1e-12)


@pytest.mark.parametrize(("op", "factor"), [
    ("all_reduce", lambda n: 2 * (n - 1) / n), ("reduce_scatter", lambda n: (n - 1) / n),
    ("all_gather", lambda n: (n - 1) / n), ("all_to_all", lambda n: (n - 1) / n),
    ("broadcast", lambda n: 1.0), ("reduce", lambda n: 1.0)])
@pytest.mark.parametrize("n", [2, 8, 16, 1024])
def test_busbw_factors_as_nccl_tests_define_them(op, factor, n):
    assert math.isclose(C.busbw_factor(op, n), factor(n))
    assert math.isclose(C.busbw(1e9, 0.01, op, n), 1e9 / 0.01 * factor(n))


@pytest.mark.parametrize("op", C.OPS)
def test_ring_meets_the_bandwidth_lower_bound(op):
    n, S = 16, 1e9
    bw_part = C.collective_time(op, S, n, C.AlphaBeta(0.0, 1.0))
    assert math.isclose(bw_part, C.lower_bound_bytes(op, S, n))


def test_no_algorithm_beats_the_lower_bound():
    n, S, free = 32, 1e9, C.AlphaBeta(0.0, 1.0)
    bound = C.lower_bound_bytes("all_reduce", S, n)
    for algo in ("ring", "tree", "halving_doubling"):
        assert C.collective_time("all_reduce", S, n, free, algo) >= bound - 1e-6
    # in-network reduction is not bound by it: the switch does the adding
    assert C.collective_time("all_reduce", S, n, free, "sharp") == S < bound


def test_tree_latency_is_logarithmic():
    lat_only = C.AlphaBeta(1.0, 1e30)  # no bandwidth term: a latency-only what-if
    assert C.collective_time("all_reduce", 8, 1024, lat_only, "tree") == pytest.approx(20)
    assert C.collective_time("all_reduce", 8, 1024, lat_only, "ring") == pytest.approx(2046)


def test_arrays_of_sizes_in_one_call():
    sizes = np.logspace(0, 10, 11)
    out = C.collective_time("all_reduce", sizes, 8, AB)
    assert out.shape == (11,) and np.all(np.diff(out) > 0)


def test_hierarchical_moves_a_gpus_per_node_fraction_over_the_network():
    nv, ib = catalog.link("NVLink 4"), catalog.link("InfiniBand NDR")
    S, nodes, g = 1e9, 16, 8
    t = C.hierarchical_all_reduce_time(S, nodes, g, nv, ib)
    want = (C.collective_time("reduce_scatter", S, g, nv)
            + C.collective_time("all_reduce", S / g, nodes, ib)
            + C.collective_time("all_gather", S, g, nv))
    assert math.isclose(t, want)
    assert t < C.collective_time("all_reduce", S, nodes * g, ib)


def test_one_gpu_sends_nothing():
    assert C.collective_time("all_reduce", 1e9, 1, AB) == 0.0


def test_link_names_accepted():
    assert C.collective_time("all_reduce", 1e9, 8, "NDR") == C.collective_time(
        "all_reduce", 1e9, 8, catalog.link("InfiniBand NDR"))


def test_catalog_links_are_alpha_beta_links():
    ndr = catalog.link("NDR")
    assert ndr.bandwidth_bytes_s == 50e9 and ndr.latency_s == 1e-6
    assert catalog.link("TCP").cpu_ghz_per_gbps > 0 and catalog.link("NDR").cpu_ghz_per_gbps == 0
    for link in catalog.links():
        assert link.source.strip()


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: C.collective_time("allreduce", 1, 8, AB), r"op must be one of .*did you mean"),
    (lambda: C.collective_time("all_reduce", -1, 8, AB),
     r"size_bytes must be a finite number >= 0, got -1"),
    (lambda: C.collective_time("all_reduce", 1, 0, AB), r"n must be a whole number >= 1, got 0"),
    (lambda: C.collective_time("all_to_all", 1, 8, AB, "tree"), r"has no 'tree' algorithm"),
    (lambda: C.collective_time("all_gather", 1, 1, AB, "tree"), r"has no 'tree' algorithm"),
    (lambda: C.collective_time("all_reduce", 1, 8, 42), r"link must be a catalog link name"),
    (lambda: C.collective_time("all_reduce", 1, 8, "NRD"), r"link 'NRD' is not in the catalog"),
    (lambda: C.AlphaBeta(1e-6, 0), r"bandwidth_bytes_s must be a finite number > 0, got 0"),
    (lambda: catalog.link("NVLink 9"), r"link 'NVLink 9' is not in the catalog; did you mean"),
])
def test_bad_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()



def test_crossovers_of_other_algorithms_by_hand():
    """α = 1 µs, B = 50 GB/s, n = 64. A double binary tree's all-reduce takes 12 steps and
    sends 2S: latency and bandwidth terms meet at S* = 12αB/2 = 300 kB. Tree against ring:
    12α + 2S/B = 126α + (126/64)S/B at S = (126 - 12)·αB / (2 - 126/64) = 182.4 MB. SHARP
    (2 steps, S) beats the ring at every size: no crossover."""
    ab = C.AlphaBeta(1e-6, 50e9)
    assert C.crossover_bytes("all_reduce", 64, ab, "tree") == pytest.approx(3e5, rel=1e-12)
    assert C.algorithm_crossover_bytes("all_reduce", 64, ab, "tree", "ring") == \
        pytest.approx(1.824e8, rel=1e-12)
    assert math.isnan(C.algorithm_crossover_bytes("all_reduce", 64, ab, "ring", "sharp"))
    assert C.algorithm_crossover_bytes("all_reduce", 64, ab, "ring", "tree") == \
        pytest.approx(1.824e8, rel=1e-12)  # the same crossing, either way round
    assert C.cost_terms("all_reduce", 3.0, 8) == (14, 5.25)  # a ring unless told otherwise


def test_nccl_tests_prediction_of_a_tree_and_a_network_label():
    """A tree all-reduce of 1 GB on 64 GPUs at α = 1 µs, B = 50 GB/s: 12 µs + 2 GB / B =
    40.012 ms, algbw = S/t, busbw = algbw · 2(n-1)/n (NCCL-tests PERFORMANCE.md)."""
    ab = C.AlphaBeta(1e-6, 50e9)
    pred = C.nccl_tests_prediction("all_reduce", 1e9, 64, ab, "tree")
    t = 12e-6 + 2e9 / 50e9
    assert pred["time_us"] == pytest.approx(t * 1e6, rel=1e-12)
    assert pred["algbw_gbytes_s"] == pytest.approx(1e9 / t / 1e9, rel=1e-12)
    assert pred["busbw_gbytes_s"] == pytest.approx(1 / t * 126 / 64, rel=1e-12)
    net = C.NodeNetwork(intra=C.AlphaBeta(2.5e-6, 42e9), inter=C.AlphaBeta(5e-6, 25e9))
    assert net.label == ("8 × α=2.5 µs, B=42 GB/s per node, α=5 µs, B=25 GB/s between nodes "
                         "(hierarchical)")


def test_a_tree_between_nodes_by_hand():
    """2 nodes of 8 GPUs, NVLink-like inside (1 µs, 400 GB/s), a network port per GPU between
    them (5 µs, 50 GB/s), 1 GB all-reduced with a double binary tree across nodes.
    Flat over all 16 GPUs: 2 log2(16) = 8 steps and 2S on the network: 8 x 5 µs + 2 GB/B.
    Hierarchical: a ring reduce-scatter in the node (7 steps, 7/8 S), a tree all-reduce of S/8
    between the 2 nodes (2 steps, 2 S/8), a ring all-gather in the node (as the first)."""
    intra, inter = C.AlphaBeta(1e-6, 400e9), C.AlphaBeta(5e-6, 50e9)
    flat = C.NodeNetwork(intra, inter, 8, hierarchical=False, inter_algorithm="tree")
    assert flat.time("all_reduce", 1e9, 16) == pytest.approx(8 * 5e-6 + 2e9 / 50e9, rel=1e-12)
    tiered = C.NodeNetwork(intra, inter, 8, inter_algorithm="tree")
    ring_half = 7e-6 + 7 / 8 * 1e9 / 400e9
    tree_across = 2 * 5e-6 + 2 * 1.25e8 / 50e9
    assert tiered.time("all_reduce", 1e9, 16) == pytest.approx(2 * ring_half + tree_across,
                                                              rel=1e-12)


def test_schedules_name_their_algorithm_and_phases_and_count_whole_chunks():
    """Rabenseifner on 8 GPUs: log2 8 = 3 halving steps of reduce-scatter, then 3 doubling
    steps of all-gather; chunk counts are whole numbers."""
    s = C.halving_doubling_schedule(8)
    assert s.algorithm == "halving_doubling"
    assert s.phase == ("reduce-scatter",) * 3 + ("all-gather",) * 3
    assert s.contributors.dtype.kind == s.chunks_sent().dtype.kind == "i"


def _hand_costs(n: int) -> dict[tuple[str, str], tuple[int, float]]:
    """(latency steps, bytes each GPU sends per byte of S) from the papers, n > 1:
    rings (Patarasuk & Yuan 2009; a pipelined chain for broadcast and reduce), NCCL's double
    binary tree, Thakur et al. 2005 Sec. 4 (recursive halving and doubling, binomial-tree
    broadcast and reduce: lg steps of S each) and SHARP (Graham et al. 2016: S up, S down)."""
    lg, f = math.ceil(math.log2(n)), (n - 1) / n
    return {
        ("all_reduce", "ring"): (2 * (n - 1), 2 * f), ("reduce_scatter", "ring"): (n - 1, f),
        ("all_gather", "ring"): (n - 1, f), ("all_to_all", "ring"): (n - 1, f),
        ("broadcast", "ring"): (n - 1, 1.0), ("reduce", "ring"): (n - 1, 1.0),
        ("all_reduce", "tree"): (2 * lg, 2.0), ("broadcast", "tree"): (lg, 1.0),
        ("reduce", "tree"): (lg, 1.0),
        ("all_reduce", "halving_doubling"): (2 * lg, 2 * f),
        ("reduce_scatter", "halving_doubling"): (lg, f),
        ("all_gather", "halving_doubling"): (lg, f),
        ("broadcast", "halving_doubling"): (lg, float(lg)),
        ("reduce", "halving_doubling"): (lg, float(lg)),
        ("all_reduce", "sharp"): (2, 1.0), ("reduce", "sharp"): (1, 1.0),
        ("broadcast", "sharp"): (1, 1.0),
    }


@pytest.mark.parametrize("n", [2, 6, 8, 1000])
def test_every_cost_term_against_the_papers(n):
    for (op, algorithm), (steps, per_byte) in _hand_costs(n).items():
        got = C.cost_terms(op, 3.0, n, algorithm)
        assert got[0] == steps and got[1] == pytest.approx(3.0 * per_byte, rel=1e-15), \
            (op, algorithm)
        assert C.cost_terms(op, 3.0, 1, algorithm) == (0, 0.0)  # one GPU sends nothing
    for algorithm in ("tree", "halving_doubling", "sharp"):  # and nothing else is modelled
        for op in set(C.OPS) - {o for o, a in _hand_costs(n) if a == algorithm}:
            with pytest.raises(ValueError, match=f"op='{op}' has no '{algorithm}' algorithm"):
                C.cost_terms(op, 3.0, n, algorithm)


def test_hierarchical_all_reduce_with_two_gpus_per_node_by_hand():
    """4 nodes of 2 GPUs: reduce-scatter in the node (1 step, S/2), a ring all-reduce of S/2
    across the 4 nodes (6 steps, 2·3/4·S/2), all-gather in the node (1 step, S/2)."""
    intra, inter = C.AlphaBeta(1e-6, 400e9), C.AlphaBeta(5e-6, 50e9)
    s = 1e9
    half = 1e-6 + s / 2 / 400e9
    across = 6 * 5e-6 + 2 * 3 / 4 * (s / 2) / 50e9
    t = C.hierarchical_all_reduce_time(s, 4, 2, intra, inter)
    assert type(t) is float and t == pytest.approx(2 * half + across, rel=1e-12)
    assert type(C.collective_time("all_reduce", s, 8, intra)) is float


def test_nccl_tests_prediction_on_one_gpu_moves_nothing_in_no_time():
    pred = C.nccl_tests_prediction("all_reduce", [0.0, 1e6], 1, C.AlphaBeta(1e-6, 50e9))
    for column in ("time_us", "algbw_gbytes_s", "busbw_gbytes_s"):
        assert list(pred[column]) == [0.0, 0.0], column


def test_reduce_scatter_over_nodes_and_the_default_network_by_hand():
    """4 nodes of 2 GPUs, halving-doubling between nodes: a ring reduce-scatter in the node
    (1 step, S/2 at 400 GB/s), then a reduce-scatter of S/2 across the 4 nodes (2 steps,
    3/4 of it at 50 GB/s): 11 µs + 8.75 ms for 1 GB. A number in, a float out; arrays
    element-wise. The default network names its catalog links; a misspelt one is refused."""
    net = C.NodeNetwork(C.AlphaBeta(1e-6, 400e9), C.AlphaBeta(5e-6, 50e9), 2,
                        inter_algorithm="halving_doubling")
    t = net.time("reduce_scatter", 1e9, 8)
    assert type(t) is float and t == pytest.approx(1.1e-5 + 8.75e-3, rel=1e-12)
    np.testing.assert_allclose(net.time("reduce_scatter", [1e9, 2e9], 8),
                               [1.1e-5 + 8.75e-3, 1.1e-5 + 17.5e-3], rtol=1e-12)
    assert C.NodeNetwork().label == ("8 × NVLink 4 per node, InfiniBand NDR between nodes "
                                     "(hierarchical)")
    with pytest.raises(ValueError, match=r"^intra: link 'NVLnk 4' is not in the catalog"):
        C.NodeNetwork(intra="NVLnk 4")
