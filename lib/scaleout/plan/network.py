"""The network a plan runs on, and the cost of the collectives it calls.

A plan's GPUs sit in nodes (NVLink domains) joined by a network: a
:class:`~scaleout.collectives.NodeNetwork`. The planner derates both links to the
calibrated share of their line rate and asks :mod:`scaleout.collectives` for each
collective's time; since the α-β model is linear in the size, one collective's cost is
kept as ``(seconds at 0 bytes, seconds per byte)`` and cached.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import catalog, collectives
from ..catalog import GPU
from ..checks import check_int
from ..collectives import AlphaBeta, NodeNetwork

__all__ = ["CollectiveModel", "Links", "collective_model", "default_network", "derated_links",
           "dp_ranks_per_node", "linear_cost"]


def default_network(gpu: str | GPU, gpus_per_node: int | None = None,
                    inter: str | None = None) -> NodeNetwork:
    """The GPU's usual server: its scale-up link inside a node, its network port between nodes.

    ``gpus_per_node`` (the NVLink domain) defaults to the GPU's ``scaleup_domain_gpus``
    (8 for an HGX board, 72 for a GB200 NVL72 rack), ``inter`` to its
    ``scaleout_link`` (``data/gpus.toml``).
    """
    g = catalog.gpu(gpu)
    intra = _scaleup_link(g)
    if inter is None:
        if g.scaleout_link is None:
            raise ValueError(f"gpu {g.name!r} has no usual network port recorded in "
                             f"data/gpus.toml (field scaleout_link): choose a network port for "
                             f"it (inter=<a scale-out link of data/links.toml>)")
        inter = g.scaleout_link
    nodes = g.scaleup_domain_gpus if gpus_per_node is None else gpus_per_node
    return NodeNetwork(intra=intra, inter=inter, gpus_per_node=check_int("gpus_per_node", nodes))


def _scaleup_link(g: GPU):
    """The catalog link of a GPU's scale-up fabric, or an α-β link from its datasheet figure."""
    try:
        return catalog.link(g.scaleup_link)
    except ValueError:
        return AlphaBeta(0.5e-6, g.scaleup_gbytes_s * 1e9)


def _derate(link, efficiency: float) -> AlphaBeta:
    ab = link if isinstance(link, AlphaBeta) else AlphaBeta(link.latency_s,
                                                             link.bandwidth_bytes_s)
    return AlphaBeta(ab.latency_s, ab.bandwidth_bytes_s * efficiency)


@dataclass(frozen=True)
class Links:
    """The two derated links and how collectives cross nodes (what a collective's time needs)."""

    intra: AlphaBeta
    inter: AlphaBeta
    hierarchical: bool
    inter_algorithm: str


def derated_links(network: NodeNetwork, efficiency: float) -> Links:
    """``network``'s links at ``efficiency`` of their line rate (latency unchanged)."""
    return Links(_derate(network.intra, efficiency), _derate(network.inter, efficiency),
                 network.hierarchical, network.inter_algorithm)


def _group_time(links: Links, op: str, size_bytes: np.ndarray, n: int, per_node: int) -> Any:
    """One collective over ``n`` GPUs, ``per_node`` of them in each node."""
    if n == 1:
        return np.zeros_like(size_bytes)
    if per_node >= n:
        return collectives.collective_time(op, size_bytes, n, links.intra)
    if per_node > 1 and n % per_node == 0:
        fab = NodeNetwork(links.intra, links.inter, per_node, links.hierarchical,
                     links.inter_algorithm)
        return fab.time(op, size_bytes, n)
    return collectives.collective_time(op, size_bytes, n, links.inter, links.inter_algorithm)


@functools.lru_cache(maxsize=4096)
def linear_cost(links: Links, op: str, n: int, per_node: int) -> tuple[float, float]:
    """``(seconds at 0 bytes, seconds per byte)`` of one collective over ``n`` GPUs,
    ``per_node`` of them in each node: the α-β model is linear in the size, so two
    evaluations give every size (cached: a search asks for few groups)."""
    t0, t1 = np.asarray(_group_time(links, op, np.array([0.0, 1e9]), n, per_node), dtype=float)
    return float(t0), float((t1 - t0) / 1e9)


