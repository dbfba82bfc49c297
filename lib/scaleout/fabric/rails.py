"""Rail-optimised wiring: GPU ``i`` of every node on rail ``i``'s leaf switches.

NVIDIA's DGX SuperPOD reference designs are wired this way; traffic between same-index
GPUs (the inter-node phase of a hierarchical all-reduce, and with NCCL's PXN nearly all
inter-node traffic) then crosses one switch within a group of nodes. A **rail-only**
network drops the spines and sends cross-rail traffic over NVLink first (Wang et al.
2023, "Rail-only: A Low-Cost High-Performance Network for Training LLMs with Trillion
Parameters", arXiv 2307.12169).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import check_int, check_positive
from .clos import _ceil_div, _smallest_divisor_at_least, check_radix, leaf_split
from .planes import MultiPlaneDesign, size_multiplane


@dataclass(frozen=True)
class RailDesign:
    """A rail-optimised two-tier fabric: GPU ``i`` of every node on rail ``i``'s leaves.

    Nodes are grouped ``nodes_per_group`` at a time (one leaf's downlinks); each group
    has one leaf per rail, so the ``rails`` GPUs of a node sit on ``rails`` different
    leaves and the same-index GPUs of a group share one. Spines join the leaves for
    traffic between groups or rails (:attr:`spines`); a **rail-only** network
    (Wang et al. 2023, "Rail-only: A Low-Cost High-Performance Network for Training
    LLMs with Trillion Parameters", arXiv 2307.12169) drops them and sends cross-rail
    traffic over NVLink first, each rail then being its own fabric (:attr:`rail_only`).
    """

    n_nodes: int
    rails: int
    radix: int
    port_gbps: float
    oversubscription: float
    nodes_per_group: int
    groups: int
    leaves: int
    spines: int
    rail_only: MultiPlaneDesign

    @property
    def gpus(self) -> int:
        """GPUs (NICs) joined."""
        return self.n_nodes * self.rails

    @property
    def switches(self) -> int:
        """Leaves and spines of the rail-optimised fabric."""
        return self.leaves + self.spines

    @property
    def same_rail_one_hop(self) -> bool:
        """True when each rail fits on one leaf: same-index GPUs of all nodes one switch apart."""
        return self.groups == 1

    def leaf_of(self, node: int, gpu: int) -> int:
        """The leaf switch GPU ``gpu`` of ``node`` is cabled to: ``group · rails + gpu``.

        Leaves are numbered group by group, one per rail in each group; node ``n`` is in
        group ``n // nodes_per_group``. Every leaf sends its uplinks to all :attr:`spines`.
        """
        node = check_int("node", node, minimum=0, maximum=self.n_nodes - 1)
        gpu = check_int("gpu", gpu, minimum=0, maximum=self.rails - 1)
        return node // self.nodes_per_group * self.rails + gpu

    @property
    def one_hop_fraction(self) -> float:
        """Share of a GPU's peers in other nodes that sit one switch away (same rail, same group).

        Averaged over GPUs; the rest cross a spine, or NVLink then the destination's rail.
        """
        if self.n_nodes < 2:
            return 0.0
        sizes = np.full(self.groups, self.nodes_per_group)
        sizes[-1] = self.n_nodes - (self.groups - 1) * self.nodes_per_group
        mates = float(np.sum(sizes * (sizes - 1))) / self.n_nodes
        return mates / ((self.n_nodes - 1) * self.rails)


def rail_max_nodes(gpus_per_node: int, radix: int, oversubscription: float = 1.0) -> int:
    """The most nodes a rail-optimised two-tier fabric serves: ``⌊k / rails⌋ · d``.

    Each group of ``d`` nodes (one leaf's downlinks) takes one leaf per rail, and a spine
    reaches at most ``k`` leaves.
    """
    g = check_int("gpus_per_node", gpus_per_node)
    k = check_radix(radix)
    return k // g * leaf_split(k, oversubscription)[0]


def rail_layout(n_nodes: int, gpus_per_node: int, radix: int, port_gbps: float = 400.0,
                oversubscription: float = 1.0) -> RailDesign:
    """A rail-optimised two-tier layout of ``n_nodes`` nodes with ``gpus_per_node`` NICs each.

    What stays within a rail: traffic between same-index GPUs, such as the inter-node
    phase of a hierarchical all-reduce (each local rank all-reduces its shard with the
    same rank of every other node; :func:`scaleout.collectives.hierarchical_all_reduce_time`)
    and, with NCCL's PXN (a hop over NVLink to the GPU on the destination's rail), nearly
    all inter-node traffic. Within a group of ``nodes_per_group`` nodes it crosses one
    switch instead of three. NVIDIA's DGX SuperPOD reference designs are built this way.
    """
    nodes = check_int("n_nodes", n_nodes)
    g = check_int("gpus_per_node", gpus_per_node)
    k = check_radix(radix)
    speed = check_positive("port_gbps", port_gbps)
    d, u = leaf_split(k, oversubscription)
    groups = int(_ceil_div(nodes, d))
    leaves = g * groups
    if leaves > k:
        raise ValueError(f"n_nodes={nodes:,} with {g} rails needs {leaves:,} leaves, more than "
                         f"a radix-{k} spine reaches ({k}); a rail-optimised two-tier fabric "
                         f"serves at most {rail_max_nodes(g, k, oversubscription):,} nodes here")
    spines = int(_smallest_divisor_at_least(u, _ceil_div(leaves * u, k)))
    rail_only = size_multiplane(nodes, speed * g, g, radix=k, oversubscription=oversubscription)
    return RailDesign(n_nodes=nodes, rails=g, radix=k, port_gbps=speed,
                      oversubscription=float(oversubscription), nodes_per_group=min(d, nodes),
                      groups=groups, leaves=leaves, spines=spines, rail_only=rail_only)
