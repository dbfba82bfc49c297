"""The fabric's wired graphs checked by an independent implementation: networkx.

`scaleout.fabric.check_graph` measures a built topology with its own BFS and its own max-flow
(Dinic's algorithm); those, in turn, check the closed-form Clos counts. Here networkx, written
by other people, measures the same graphs: the diameter by its shortest paths and the bisection
by its own maximum-flow algorithm (preflow-push), so the check does not share its author's
assumptions.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from scaleout import fabric

# small designs of every kind: tiers 1-3, full and partial, oversubscribed
DESIGNS = [(n, k, r, t) for (k, t), r in itertools.product([(4, 2), (8, 2), (8, 3), (4, 3)],
                                                           (1.0, 3.0))
           for n in (fabric.max_endpoints(k, t, r), max(2, fabric.max_endpoints(k, t, r) // 3))
           if (k, r) != (4, 3.0)] + [(6, 8, 1.0, 1), (1024, 16, 1.0, 3)]


def _graph(g: fabric.FabricGraph) -> nx.Graph:
    """Undirected graph with one unit of capacity per physical link (parallel links add)."""
    out = nx.Graph()
    out.add_nodes_from(range(g.kind.size))
    for a, b in g.edges.tolist():
        if out.has_edge(a, b):
            out[a][b]["capacity"] += 1
        else:
            out.add_edge(a, b, capacity=1)
    return out


def _bisection(graph: nx.Graph, left, right) -> float:
    """Max flow from one half of the endpoints to the other, each link one unit each way."""
    d = graph.to_directed()  # each undirected link becomes two arcs of the same capacity
    d.add_node("s")
    d.add_node("t")
    for e in left:
        d.add_edge("s", int(e), capacity=float("inf"))
    for e in right:
        d.add_edge(int(e), "t", capacity=float("inf"))
    return nx.maximum_flow_value(d, "s", "t", flow_func=nx.algorithms.flow.preflow_push)


@pytest.mark.parametrize(("n", "k", "r", "t"), DESIGNS,
                         ids=[f"n{n}-k{k}-r{r:g}-t{t}" for n, k, r, t in DESIGNS])
def test_networkx_measures_what_the_library_measures(n, k, r, t):
    design = fabric.size_fabric(n, k, 100, oversubscription=r, tiers=t)
    built = fabric.build_graph(design)
    ours = fabric.check_graph(built, seed=n)
    graph = _graph(built)
    endpoints = np.flatnonzero(built.kind == 0)
    assert nx.is_connected(graph) == ours.connected
    # diameter between endpoints, in links
    if n > 1:
        lengths = dict(nx.all_pairs_shortest_path_length(graph))
        worst = max(lengths[int(a)][int(b)] for a in endpoints for b in endpoints)
        assert worst == ours.diameter_links
    # the worst-case split (by endpoint order: whole leaves and pods per side)
    half = n // 2
    flow = _bisection(graph, endpoints[:half], endpoints[half: 2 * half])
    assert flow == pytest.approx(ours.bisection_links_worst)
    # and the closed form: exact for full fabrics, a lower bound otherwise
    assert flow >= design.bisection_links - 1e-9
    if n == fabric.max_endpoints(k, t, r) and n > 1:
        assert flow == pytest.approx(design.bisection_links)
    # switch and port counts seen by networkx: every switch within its radix
    degree = {v: sum(graph[v][w]["capacity"] for w in graph[v]) for v in graph}
    assert max(degree[int(s)] for s in np.flatnonzero(built.kind > 0)) <= k


@pytest.mark.parametrize(("n", "k", "r", "t"),
                         [(32, 8, 1.0, 2), (20, 8, 3.0, 2), (128, 8, 1.0, 3), (40, 8, 1.0, 3)])
def test_networkx_measures_the_random_split_the_ports_and_a_cut_fabric(n, k, r, t):
    """The random balanced split check_graph draws (seeded permutation, first half against
    second), every switch's busiest port count, the switches per tier by node kind; then the
    same fabric with leaf 0's uplinks cut: networkx finds it disconnected, and both max-flows
    agree on the cut fabric's worst-case split."""
    import dataclasses
    built = fabric.build_graph(fabric.size_fabric(n, k, 100, oversubscription=r, tiers=t))
    ours = fabric.check_graph(built, seed=5)
    graph = _graph(built)
    endpoints = np.flatnonzero(built.kind == 0)
    perm = np.random.default_rng(5).permutation(n)
    half = n // 2
    flow = _bisection(graph, endpoints[perm[:half]], endpoints[perm[half: 2 * half]])
    assert flow == pytest.approx(ours.bisection_links_random)
    degree = {v: sum(graph[v][w]["capacity"] for w in graph[v]) for v in graph}
    assert ours.max_ports_used == max(degree[int(s)] for s in np.flatnonzero(built.kind > 0))
    assert ours.switches_per_tier == {name: int(np.sum(built.kind == i + 1))
                                      for i, name in enumerate(("leaf", "spine", "core"))}
    leaf0 = n  # the first switch: leaves follow the endpoints
    keep = ~((built.edges[:, 0] == leaf0) & (built.edge_type > 0))
    cut = dataclasses.replace(built, edges=built.edges[keep], edge_type=built.edge_type[keep])
    cut_check = fabric.check_graph(cut, seed=5)
    cut_graph = _graph(cut)
    assert not nx.is_connected(cut_graph) and cut_check.connected is False
    flow = _bisection(cut_graph, endpoints[:half], endpoints[half: 2 * half])
    assert flow == pytest.approx(cut_check.bisection_links_worst)
    assert flow < ours.bisection_links_worst  # leaf 0's endpoints no longer reach the other side


