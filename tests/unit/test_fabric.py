"""Clos fabrics: closed forms against the published ones and against the wired graph."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scaleout import catalog, collectives, fabric

# (radix, tiers, oversubscription) that the graph is built for; k <= 16 keeps it fast
GRAPH_CASES = [(k, t, 1) for k in (2, 4, 6, 8, 12, 16) for t in (1, 2, 3)] + [
    (8, 2, 3), (8, 3, 3), (8, 3, 7), (12, 2, 2), (12, 3, 2), (16, 2, 3), (16, 3, 3), (6, 3, 2),
]


# ------------------------------------------------------------------ closed forms
def test_max_endpoints_published_figures() -> None:
    assert fabric.max_endpoints(64, 1) == 64
    assert fabric.max_endpoints(64, 2) == 2_048
    assert fabric.max_endpoints(64, 3) == 65_536
    assert fabric.max_endpoints(512, 2) == 131_072  # radix 512: two tiers reach ~131k


@pytest.mark.parametrize("k", [2, 4, 8, 16, 32, 48, 64, 128, 256, 512])
def test_k_squared_over_two_and_k_cubed_over_four(k: int) -> None:
    assert fabric.max_endpoints(k, 2) == k * k // 2
    assert fabric.max_endpoints(k, 3) == k**3 // 4


def test_max_endpoints_takes_an_array_of_radixes() -> None:
    ks = np.array([16, 64, 512])
    np.testing.assert_array_equal(fabric.max_endpoints(ks, 2), ks**2 // 2)
    np.testing.assert_array_equal(fabric.max_endpoints(ks, 3), ks**3 // 4)


@pytest.mark.parametrize("k", [4, 8, 16, 48, 64])
def test_full_fat_tree_switch_counts_of_al_fares(k: int) -> None:
    """k pods of k/2 edge + k/2 aggregation switches, (k/2)^2 cores: 5k^2/4 in all."""
    d = fabric.size_fabric(k**3 // 4, k, tiers=3)
    assert d.switches_per_tier == {"leaf": k * k // 2, "spine": k * k // 2, "core": (k // 2) ** 2}
    assert d.switches == 5 * k * k // 4 and d.pods == k
    assert d.links_per_tier == {"endpoint-leaf": k**3 // 4, "leaf-spine": k**3 // 4,
                                "spine-core": k**3 // 4}


@pytest.mark.parametrize("k", [4, 16, 64, 512])
def test_full_leaf_spine_counts(k: int) -> None:
    d = fabric.size_fabric(k * k // 2, k, tiers=2)
    assert (d.leaves, d.spines, d.cores) == (k, k // 2, 0)
    assert d.links_per_tier == {"endpoint-leaf": k * k // 2, "leaf-spine": k * k // 2,
                                "spine-core": 0}


def test_oversubscription_splits_the_leaf() -> None:
    assert fabric.leaf_split(64, 1) == (32, 32)
    assert fabric.leaf_split(64, 3) == (48, 16)
    assert fabric.max_endpoints(64, 2, 3) == 64 * 48
    assert fabric.max_endpoints(64, 3, 3) == 64 * 64 * 48 // 2
    d = fabric.size_fabric(3072, 64, 400, oversubscription=3, tiers=2)
    assert (d.leaves, d.spines) == (64, 16)
    assert math.isclose(d.bisection_gbps, 3072 / 2 * 400 / 3)


def test_bisection_is_per_direction_and_bidir_doubles_it() -> None:
    d = fabric.size_fabric(2048, 64, 400)
    assert d.bisection_gbps == 1024 * 400
    assert d.bisection_gbps_bidir == 2 * d.bisection_gbps


def test_fewest_tiers_are_chosen() -> None:
    assert fabric.size_fabric(64, 64).tiers == 1
    assert fabric.size_fabric(65, 64).tiers == 2
    assert fabric.size_fabric(2048, 64).tiers == 2
    assert fabric.size_fabric(2049, 64).tiers == 3
    assert fabric.size_fabric(131_072, 512).tiers == 2


def test_partial_two_tier_uses_fewer_spines_with_parallel_links() -> None:
    d = fabric.size_fabric(100, 64)  # 4 leaves of 32 ports down, 32 up
    assert (d.leaves, d.spines) == (4, 2)  # 4 x 32 uplinks fill two 64-port spines
    assert d.links_leaf_spine == 4 * 32


def test_hops_and_latency() -> None:
    assert [fabric.size_fabric(n, 8).worst_case_switch_hops for n in (8, 32, 128)] == [1, 3, 5]
    d = fabric.size_fabric(2048, 64)
    lengths = {"endpoint-leaf": 3.0, "leaf-spine": 30.0}
    expected_ns = 3 * 500 + 2 * (3 + 30) * fabric.FIBRE_NS_PER_M
    assert math.isclose(d.worst_case_latency_s(500, lengths) * 1e9, expected_ns)


def test_transceivers_and_link_groups() -> None:
    d = fabric.size_fabric(2048, 64, 400)
    assert d.transceivers() == {"endpoint-leaf": 0, "leaf-spine": 4096, "spine-core": 0}
    assert d.transceivers(copper_max_m=0)["endpoint-leaf"] == 2 * 2048
    groups = d.link_groups(endpoint_leaf_m=5)
    assert [(g.name, g.count, g.length_m, g.gbps) for g in groups] == [
        ("endpoint-leaf", 2048, 5, 400), ("leaf-spine", 2048, 30.0, 400)]
    assert sum(g.count for g in groups) == d.links


def test_link_groups_feed_the_optics_bill() -> None:
    optics = pytest.importorskip("scaleout.optics")
    d = fabric.size_fabric(131_072, 512, 400)
    bill = optics.fabric_bill(d.link_groups())
    assert bill.links == d.links


# ------------------------------------------------------------------ planes and rails
def test_multiplane_on_a_fixed_chip_multiplies_two_tier_reach_by_planes_squared() -> None:
    """A 51.2 Tb/s chip with 800G NICs: 1, 2, 4, 8 planes give radix 64P, 2,048 P^2 NICs."""
    for p in (1, 2, 4, 8):
        k = fabric.radix_at(51_200, 800 / p)
        assert k == 64 * p
        assert fabric.max_endpoints(k, 2) == 2_048 * p * p


def test_four_200g_planes_of_radix_512_serve_131072_nics_in_two_tiers() -> None:
    m = fabric.size_multiplane(131_072, 800, 4, switch_gbps=102_400)
    assert m.plane.radix == 512 and m.plane.tiers == 2 and m.plane.port_gbps == 200
    assert m.nic_gbps == 800 and m.endpoints == 131_072
    assert m.switches == 4 * (512 + 256)
    assert m.links_per_tier == {t: 4 * n for t, n in m.plane.links_per_tier.items()}
    assert [g.count for g in m.link_groups()] == [4 * 131_072, 4 * 131_072]
    assert m.bisection_gbps == 4 * m.plane.bisection_gbps
    one_plane = fabric.size_multiplane(131_072, 800, 1, switch_gbps=102_400)
    assert one_plane.plane.radix == 128 and one_plane.plane.tiers == 3


def test_switch_catalog_radixes() -> None:
    assert fabric.switch_chip("Tomahawk 6").radix(200) == 512
    assert fabric.switch_chip("TH5").radix(800) == 64
    assert fabric.switch_chip("Quantum-2").radix(400) == 64
    assert fabric.radix_at(51_200, 100) == 512
    assert all(chip.source for chip in fabric.switch_chips())


def test_switch_radix_at_an_unlisted_speed_by_hand() -> None:
    """A speed the catalog does not list: capacity (the first configuration) over the speed,
    Quantum-X800's 144 x 800G at 400G is 288 ports, Quantum-2's 64 x 400G at 100G is 256."""
    assert fabric.switch_chip("Quantum-X800").radix(400) == 144 * 800 // 400 == 288
    assert fabric.switch_chip("Quantum-2").radix(100) == 64 * 400 // 100 == 256
    assert fabric.switch_chip("Quantum-2").radix(200) == 128  # a listed one


def test_switch_chip_keeps_its_configurations_as_tuples() -> None:
    """A chip built from lists (as TOML gives them) holds tuples (read-only); the two lists
    must match in length and not be empty."""
    import dataclasses
    chip = dataclasses.replace(fabric.switch_chip("Quantum-2"), ports=[64, 128],
                               port_gbps=[400, 200])
    assert chip.ports == (64, 128) and chip.port_gbps == (400, 200)
    assert isinstance(chip.ports, tuple) and isinstance(chip.port_gbps, tuple)
    for ports, speeds in (([], []), ([64], [400, 200])):
        with pytest.raises(ValueError, match="field 'ports' must list one count per entry"):
            dataclasses.replace(chip, ports=ports, port_gbps=speeds)


@pytest.mark.parametrize(("nodes", "gpus", "radix", "r", "groups", "spines"), [
    (40, 8, 64, 1.0, 2, 8),     # d = u = 32: 16 leaves x 32 uplinks over 64-port spines
    (100, 4, 64, 3.0, 3, 4),    # d = 48, u = 16: 12 leaves, 192 uplinks, a divisor of 16 >= 3
    (7, 2, 8, 1.0, 2, 2),       # d = u = 4: groups of 4 and 3 nodes, 16 uplinks on 2 spines
    (1, 8, 16, 1.0, 1, 4),      # d = u = 8: 8 leaves, 64 uplinks on 4 spines of 16 ports
])
def test_rail_layout_by_hand_and_by_pairs(nodes, gpus, radix, r, groups, spines) -> None:
    """Groups of d nodes, one leaf per rail per group, spines the smallest divisor of the
    uplinks per leaf that has room for them (by hand), and the one-hop share counted over
    every pair of GPUs in different nodes: the pairs on the same leaf over all pairs."""
    lay = fabric.rail_layout(nodes, gpus, radix, 800.0, oversubscription=r)
    assert (lay.groups, lay.leaves, lay.spines) == (groups, groups * gpus, spines)
    assert lay.gpus == nodes * gpus and lay.switches == groups * gpus + spines
    assert lay.port_gbps == 800.0 and lay.oversubscription == r and lay.radix == radix
    assert lay.rail_only == fabric.size_multiplane(nodes, 800.0 * gpus, gpus, radix=radix,
                                                   oversubscription=r)
    leaf = {(a, i): lay.leaf_of(a, i) for a in range(nodes) for i in range(gpus)}
    same = total = 0
    for (a, i), (b, j) in itertools.permutations(leaf, 2):
        if a != b:
            total += 1
            same += leaf[a, i] == leaf[b, j]
    assert lay.one_hop_fraction == pytest.approx(same / total if total else 0.0, rel=1e-12)
    d = lay.nodes_per_group
    assert all(leaf[a, i] == a // d * gpus + i for a, i in leaf)
    assert lay.same_rail_one_hop == (groups == 1)


def test_rail_layout_counts() -> None:
    r = fabric.rail_layout(32, 8, 64)  # one scalable unit: 32 nodes, 8 rails
    assert (r.groups, r.leaves, r.spines) == (1, 8, 4)
    assert r.same_rail_one_hop and math.isclose(r.one_hop_fraction, 31 / (31 * 8))
    assert r.rail_only.switches == 8  # each rail one switch, no spines
    r2 = fabric.rail_layout(64, 8, 64)
    assert (r2.groups, r2.leaves) == (2, 16) and not r2.same_rail_one_hop
    with pytest.raises(ValueError, match="rail-optimised two-tier fabric serves at most 256"):
        fabric.rail_layout(300, 8, 64)


# ------------------------------------------------------------------ the built graph
def _cases_with_sizes():
    for k, t, r in GRAPH_CASES:
        top = fabric.max_endpoints(k, t, r)
        for n in sorted({1, 2, max(1, top // 3), top // 2 + 1, top - 1, top}):
            yield pytest.param(k, t, r, n, id=f"k{k}-t{t}-r{r}-n{n}")


@pytest.mark.parametrize(("k", "t", "r", "n"), list(_cases_with_sizes()))
def test_closed_forms_match_the_built_graph(k: int, t: int, r: float, n: int) -> None:
    d = fabric.size_fabric(n, k, 100, oversubscription=r, tiers=t)
    g = fabric.check_graph(fabric.build_graph(d), seed=n)
    assert g.switches_per_tier == d.switches_per_tier
    assert g.links_per_tier == d.links_per_tier
    assert g.max_ports_used <= k, "a switch uses more ports than it has"
    assert g.connected
    assert g.diameter_links == (d.worst_case_switch_hops + 1 if n > 1 else 0)
    # the bisection closed form is the worst balanced split: exact when halves are whole
    # leaves or pods (full fabrics), a lower bound otherwise; a random split never does worse
    assert g.bisection_links_worst >= d.bisection_links - 1e-9
    assert g.bisection_links_random >= d.bisection_links - 1e-9
    if n == fabric.max_endpoints(k, t, r) and n > 1:
        assert g.bisection_links_worst == pytest.approx(d.bisection_links)


def test_k16_three_tier_graph() -> None:
    d = fabric.size_fabric(1024, 16, tiers=3)
    g = fabric.check_graph(fabric.build_graph(d))
    assert g.switches_per_tier == {"leaf": 128, "spine": 128, "core": 64}
    assert g.diameter_links == 6 and g.bisection_links_worst == 512


# ------------------------------------------------------------------ sweeps
def test_sweep_matches_one_design_at_a_time() -> None:
    ns = np.array([1, 10, 64, 65, 700, 2048, 2049, 30_000, 65_536])
    sw = fabric.fabric_sweep(ns, 64, 400, planes=2)
    for i, n in enumerate(ns):
        d = fabric.size_fabric(int(n), 64, 400)
        assert sw.tiers[i] == d.tiers
        assert sw.switches[i] == 2 * d.switches and sw.links[i] == 2 * d.links
        assert sw.transceivers[i] == 2 * sum(d.transceivers().values())
        assert sw.bisection_gbps[i] == pytest.approx(2 * d.bisection_gbps)
        assert sw.switch_hops[i] == d.worst_case_switch_hops


@pytest.mark.parametrize(("kw", "copper", "lengths"), [
    (dict(oversubscription=3.0), 5.0, None),
    (dict(tiers=3), 0.0, {"leaf-spine": 2.0}),
    (dict(oversubscription=7.0, tiers=2), 40.0, {"endpoint-leaf": 50.0, "spine-core": 1.0}),
])
def test_sweep_matches_one_design_at_a_time_with_options(kw, copper, lengths) -> None:
    """The sweep with oversubscription, forced tiers, 800G ports, one plane, copper up to
    ``copper`` m and other link lengths: cell by cell what size_fabric and the design's own
    transceiver count give."""
    ns = np.array([1, 2, 17, 64, 96, 500, 1_000, 4_000])
    top = fabric.max_endpoints(32, kw.get("tiers", 3), kw.get("oversubscription", 1.0))
    ns = ns[ns <= top]
    sw = fabric.fabric_sweep(ns, 32, 800, copper_max_m=copper, lengths_m=lengths, **kw)
    assert sw.endpoints.tolist() == ns.tolist()
    for name in ("tiers", "switches", "links", "transceivers", "switch_hops"):
        assert getattr(sw, name).dtype == np.int64, name
    for i, n in enumerate(ns):
        d = fabric.size_fabric(int(n), 32, 800, **kw)
        assert sw.tiers[i] == d.tiers
        assert sw.switches[i] == d.switches and sw.links[i] == d.links
        assert sw.transceivers[i] == sum(d.transceivers(copper, lengths).values())
        assert sw.bisection_gbps[i] == pytest.approx(d.bisection_gbps, rel=1e-12)
        assert sw.switch_hops[i] == d.worst_case_switch_hops


# ------------------------------------------------------------------ traffic
def _four_standard_errors(r) -> float:
    """Four standard errors of a Monte Carlo mean of the trials' utilisation (0 when every
    trial gives the same number, as one flow on four paths does)."""
    return 4 * float(np.std(r.ecmp_utilisation)) / np.sqrt(r.ecmp_utilisation.size)


def test_ecmp_matches_the_expected_share_of_busy_paths() -> None:
    """F = E flows at full load on identical paths: utilisation = 1 - (1 - 1/E)^E on average."""
    for e in (2, 4, 8):
        assert fabric.ecmp_expected_utilisation(e, e) == pytest.approx(1 - (1 - 1 / e) ** e)
        r = fabric.simulate_load_balance(e, e, trials=20_000, seed=3)
        assert abs(r.ecmp_mean - (1 - (1 - 1 / e) ** e)) < _four_standard_errors(r)
        assert r.spray_mean == 1.0
    for f, e in ((1, 4), (3, 2), (16, 4), (64, 8)):
        r = fabric.simulate_load_balance(f, e, trials=20_000, seed=5)
        assert abs(r.ecmp_mean - fabric.ecmp_expected_utilisation(f, e)) <= \
            _four_standard_errors(r)
    assert fabric.ecmp_expected_utilisation(1, 4) == pytest.approx(0.25)  # one flow, one path


def test_spraying_is_deterministic_bounded_and_never_worse() -> None:
    for f in (1, 3, 8, 64):
        for e in (1, 2, 4, 8):
            for load in (0.3, 1.0):
                for slow in (0.0, 0.2):
                    a = fabric.simulate_load_balance(f, e, load=load, path_slowdown=slow,
                                                     slow_paths=min(1, e - 1), trials=300,
                                                     seed=11)
                    b = fabric.simulate_load_balance(f, e, load=load, path_slowdown=slow,
                                                     slow_paths=min(1, e - 1), trials=300,
                                                     seed=11)
                    for name in ("ecmp_utilisation", "spray_utilisation", "rr_utilisation",
                                 "flowlet_utilisation", "rr_reorder_packets"):
                        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
                    for u in (a.ecmp_utilisation, a.ecmp_sync, a.spray_utilisation,
                              a.rr_utilisation, a.flowlet_utilisation):
                        assert np.all((u >= 0) & (u <= 1))
                    # adaptive spraying is the optimal schedule of equal packets: it beats
                    # ECMP's placement of whole flows, flowlets and round-robin, exactly
                    for worse in (a.ecmp_sync, a.rr_utilisation, a.flowlet_utilisation):
                        assert np.all(a.spray_utilisation >= worse - 1e-12)
                    # and reaches ECMP's steady-state throughput up to a last-packet tail
                    n = a.message_packets
                    assert np.all(a.spray_utilisation >= a.ecmp_utilisation * n / (n + e) - 1e-12)
                    assert np.all(a.ecmp_utilisation >= a.ecmp_sync - 1e-12)
                    # at full load nothing beats the paths' own mean speed
                    if load == 1.0:
                        assert np.all(a.spray_utilisation <= a.path_rates.mean(axis=1) + 1e-12)
    c = fabric.simulate_load_balance(4, 4, trials=300, seed=12)
    assert not np.array_equal(c.ecmp_utilisation,
                              fabric.simulate_load_balance(4, 4, trials=300, seed=11)
                              .ecmp_utilisation)


def test_utilisation_is_an_outcome_of_the_schemes_not_the_input() -> None:
    """Identical paths: every spraying scheme is perfect. One plane at half speed (a degraded
    plane, 4 planes): round-robin drops to the slow plane's 50 %, adaptive spraying pools
    the speeds, 3.5 / 4 = 87.5 %, and coarser flowlets fall in between."""
    same = fabric.simulate_load_balance(8, 4, trials=500, seed=0)
    assert same.spray_mean == same.rr_mean == same.flowlet_mean == 1.0
    half = fabric.simulate_load_balance(8, 4, slow_paths=1, slow_factor=0.5, trials=500,
                                        seed=0)
    assert half.capacity_mean == pytest.approx(0.875)
    assert half.rr_mean == pytest.approx(0.5)
    assert half.spray_mean == pytest.approx(0.875, abs=0.003)  # the last packet's tail
    assert half.rr_queue_packets.mean() == pytest.approx(1024 / 4 * 0.5)
    assert half.rr_reorder_packets.mean() > 100 and same.rr_reorder_packets.max() == 0
    fine, coarse, flow = (fabric.simulate_load_balance(
        8, 4, slow_paths=1, slow_factor=0.5, trials=500, seed=0, flowlet_packets=b)
        .flowlet_mean for b in (8, 64, 128))
    assert half.spray_mean >= fine > coarse > flow > half.ecmp_sync_mean
    # ECMP's collective is unchanged by how the NIC would have sprayed
    assert half.ecmp_sync_mean < half.rr_mean + 0.1


def test_spraying_pools_a_five_percent_mean_slowdown() -> None:
    """Paths losing up to 10 % (5 % on average): adaptive spraying delivers about 95 %, the
    paths' mean speed; round-robin is held to the slowest path's."""
    r = fabric.simulate_load_balance(8, 4, path_slowdown=0.1, trials=5000, seed=0)
    assert r.capacity_mean == pytest.approx(0.95, abs=0.005)
    assert r.spray_mean == pytest.approx(r.capacity_mean, abs=0.002)
    slowest = r.path_rates.min(axis=1)
    np.testing.assert_allclose(r.rr_utilisation, slowest, rtol=1e-9)
    assert r.ecmp_mean < r.rr_mean < r.spray_mean


def test_sweep_grid_shape() -> None:
    s = fabric.load_balance_sweep([1, 4, 16], [1, 2, 8], trials=200, slow_paths=1)
    assert s["ecmp"].shape == (3, 3) and set(s) == {"ecmp", "ecmp_sync", "spray", "rr",
                                                     "flowlet"}
    np.testing.assert_allclose(s["ecmp"][0], 0.5)  # one path, at half speed
    assert np.all(s["spray"] >= s["ecmp_sync"]) and np.all(s["spray"] >= s["rr"])


def test_reordering_buffer() -> None:
    none = fabric.simulate_reordering(4, skew_us=0, jitter_us=0)
    assert none.buffer_bytes == 0 and none.out_of_order_fraction == 0
    small = fabric.simulate_reordering(4, skew_us=0.5, jitter_us=0.1, seed=1)
    big = fabric.simulate_reordering(4, skew_us=5, jitter_us=0.1, seed=1)
    assert 0 < small.buffer_bytes < big.buffer_bytes <= big.bound_bytes
    assert big == fabric.simulate_reordering(4, skew_us=5, jitter_us=0.1, seed=1)
    assert fabric.reorder_buffer_bytes(800, 1e-6) == pytest.approx(100e3)  # 100 GB/s x 1 us


# ------------------------------------------------------------------ RDMA against TCP
def test_catalog_latencies_sit_inside_the_measurements() -> None:
    ib = [m.value for m in fabric.transport_measurements("InfiniBand")
          if m.metric.startswith("one-way")]
    # α is a small message's one-way latency: between the 32 B and 4 KiB medians measured
    assert min(ib) <= catalog.link("InfiniBand NDR").latency_us <= max(ib)
    assert catalog.link("RoCE v2 400GbE").latency_us >= min(ib)
    tcp_core = next(m for m in fabric.transport_measurements("kernel TCP")
                    if m.unit == "Gb/s per core")
    # Cai et al.: one 3-4 GHz core keeps up with 30-40 Gb/s (40 at best): 3/40 to 4/30 GHz
    # per Gb/s; the catalog's figure lies in that span
    assert tcp_core.value == 40
    assert 3 / 40 <= catalog.link("TCP/IP 400GbE").cpu_ghz_per_gbps <= 4 / 30
    p99 = {m.transport: m.value for m in fabric.transport_measurements() if "p99" in m.name}
    assert p99["kernel TCP"] > p99["RoCE v2"]


def test_fabric_alpha_adds_the_path() -> None:
    d = fabric.size_fabric(65_536, 64, tiers=3)
    ab = fabric.fabric_alpha("InfiniBand NDR", d, switch_latency_ns=100)
    path = d.worst_case_latency_s(100) - 100e-9
    assert ab.latency_s == pytest.approx(catalog.link("InfiniBand NDR").latency_s + path)
    term = fabric.collective_latency_term("all_reduce", 1000, "InfiniBand NDR", d,
                                          switch_latency_ns=100)
    assert term == pytest.approx(2 * 999 * ab.latency_s)
    assert term == pytest.approx(collectives.collective_time("all_reduce", 0.0, 1000, ab))
    assert fabric.fabric_alpha("TCP/IP 400GbE").latency_s > ab.latency_s


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("call", "message"), [
    (lambda: fabric.size_fabric(10, 7), "radix must be an even whole number >= 2"),
    (lambda: fabric.size_fabric(10, 0), "radix must be a whole number >= 2"),
    (lambda: fabric.size_fabric(10, 1), "radix must be a whole number >= 2"),
    (lambda: fabric.size_fabric(70_000, 64), r"n_endpoints=70,000 .* \(65,536 at"),
    (lambda: fabric.size_fabric(3_000, 64, tiers=2), r"2 tiers of radix-64 .* \(2,048 at"),
    (lambda: fabric.size_fabric(0, 64), "n_endpoints must be a whole number >= 1"),
    (lambda: fabric.size_fabric(10, 64, oversubscription=2), "whole ratios for radix 64: 1, 3"),
    (lambda: fabric.size_fabric(10, 64, oversubscription=0.5), "oversubscription must be >= 1"),
    (lambda: fabric.size_fabric(10, 64, tiers=4), "tiers must be one of 1, 2, 3"),
    (lambda: fabric.size_multiplane(10, 800, 4), "give exactly one of switch_gbps"),
    (lambda: fabric.radix_at(400, 800), "fewer than 2 ports"),
    (lambda: fabric.fabric_sweep([10, 100_000], 64), r"n_endpoints=100,000"),
    (lambda: fabric.simulate_load_balance(0, 4), "n_flows must be a whole number >= 1"),
    (lambda: fabric.simulate_load_balance(4, 4, load=1.5), "load must be a number"),
    (lambda: fabric.switch_chip("Tomahwk 6"), "did you mean"),
    (lambda: fabric.transport_measurements("UDP"), "transport must be one of"),
    (lambda: fabric.size_fabric(100, 64).worst_case_latency_s(lengths_m={"leaf-spine": -1}),
     "length of leaf-spine links"),
])
def test_bad_input_is_a_clear_value_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_malformed_switch_entry_names_the_field(tmp_path) -> None:
    path = tmp_path / "switches.toml"
    path.write_text('[[switch]]\nname = "x"\nvendor = "v"\nfamily = "Ethernet"\n'
                    'ports = [64, 32]\nport_gbps = [800]\nyear = 2024\nsource = "s"\n')
    with pytest.raises(ValueError, match=r"switches.toml: \[\[switch\]\] entry 1 \('x'\)"):
        catalog.load_entries(path, "switch", fabric.SwitchChip)


# ------------------------------------------------------------------ traffic, by plain loops
def _greedy_by_heap(rates, jobs, size=1.0):
    """Finish time of ``jobs`` equal jobs of ``size`` packets, each sent to the path that
    completes it first (a heap of each path's next completion), paths of speeds ``rates``."""
    import heapq
    heap = [(size / r, j, 1) for j, r in enumerate(rates)]
    heapq.heapify(heap)
    t = 0.0
    for _ in range(jobs):
        t, j, k = heapq.heappop(heap)
        heapq.heappush(heap, ((k + 1) * size / rates[j], j, k + 1))
    return t


def _load_balance_by_loop(n_flows, n_paths, load, slowdown, trials, seed, slow_paths,
                          slow_factor, message_packets, flowlet_packets):
    """simulate_load_balance's model, trial by trial: the same draws (each flow's path, then
    each path's loss), then each scheme packet by packet or path by path."""
    rng = np.random.default_rng(seed)
    path = rng.integers(0, n_paths, size=(trials, n_flows))
    loss = (rng.uniform(0.0, slowdown, size=(trials, n_paths)) if slowdown > 0
            else np.zeros((trials, n_paths)))
    per_flow = max(1, round(message_packets / n_flows))
    n_pkts = n_flows * per_flow
    ideal = n_pkts / (load * n_paths)
    flow_rate = load * n_paths / n_flows
    bursts = math.ceil(per_flow / flowlet_packets)
    per_burst = per_flow / bursts
    out = {k: [] for k in ("ecmp", "sync", "spray", "flowlet", "rr", "queue", "held", "max")}
    for t in range(trials):
        rates = [(1 - loss[t, j]) * (slow_factor if j < slow_paths else 1.0)
                 for j in range(n_paths)]
        counts = [int(np.sum(path[t] == j)) for j in range(n_paths)]
        served = sum(min(r, c * flow_rate) for r, c in zip(rates, counts, strict=True))
        out["ecmp"].append(min(1.0, served / (load * n_paths)))
        worst = min(r / c for r, c in zip(rates, counts, strict=True) if c > 0)
        out["sync"].append(min(1.0, worst / flow_rate))
        out["max"].append(max(c * flow_rate / r for r, c in zip(rates, counts, strict=True)))
        out["spray"].append(min(1.0, ideal / max(_greedy_by_heap(rates, n_pkts), ideal)))
        finish = _greedy_by_heap(rates, bursts * n_flows, per_burst)
        out["flowlet"].append(min(1.0, ideal / max(finish, ideal)))
        # round robin: packet k on path k mod E, each path delivering at min(r, load)
        n_j = [sum(1 for k in range(n_pkts) if k % n_paths == j) for j in range(n_paths)]
        speed = [min(r, load) for r in rates]
        slowest = max(n / s for n, s in zip(n_j, speed, strict=True))
        out["rr"].append(min(1.0, ideal / max(slowest, ideal)))
        out["queue"].append(max(n * max(0.0, 1 - r / load) for n, r in zip(n_j, rates,
                                                                            strict=True)))
        held = 0.0
        for n_end, s_end in zip(n_j, speed, strict=True):  # at each path's finish time
            done = [min(s * (n_end / s_end), n) for n, s in zip(n_j, speed, strict=True)]
            held = max(held, sum(done) - n_paths * min(done))
        out["held"].append(held)
    return {k: np.array(v) for k, v in out.items()}, n_pkts, per_burst


@pytest.mark.parametrize(("flows", "paths", "kw"), [
    (8, 4, dict(load=1.0, slowdown=0.0, slow_paths=0, slow_factor=0.5, message_packets=1024,
                flowlet_packets=64)),
    (6, 4, dict(load=0.7, slowdown=0.4, slow_paths=1, slow_factor=0.3, message_packets=100,
                flowlet_packets=5)),
    (3, 5, dict(load=0.9, slowdown=0.2, slow_paths=2, slow_factor=0.6, message_packets=61,
                flowlet_packets=7.5)),
    # every path faster than the offered load: round robin queues nothing
    (4, 4, dict(load=0.5, slowdown=0.2, slow_paths=0, slow_factor=0.5, message_packets=64,
                flowlet_packets=16)),
])
def test_load_balance_equals_a_packet_by_packet_loop(flows, paths, kw):
    """Every output of simulate_load_balance, trial by trial, against a loop that draws the
    same hash and path speeds and then serves the packets one at a time (a heap of the
    paths' next completions for spraying and flowlets, packet k on path k mod E for round
    robin): a check of the vectorised queues, not of the draws."""
    trials, seed = 25, 4
    r = fabric.simulate_load_balance(flows, paths, load=kw["load"],
                                     path_slowdown=kw["slowdown"], trials=trials, seed=seed,
                                     slow_paths=kw["slow_paths"], slow_factor=kw["slow_factor"],
                                     message_packets=kw["message_packets"],
                                     flowlet_packets=kw["flowlet_packets"])
    want, n_pkts, per_burst = _load_balance_by_loop(flows, paths, kw["load"], kw["slowdown"],
                                                    trials, seed, kw["slow_paths"],
                                                    kw["slow_factor"], kw["message_packets"],
                                                    kw["flowlet_packets"])
    assert (r.n_flows, r.n_paths, r.load) == (flows, paths, kw["load"])
    assert r.message_packets == n_pkts and r.flowlet_packets == pytest.approx(per_burst)
    for got, key in ((r.ecmp_utilisation, "ecmp"), (r.ecmp_sync, "sync"),
                     (r.spray_utilisation, "spray"), (r.flowlet_utilisation, "flowlet"),
                     (r.rr_utilisation, "rr"), (r.rr_queue_packets, "queue"),
                     (r.rr_reorder_packets, "held"), (r.max_path_load, "max")):
        assert got == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
    assert r.ecmp_mean == pytest.approx(want["ecmp"].mean(), rel=1e-12)
    assert r.spray_mean == pytest.approx(want["spray"].mean(), rel=1e-12)
    assert r.ecmp_sync_mean == pytest.approx(want["sync"].mean(), rel=1e-12)
    assert r.rr_mean == pytest.approx(want["rr"].mean(), rel=1e-12)
    assert r.flowlet_mean == pytest.approx(want["flowlet"].mean(), rel=1e-12)
    assert r.capacity_mean == pytest.approx(r.path_rates.mean(), rel=1e-12)


def test_load_balance_sweep_is_one_simulation_per_cell() -> None:
    """A 2 x 3 grid (paths by flows) with every option passed on: each cell is the mean of
    the simulation at that cell's flows and paths."""
    kw = dict(slow_paths=1, slow_factor=0.4, message_packets=48, flowlet_packets=4)
    flows, paths = [2, 3, 8], [2, 4]
    s = fabric.load_balance_sweep(flows, paths, load=0.8, path_slowdown=0.3, trials=30,
                                  seed=6, **kw)
    assert set(s) == {"ecmp", "ecmp_sync", "spray", "rr", "flowlet"}
    for i, e in enumerate(paths):
        for j, f in enumerate(flows):
            r = fabric.simulate_load_balance(f, e, load=0.8, path_slowdown=0.3, trials=30,
                                             seed=6, **kw)
            assert s["ecmp"][i, j] == r.ecmp_mean and s["spray"][i, j] == r.spray_mean
            assert s["ecmp_sync"][i, j] == r.ecmp_sync_mean and s["rr"][i, j] == r.rr_mean
            assert s["flowlet"][i, j] == r.flowlet_mean


def _reordering_by_loop(n_paths, rate_gbps, packet_bytes, n_packets, skew_us, jitter_us, seed):
    """A receiver's reorder buffer, event by event: packets in order of arrival, each held
    until every earlier packet has arrived; the same draws as the simulation (each path's
    delay, then each packet's jitter)."""
    rng = np.random.default_rng(seed)
    t_pkt = packet_bytes * 8 / (rate_gbps * 1e9)
    m = n_packets - n_packets % n_paths
    delay = rng.uniform(0.0, skew_us * 1e-6, size=n_paths)
    jitter = rng.uniform(0.0, jitter_us * 1e-6, size=m)
    arrive, last = [], [0.0] * n_paths
    for i in range(m):
        j = i % n_paths
        last[j] = max(last[j], i * t_pkt + delay[j] + jitter[i])  # first in, first out
        arrive.append(last[j])
    deliver, t = [], 0.0
    for a in arrive:
        t = max(t, a)
        deliver.append(t)
    buffered, nxt, most = set(), 0, 0
    order = sorted(range(m), key=lambda i: arrive[i])
    k = 0
    while k < m:  # every packet arriving at the same instant, then release what is in order
        now = arrive[order[k]]
        while k < m and arrive[order[k]] == now:
            buffered.add(order[k])
            k += 1
        while nxt in buffered:
            buffered.remove(nxt)
            nxt += 1
        most = max(most, len(buffered))
    waited = sum(1 for a, d in zip(arrive, deliver, strict=True) if d > a) / m
    utilisation = min(1.0, m * t_pkt / (deliver[-1] - deliver[0] + t_pkt))
    return most * packet_bytes, waited, utilisation


@pytest.mark.parametrize(("paths", "packets", "skew", "jitter", "seed"), [
    (4, 3_000, 2.0, 0.5, 0), (3, 2_001, 0.3, 1.0, 5), (8, 1_003, 5.0, 0.0, 2),
    (2, 1_000, 5.0, 0.0, 1),  # the last packet's path is 2.2 us slower: it lands last
])
def test_reordering_equals_an_event_loop(paths, packets, skew, jitter, seed):
    """simulate_reordering against a receiver simulated packet by packet (the same draws):
    the most bytes held, the share of packets that waited, the delivery utilisation, and the
    bound rate x (skew + jitter) + one packet, here at 400 Gb/s and 2 KiB packets."""
    r = fabric.simulate_reordering(paths, rate_gbps=400.0, packet_bytes=2048,
                                   n_packets=packets, skew_us=skew, jitter_us=jitter,
                                   seed=seed)
    held, waited, util = _reordering_by_loop(paths, 400.0, 2048, packets, skew, jitter, seed)
    assert r.buffer_bytes == held
    assert r.out_of_order_fraction == pytest.approx(waited, rel=1e-12)
    assert r.delivery_utilisation == pytest.approx(util, rel=1e-12)
    assert r.bound_bytes == pytest.approx(400e9 / 8 * (skew + jitter) * 1e-6 + 2048,
                                          rel=1e-12)
    assert r.buffer_bytes <= r.bound_bytes


def test_reordering_and_sweep_defaults() -> None:
    """The documented defaults: 800 Gb/s, 4 KiB packets, 20,000 packets, 2 us of skew and
    0.5 us of jitter, seed 0; a sweep of 1,000 trials from seed 0. One packet per path is
    the least a stream can have."""
    assert fabric.simulate_reordering(3) == fabric.simulate_reordering(
        3, rate_gbps=800.0, packet_bytes=4096, n_packets=20_000, skew_us=2.0, jitter_us=0.5,
        seed=0)  # 3 paths: 19,998 packets sent, a whole number per path
    one_each = fabric.simulate_reordering(4, n_packets=4, skew_us=0.0, jitter_us=0.0)
    assert one_each.buffer_bytes == 0 and one_each.delivery_utilisation == 1.0
    default = fabric.load_balance_sweep([2], [3])
    explicit = fabric.load_balance_sweep([2], [3], trials=1000, seed=0)
    assert all(np.array_equal(default[k], explicit[k]) for k in default)


def test_greedy_schedule_equals_a_heap_on_very_unequal_paths() -> None:
    """The optimal greedy finish time of equal jobs (the closed-form head start, then the last
    slots one by one) against a heap that places every job on the path that completes it
    first: speeds from 1 % to 100 %, so the one-by-one phase takes several slots, some on
    the same path."""
    from scaleout.fabric.traffic import _greedy_makespan
    rng = np.random.default_rng(8)
    for e in (2, 3, 6):
        rates = rng.uniform(0.01, 1.0, size=(40, e))
        for jobs in (1, 2, 7, 50):
            got = _greedy_makespan(rates, jobs)
            want = [_greedy_by_heap(list(r), jobs) for r in rates]
            assert got == pytest.approx(want, rel=1e-12), (e, jobs)


def test_load_balance_defaults() -> None:
    """The documented defaults: full load, no random slowdown, 2,000 trials from seed 0, no
    slow path (factor 0.5 when there is one), 1,024 packets, flowlets of 64."""
    default = fabric.simulate_load_balance(4, 3)
    explicit = fabric.simulate_load_balance(4, 3, load=1.0, path_slowdown=0.0, trials=2000,
                                            seed=0, slow_paths=0, slow_factor=0.5,
                                            message_packets=1024, flowlet_packets=64)
    assert default.flowlet_packets == 64.0 and default.message_packets == 1024
    for name in ("ecmp_utilisation", "ecmp_sync", "spray_utilisation", "flowlet_utilisation",
                 "rr_utilisation", "max_path_load"):
        assert np.array_equal(getattr(default, name), getattr(explicit, name)), name
    assert fabric.simulate_load_balance(4, 3, slow_paths=1).path_rates[0, 0] == 0.5
    # one flow of 129 packets in flowlets of at most 64: three of 43
    assert fabric.simulate_load_balance(1, 3, message_packets=129,
                                        trials=2).flowlet_packets == 43.0


def test_sweep_defaults_and_cables() -> None:
    """The sweep's defaults (400G ports, no oversubscription, one plane, the fewest tiers,
    the default copper reach and lengths) as one call; a design's cables are one per link."""
    ns = [10, 100, 5_000]
    a = fabric.fabric_sweep(ns, 64)
    b = fabric.fabric_sweep(ns, 64, 400.0, 1.0, 1, None, fabric.DEFAULT_COPPER_MAX_M, None)
    for name in ("tiers", "switches", "links", "transceivers", "bisection_gbps", "switch_hops"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.bisection_gbps[1] == fabric.size_fabric(100, 64).bisection_gbps
    d = fabric.size_fabric(5_000, 64)
    assert d.cables() == d.links_per_tier and sum(d.cables().values()) == d.links


def test_radix_at_rounds_down_to_an_even_count() -> None:
    """51.2 Tb/s at 1 Tb/s is 51.2 ports: 51 whole ones, rounded down to 50 (ports pair up
    as down- and uplinks); at 300G, 170.67 gives 170. The bound of 65,536 ports is allowed."""
    assert fabric.radix_at(51_200, 1_000) == 50
    assert fabric.radix_at(51_200, 300) == 170
    assert fabric.radix_at(65_536, 1) == 65_536


@pytest.mark.parametrize(("n", "tiers", "hops"), [
    (3, 3, 1), (8, 3, 3), (40, 3, 5), (3, 2, 1), (8, 2, 3), (8, 1, 1),
])
def test_worst_case_hops_by_hand_in_small_fabrics(n, tiers, hops) -> None:
    """Radix 8 (4 endpoints per leaf, 4 leaves per pod): one leaf is 1 switch between any two
    endpoints, two leaves under one spine layer 3, two pods 5."""
    d = fabric.size_fabric(n, 8, tiers=tiers)
    assert d.worst_case_switch_hops == hops
    assert fabric.fabric_sweep([n], 8, tiers=tiers).switch_hops[0] == hops


def test_design_fields_by_hand() -> None:
    """One tier: every port faces an endpoint (64 down, 0 up) and nothing is oversubscribed,
    whatever was asked; two tiers at 3:1 keep 3.0. A single endpoint has one link, listed as
    a link group of one. 400G ports by default; 2 ports is the smallest switch."""
    one = fabric.size_fabric(10, 64, oversubscription=3.0)
    assert (one.tiers, one.leaf_down, one.leaf_up, one.oversubscription) == (1, 64, 0, 1.0)
    two = fabric.size_fabric(1_000, 64, oversubscription=3.0)
    assert two.tiers == 2 and two.oversubscription == 3.0 and (two.leaf_down, two.leaf_up) == (
        48, 16)
    assert fabric.size_fabric(100, 64).port_gbps == 400.0
    single = fabric.size_fabric(1, 64)
    assert [(g.count, g.name) for g in single.link_groups()] == [(1, "endpoint-leaf")]
    assert fabric.radix_at(800, 400) == 2


def test_oversubscribed_fabrics_reach_further_per_tier() -> None:
    """At 3:1 a radix-64 leaf has 48 endpoints: two tiers reach 48 x 64 = 3,072 endpoints (not
    2,048) and three tiers 48 x 32 x 64 = 98,304 (not 65,536), so 3,000 endpoints fit in two
    tiers and 70,000 in three."""
    assert fabric.max_endpoints(64, 2, 3.0) == 48 * 64
    assert fabric.max_endpoints(64, 3, 3.0) == 48 * 32 * 64
    assert fabric.size_fabric(3_000, 64, oversubscription=3.0).tiers == 2
    assert fabric.size_fabric(70_000, 64, oversubscription=3.0).tiers == 3
    with pytest.raises(ValueError, match=re.escape("(98,304 at oversubscription 3:1)")):
        fabric.size_fabric(100_000, 64, oversubscription=3.0)
    # the sweep the same way: radix 32 at 3:1 serves 24 x 32 = 768 in two tiers (not 512)
    assert fabric.fabric_sweep([600, 768, 769], 32, oversubscription=3.0).tiers.tolist() == [
        2, 2, 3]


def test_multiplane_passes_its_options_to_each_plane_by_hand() -> None:
    """Four 200G planes of radix 256 for 40,000 NICs: three tiers (two reach 32,768), three
    pods of 16,384, so the longest path is 5 switches of 300 ns and 2 x (3 + 100 + 500) m of
    fibre at 4 ns/m with the leaf-spine links at 100 m (6,324 ns); every NIC link longer than
    a 50 m copper reach at 60 m needs 2 transceivers on each plane; link groups at 5, 40 and
    600 m. Two tiers at most refuse it; 8,192 NICs forced to three tiers get them."""
    m = fabric.size_multiplane(40_000, 800, 4, switch_gbps=51_200)
    assert m.plane.radix == 256 and m.plane.tiers == 3 and m.planes == 4
    assert fabric.size_multiplane(8_192, 800, 4, switch_gbps=51_200, tiers=3).plane.tiers == 3
    assert m.worst_case_latency_s(300.0, {"leaf-spine": 100.0}, 4.0) == pytest.approx(
        (5 * 300 + 2 * (3 + 100 + 500) * 4.0) * 1e-9, rel=1e-12)
    xcvr = m.transceivers(50.0, {"endpoint-leaf": 60.0})
    assert xcvr["endpoint-leaf"] == 4 * 2 * 40_000 and xcvr["leaf-spine"] == 0
    assert xcvr["spine-core"] == 4 * 2 * m.plane.links_per_tier["spine-core"] > 0
    groups = m.link_groups(5.0, 40.0, 600.0)
    assert [(g.name, g.length_m) for g in groups] == [
        ("endpoint-leaf", 5.0), ("leaf-spine", 40.0), ("spine-core", 600.0)]
    assert groups[0].count == 4 * 40_000
    with pytest.raises(ValueError):
        fabric.size_multiplane(40_000, 800, 4, switch_gbps=51_200, max_tiers=2)


def test_fabric_alpha_with_lengths_and_other_algorithms_by_hand() -> None:
    """A two-tier fabric (3 switches) with 100 m leaf-spine links: alpha is the link's own
    latency plus 2 extra switches of 500 ns and 2 x (3 + 100) m of fibre at 4.9 ns/m. A
    halving-doubling all-reduce of 8 GPUs pays 2 log2 8 = 6 alphas, a ring 2 x 7, at 0 bytes
    exactly."""
    d = fabric.size_fabric(2_048, 64)
    link = catalog.link("InfiniBand NDR")
    ab = fabric.fabric_alpha("InfiniBand NDR", d, 500.0, {"leaf-spine": 100.0})
    assert ab.latency_s == pytest.approx(link.latency_s + (2 * 500 + 2 * 103 * 4.9) * 1e-9,
                                         rel=1e-12)
    alpha = fabric.fabric_alpha("InfiniBand NDR", d).latency_s
    assert fabric.collective_latency_term("all_reduce", 8, "InfiniBand NDR", d,
                                          algorithm="halving_doubling") == pytest.approx(
        6 * alpha, rel=1e-12)
    assert fabric.collective_latency_term("all_reduce", 8, "InfiniBand NDR", d) == \
        pytest.approx(14 * alpha, rel=1e-12)


@pytest.mark.parametrize(("gpus", "radix", "r", "nodes"), [
    (8, 64, 1.0, 8 * 32), (8, 64, 3.0, 8 * 48), (3, 64, 1.0, 21 * 32)])
def test_rail_max_nodes_by_hand(gpus, radix, r, nodes) -> None:
    """floor(k / rails) groups of d nodes: 8 rails on radix 64 make 8 groups of 32 (48 at
    3:1); 3 rails make 21 groups."""
    assert fabric.rail_max_nodes(gpus, radix, r) == nodes
    if r == 1.0:
        assert fabric.rail_max_nodes(gpus, radix) == nodes
        assert fabric.rail_layout(nodes, gpus, radix).port_gbps == 400.0


# ------------------------------------------------- result types, the split's tolerance, hints
def test_max_endpoints_gives_an_int_or_an_int64_array_of_the_radixes_shape() -> None:
    """One radix gives a Python ``int``; an array of radixes an int64 array of its own shape:
    a 2 x 2 array of radixes 4, 8, 16, 32 at two tiers gives k^2/2 = 8, 32, 128, 512 in
    place (Al-Fares et al. 2008, Sec. 3), one tier the radixes themselves."""
    got = [fabric.max_endpoints(64, t) for t in (1, 2, 3)]
    assert got == [64, 2_048, 65_536] and [type(x) for x in got] == [int, int, int]
    ks = np.array([[4, 8], [16, 32]])
    for tiers, want in ((1, [[4, 8], [16, 32]]), (2, [[8, 32], [128, 512]])):
        out = fabric.max_endpoints(ks, tiers)
        assert isinstance(out, np.ndarray) and out.dtype == np.int64 and out.shape == (2, 2)
        assert out.tolist() == want


def test_leaf_split_tolerance_is_absolute_and_only_absorbs_rounding() -> None:
    """Any d/(k - d) >= 1 gives d downlinks even where floating point misses d by an ulp
    (12 ports at 7/5: 12 x 1.4 / 2.4 = 7 - 9e-16); a ratio that gives a count 10^-5 of a
    port away from whole (60,000.00001 of radix 65,536) is refused, however large the
    count: the tolerance is 10^-6 of a port, not a share of the count."""
    assert 12 * (7 / 5) / (7 / 5 + 1) != 7  # the rounding the tolerance is there for
    assert fabric.leaf_split(12, 7 / 5) == (7, 5)
    assert fabric.leaf_split(24, 15 / 9) == (15, 9)
    near = 60_000.00001
    with pytest.raises(ValueError, match="not a whole number below 65536"):
        fabric.leaf_split(65_536, near / (65_536 - near))


def test_leaf_split_names_every_whole_ratio_of_its_radix() -> None:
    """The whole ratios k/m - 1 over the divisors m of k with k/m >= 2: radix 64 offers
    1, 3, 7, 15, 31 and 63 (a leaf of 32:32 down to 63:1); radix 2 only 1:1."""
    with pytest.raises(ValueError, match=re.escape(
            "whole ratios for radix 64: 1, 3, 7, 15, 31, 63 (or any d/(k-d))")):
        fabric.leaf_split(64, 2.0)
    with pytest.raises(ValueError, match=re.escape("whole ratios for radix 2: 1 (or any")):
        fabric.leaf_split(2, 3.0)


def test_a_fabric_with_more_switches_than_endpoints_is_measured() -> None:
    """Two endpoints forced onto three tiers of radix 8: one leaf (4 ports down, 4 up), its
    pod's 4 aggregation switches and 4 cores (aggregation switch j sends its 4 uplinks to
    core j): 9 switches for 2 endpoints. Both endpoints hang on the one leaf, so they are 2
    links apart and 1 unit crosses either split; the leaf's 6 ports are the busiest."""
    g = fabric.check_graph(fabric.build_graph(fabric.size_fabric(2, 8, 100, tiers=3)))
    assert g.switches_per_tier == {"leaf": 1, "spine": 4, "core": 4}
    assert g.links_per_tier == {"endpoint-leaf": 2, "leaf-spine": 4, "spine-core": 16}
    assert (g.connected, g.diameter_links, g.max_ports_used) == (True, 2, 6)
    assert (g.bisection_links_worst, g.bisection_links_random) == (1.0, 1.0)


@pytest.mark.parametrize(("n", "t", "nodes", "links", "pods"), [
    (32, 2, {"endpoint": 32, "leaf": 8, "spine": 4},
     {"endpoint-leaf": 32, "leaf-spine": 32}, [0] * 8),
    (128, 3, {"endpoint": 128, "leaf": 32, "spine": 32, "core": 16},
     {"endpoint-leaf": 128, "leaf-spine": 128, "spine-core": 128},
     [p for p in range(8) for _ in range(4)]),
])
def test_a_built_graph_labels_nodes_and_links_by_index_and_keeps_its_design(
        n: int, t: int, nodes: dict[str, int], links: dict[str, int], pods: list[int]) -> None:
    """Radix 8: a leaf has 4 ports down and 4 up. Two tiers for 32 endpoints: 8 leaves and
    the fewest spines that take their 32 uplinks, 4. Three tiers for 128 (Al-Fares et al.'s
    k = 8 fat tree): 8 pods of 4 leaves and 4 aggregation switches, 16 cores, 128 links per
    tier. Node kinds and link types are integers that index their names (0 an endpoint, then
    ``TIER_NAMES``; ``LINK_TYPES``), each leaf has its pod (0 outside a fat tree, leaf // 4
    in it), and the graph keeps the design it was built from."""
    from collections import Counter
    design = fabric.size_fabric(n, 8, 100, tiers=t)
    g = fabric.build_graph(design)
    assert g.design is design
    names = ("endpoint", *fabric.TIER_NAMES)
    assert Counter(names[i] for i in g.kind) == nodes
    assert Counter(fabric.LINK_TYPES[i] for i in g.edge_type) == links
    assert g.pod_of_leaf.tolist() == pods
    for array in (g.kind, g.edges, g.edge_type, g.leaf_of, g.pod_of_leaf):
        assert array.dtype == np.int64