def dp_ranks_per_node(dp: np.ndarray, room: np.ndarray) -> np.ndarray:
    """Ranks of a data-parallel group that share a node: the largest divisor of ``dp`` that is
    at most ``room`` (the data-parallel ranks a node has room for, ``gpus_per_node // tp``),
    so the group splits into whole per-node parts for the hierarchical collectives."""
    dp = np.asarray(dp, dtype=np.int64)
    key = dp * 65536 + np.broadcast_to(np.asarray(room, dtype=np.int64), dp.shape)
    uniq, inverse = np.unique(key, return_inverse=True)
    best = [max(k for k in range(1, min(d, r) + 1) if d % k == 0)
            for d, r in zip((uniq // 65536).tolist(), (uniq % 65536).tolist(), strict=True)]
    return np.asarray(best, dtype=np.int64)[inverse.reshape(dp.shape)]


def by_value(keys: np.ndarray, fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn(key, *arrays[mask])`` for each distinct key, assembled into one array.

    The collectives take one group size at a time; a search has a handful of distinct
    sizes, so this is a few calls, not one per plan.
    """
    out = np.zeros(keys.shape, dtype=float)
    for key in np.unique(keys):
        mask = keys == key
        out[mask] = fn(key, *(a[mask] for a in arrays))
    return out


@dataclass(frozen=True)
class CollectiveModel:
    """How the planner prices one collective: NCCL's model, or the α-β model of notebook 07.

    ``nccl`` uses :func:`scaleout.nccl.collective_time` with the network's derated bandwidths
    (NCCL's own latencies, its algorithm choice); it needs catalog links. A network given as
    measured α-β pairs (``AlphaBeta``: a calibrated network file) is priced as measured, with
    the hierarchical α-β model.
    """

    links: Links
    nccl: bool
    generation: str
    nvls: bool
    intra_hw: str

    def time(self, op: str, size_bytes, n: int, per_node: int, *,
             node_aggregate: bool = True) -> np.ndarray:
        """Seconds of ``op`` on ``size_bytes`` (an array) over ``n`` GPUs, ``per_node`` of
        them in each node (``node_aggregate``: see :func:`scaleout.nccl.collective_time`)."""
        size = np.asarray(size_bytes, dtype=float)
        if n == 1:
            return np.zeros_like(size)
        if not self.nccl:
            alpha, per_byte = linear_cost(self.links, op, n, per_node)
            return alpha + per_byte * size
        from .. import nccl

        return np.asarray(nccl.times(
            op, size, n, per_node, self.links.intra.bandwidth_bytes_s / 1e9,
            self.links.inter.bandwidth_bytes_s / 1e9, self.generation, self.intra_hw,
            nvls=self.nvls, node_aggregate=node_aggregate,
            net_latency_us=self.links.inter.latency_s * 1e6, names=False).seconds)

    def seconds(self, op: str, size_bytes: np.ndarray, n: np.ndarray, per_node: np.ndarray, *,
                node_aggregate: bool = True) -> np.ndarray:
        """:meth:`time` for many plans at once: arrays of sizes, group sizes and ranks per
        node (NCCL's model over arrays, :func:`scaleout.nccl.seconds`; the α-β model per
        distinct group)."""
        size = np.asarray(size_bytes, dtype=float)
        n = np.broadcast_to(np.asarray(n, dtype=np.int64), size.shape)
        per_node = np.broadcast_to(np.asarray(per_node, dtype=np.int64), size.shape)
        if not self.nccl:
            return by_value(n * 65536 + per_node, lambda k, s, d, pn: self.time(
                op, s, int(d[0]), int(pn[0])), size, n, per_node)
        from .. import nccl

        return nccl.seconds(
            op, size, n, per_node, self.links.intra.bandwidth_bytes_s / 1e9,
            self.links.inter.bandwidth_bytes_s / 1e9, self.generation, self.intra_hw,
            nvls=self.nvls, node_aggregate=node_aggregate,
            net_latency_us=self.links.inter.latency_s * 1e6)


def collective_model(network: NodeNetwork, links: Links, gpu: GPU,
                     use_nccl: bool) -> CollectiveModel:
    """The :class:`CollectiveModel` of a network for a framework that runs NCCL (or not)."""
    from .. import nccl

    measured = not all(isinstance(x, catalog.Link) for x in (network.intra, network.inter))
    intra_hw = ("pci" if isinstance(network.intra, catalog.Link) and network.intra.scope == "host"
                else "nvlink")
    return CollectiveModel(links, use_nccl and not measured, nccl.generation(gpu.architecture),
                           nccl.has_nvls(gpu), intra_hw)