def test_networkx_measures_both_splits_of_an_uneven_fabric():
    """Leaf-spine of radix 8 with 31 endpoints (7 leaves of 4 and one of 3, 4 spines), its
    leaves keeping 4, 4, 4, 4, 1, 1, 1 and 3 of their uplinks: the right half is short of
    uplinks, so where each endpoint sits and every link's capacity in each direction decide
    the flow. The worst-case split takes endpoints 0-14 against 15-29 (the odd one out, 30,
    on neither side): networkx finds 6 units (one through leaf 3, one each through leaves
    4-6, two through leaf 7), where 30 on the right would make it 7; the random splits of
    six seeds (the seeded permutation, first half against second) differ from one another,
    and each equals networkx's flow for the same split."""
    import dataclasses
    n = 31
    built = fabric.build_graph(fabric.size_fabric(n, 8, 100, tiers=2))
    assert (built.kind == 1).sum() == 8 and (built.kind == 2).sum() == 4
    ups = np.array([4, 4, 4, 4, 1, 1, 1, 3])
    leaf, spine = built.edges[:, 0] - n, built.edges[:, 1] - n - 8
    keep = (built.edge_type == 0) | (spine < ups[np.clip(leaf, 0, 7)])
    uneven = dataclasses.replace(built, edges=built.edges[keep],
                                 edge_type=built.edge_type[keep])
    graph = _graph(uneven)
    endpoints = np.flatnonzero(uneven.kind == 0)
    assert _bisection(graph, endpoints[:15], endpoints[15:30]) == 6
    assert _bisection(graph, endpoints[:15], endpoints[15:31]) == 7
    flows = []
    for seed in range(6):
        ours = fabric.check_graph(uneven, seed=seed)
        assert ours.bisection_links_worst == 6
        perm = np.random.default_rng(seed).permutation(n)
        flows.append(_bisection(graph, endpoints[perm[:15]], endpoints[perm[15:30]]))
        assert ours.bisection_links_random == flows[-1], seed
    assert len(set(flows)) >= 3, flows


def test_max_flow_reroutes_flow_its_first_phase_sent_the_short_way():
    """Dinic's algorithm (the bisection's max flow) on a graph built so that its first phase
    blocks the flow: a and b each send their unit along the shortest route, a -> u -> v -> t
    and b -> u -> v -> t (4 arcs; u -> v carries both, in two pushes), which fills v -> t,
    the only way out of w's 2 units. The maximum, 4 (the cut of s's arcs: 1 + 1 + 2), needs
    both units taken back off u -> v and sent the long ways round (a -> e1 -> e2 -> e3 -> t,
    b -> f1 -> f2 -> f3 -> t): two units back along the reverse arc, not one, not none."""
    from scaleout.fabric.graph import _dinic
    arcs = {("s", "a"): 1, ("s", "b"): 1, ("a", "u"): 1, ("b", "u"): 1, ("u", "v"): 2,
            ("v", "t"): 2, ("s", "w1"): 2, ("w1", "w2"): 2, ("w2", "w3"): 2, ("w3", "v"): 2,
            ("a", "e1"): 1, ("e1", "e2"): 1, ("e2", "e3"): 1, ("e3", "t"): 1,
            ("b", "f1"): 1, ("f1", "f2"): 1, ("f2", "f3"): 1, ("f3", "t"): 1}
    names = sorted({x for arc in arcs for x in arc})
    ix = {x: i for i, x in enumerate(names)}
    graph = nx.DiGraph()
    graph.add_edges_from((a, b, {"capacity": c}) for (a, b), c in arcs.items())
    assert nx.maximum_flow_value(graph, "s", "t") == 4
    cap = {(ix[a], ix[b]): c for (a, b), c in arcs.items()}
    assert _dinic(len(names), cap, ix["s"], ix["t"]) == 4
