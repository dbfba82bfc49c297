"""A Clos plane wired link by link, and measured: the check on the closed forms.

:func:`build_graph` wires a :class:`~scaleout.fabric.ClosDesign` port by port as the
fat-tree paper wires it (Al-Fares, Loukissas & Vahdat 2008, SIGCOMM, Sec. 3);
:func:`check_graph` measures its switches, links, port use, diameter (breadth-first
search) and bisection (maximum flow by Dinic's algorithm: Dinitz 1970, Soviet Math.
Doklady 11), which the tests compare with the counts of :mod:`scaleout.fabric.clos`.
Meant for small radixes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..checks import MAX_WORK, check_work
from .clos import LINK_TYPES, TIER_NAMES, ClosDesign


@dataclass(frozen=True)
class FabricGraph:
    """A built topology: node kinds and an edge list (one row per physical link).

    ``kind[i]`` is 0 for an endpoint, 1 leaf, 2 spine, 3 core; ``edges[j] = (a, b)`` with
    ``a`` the lower-tier end; ``edge_type[j]`` indexes :data:`LINK_TYPES`. ``leaf_of[e]``
    is endpoint ``e``'s leaf; ``pod_of_leaf`` the pod of each leaf (0 outside fat trees).
    """

    design: ClosDesign
    kind: np.ndarray
    edges: np.ndarray
    edge_type: np.ndarray
    leaf_of: np.ndarray
    pod_of_leaf: np.ndarray


def build_graph(design: ClosDesign) -> FabricGraph:
    """Wire ``design`` explicitly, port by port, as the fat-tree paper wires it.

    Endpoints fill leaves in order (``leaf_down`` each); every leaf sends ``leaf_up``
    uplinks spread evenly over the spines it reaches (its pod's aggregation switches in
    a fat tree); aggregation switch ``j`` of every pod sends its ``k/2`` uplinks evenly over
    core group ``j``. Counts are then *measured* from the graph by :func:`check_graph`.
    Meant for small radixes (the tests use k <= 16).
    """
    n, k, t = design.endpoints, design.radix, design.tiers
    d, u, half = design.leaf_down, design.leaf_up, k // 2
    check_work(f"wiring the design's {design.links:,} links and {design.switches:,} switches",
               design.links + design.switches + n, "build a smaller design (count it with "
               "size_fabric, which has no size limit)", limit=MAX_WORK // 20)
    ep = np.arange(n)
    leaf_idx = ep // d if t > 1 else np.zeros(n, dtype=np.int64)
    n_leaves = int(leaf_idx.max()) + 1
    first_leaf, first_spine = n, n + n_leaves
    rows, types = [np.stack([ep, first_leaf + leaf_idx], axis=1)], [np.zeros(n, np.int64)]
    pod_of_leaf = np.zeros(n_leaves, dtype=np.int64)
    n_spines = n_cores = 0
    if t == 2:
        # spines: the fewest whose ports take every leaf's u uplinks, u/s links per pair
        n_spines = _fewest_switches(n_leaves * u, k, u)
        per = u // n_spines
        lv, sp = np.meshgrid(np.arange(n_leaves), np.arange(n_spines), indexing="ij")
        a = np.repeat((first_leaf + lv).ravel(), per)
        b = np.repeat((first_spine + sp).ravel(), per)
        rows.append(np.stack([a, b], axis=1))
        types.append(np.ones(a.size, np.int64))
    elif t == 3:
        pod_of_leaf = np.arange(n_leaves) // half
        pods = int(pod_of_leaf.max()) + 1
        n_spines = pods * u
        # each leaf: one link to each of its pod's u aggregation switches
        lv, j = np.meshgrid(np.arange(n_leaves), np.arange(u), indexing="ij")
        agg = pod_of_leaf[lv] * u + j
        rows.append(np.stack([(first_leaf + lv).ravel(), (first_spine + agg).ravel()], axis=1))
        types.append(np.ones(lv.size, np.int64))
        # core group j has c cores; aggregation j of each pod sends k/2 uplinks over them
        c = _fewest_switches(pods * half, k, half)
        n_cores = u * c
        first_core = first_spine + n_spines
        per = half // c
        pod, j, q = np.meshgrid(np.arange(pods), np.arange(u), np.arange(c), indexing="ij")
        a = np.repeat((first_spine + pod * u + j).ravel(), per)
        b = np.repeat((first_core + j * c + q).ravel(), per)
        rows.append(np.stack([a, b], axis=1))
        types.append(np.full(a.size, 2, np.int64))
    kind = np.concatenate([np.zeros(n, np.int64), np.ones(n_leaves, np.int64),
                           np.full(n_spines, 2, np.int64), np.full(n_cores, 3, np.int64)])
    return FabricGraph(design=design, kind=kind, edges=np.concatenate(rows),
                       edge_type=np.concatenate(types), leaf_of=first_leaf + leaf_idx,
                       pod_of_leaf=pod_of_leaf)


def _fewest_switches(links: int, radix: int, per_source: int) -> int:
    """Fewest upper switches taking ``links`` uplinks when each source spreads
    ``per_source`` links evenly (a divisor of ``per_source``), ``radix`` ports each."""
    for s in range(1, per_source + 1):
        if per_source % s == 0 and s * radix >= links:
            return s
    raise ValueError(f"{links} uplinks do not fit on {per_source} switches of radix {radix}")


@dataclass(frozen=True)
class GraphCheck:
    """What :func:`check_graph` measured on a built topology."""

    switches_per_tier: dict[str, int]
    links_per_tier: dict[str, int]
    max_ports_used: int
    connected: bool
    diameter_links: int
    bisection_links_worst: float
    bisection_links_random: float


def check_graph(graph: FabricGraph, seed: int = 0) -> GraphCheck:
    """Measure a built topology: counts, port use, connectivity, diameter, bisection.

    * diameter: the longest shortest path between two endpoints, in links, by
      breadth-first search (every endpoint has one link, so searching from every leaf
      over the switches is exact);
    * bisection: maximum flow (Dinic's algorithm) from one half of the endpoints to the
      other with every link carrying one port's rate each way, for the split by endpoint
      order (whole leaves and pods on each side: the worst case) and for a random
      balanced split.
    """
    kind, edges, etype = graph.kind, graph.edges, graph.edge_type
    ports = np.bincount(edges.ravel(), minlength=kind.size)
    switches = {name: int(np.sum(kind == i + 1)) for i, name in enumerate(TIER_NAMES)}
    links = {name: int(np.sum(etype == i)) for i, name in enumerate(LINK_TYPES)}
    n = int(np.sum(kind == 0))
    # switch-only adjacency for the BFS
    sw_edges = edges[etype > 0] - n
    n_sw = kind.size - n
    adj: list[list[int]] = [[] for _ in range(n_sw)]
    for a, b in sw_edges.tolist():
        adj[a].append(b)
        adj[b].append(a)
    leaves = np.unique(graph.leaf_of) - n
    worst, connected = 0, True
    for src in leaves.tolist():
        dist = _bfs(adj, src)
        reach = dist[leaves]
        if np.any(reach < 0):
            connected = False
        worst = max(worst, int(reach.max()))
    diameter = 2 + worst if n > 1 else 0
    order = np.arange(n)
    rng = np.random.default_rng(seed)
    return GraphCheck(
        switches_per_tier=switches, links_per_tier=links,
        max_ports_used=int(ports[n:].max()) if n_sw else 0, connected=connected,
        diameter_links=diameter,
        bisection_links_worst=_split_flow(graph, order[: n // 2], order[n // 2: 2 * (n // 2)]),
        bisection_links_random=_split_flow(graph, *np.split(rng.permutation(n)[: 2 * (n // 2)],
                                                              2)))


def _bfs(adj: list[list[int]], src: int) -> np.ndarray:
    dist = np.full(len(adj), -1, dtype=np.int64)
    dist[src] = 0
    queue = deque([src])
    while queue:
        x = queue.popleft()
        for y in adj[x]:
            if dist[y] < 0:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def _split_flow(graph: FabricGraph, left: np.ndarray, right: np.ndarray) -> float:
    """Max flow from the ``left`` endpoints to the ``right`` ones (unit capacity per link
    and direction). Endpoints hang on one link each, so the source feeds each leaf as many
    units as it has left endpoints, and each leaf drains its right endpoints to the sink."""
    kind, edges, etype = graph.kind, graph.edges, graph.edge_type
    n = int(np.sum(kind == 0))
    n_sw = kind.size - n
    src, sink = n_sw, n_sw + 1
    cap: dict[tuple[int, int], int] = {}
    for a, b in (edges[etype > 0] - n).tolist():
        cap[(a, b)] = cap.get((a, b), 0) + 1
        cap[(b, a)] = cap.get((b, a), 0) + 1
    for side, (s, t) in ((left, (src, None)), (right, (None, sink))):
        leaves, counts = np.unique(graph.leaf_of[side] - n, return_counts=True)
        for leaf, c in zip(leaves.tolist(), counts.tolist(), strict=True):
            key = (s, leaf) if s is not None else (leaf, t)
            cap[key] = cap.get(key, 0) + c
    return float(_dinic(n_sw + 2, cap, src, sink))


def _dinic(n_nodes: int, cap: dict[tuple[int, int], int], s: int, t: int) -> int:
    """Maximum flow by Dinic's algorithm (level graph + blocking flows)."""
    head: list[list[int]] = [[] for _ in range(n_nodes)]
    to: list[int] = []
    res: list[int] = []
    for (a, b), c in cap.items():
        head[a].append(len(to))
        to.append(b)
        res.append(c)
        head[b].append(len(to))
        to.append(a)
        res.append(0)
    level = [-1] * n_nodes
    it = [0] * n_nodes

    def push(x: int, limit: int) -> int:
        if x == t:
            return limit
        while it[x] < len(head[x]):
            e = head[x][it[x]]
            y = to[e]
            if res[e] > 0 and level[y] == level[x] + 1:
                got = push(y, min(limit, res[e]))
                if got:
                    res[e] -= got
                    res[e ^ 1] += got
                    return got
            it[x] += 1
        return 0

    flow = 0
    while True:
        level[:] = [-1] * n_nodes
        level[s] = 0
        queue = deque([s])
        while queue:
            x = queue.popleft()
            for e in head[x]:
                if res[e] > 0 and level[to[e]] < 0:
                    level[to[e]] = level[x] + 1
                    queue.append(to[e])
        if level[t] < 0:
            return flow
        it[:] = [0] * n_nodes
        while True:
            got = push(s, 1 << 60)
            if not got:
                break
            flow += got
