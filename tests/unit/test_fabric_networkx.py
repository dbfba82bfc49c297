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
