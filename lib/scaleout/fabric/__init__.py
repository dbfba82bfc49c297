"""Fabric: Clos (leaf-spine, fat-tree) networks of radix-k switches, planes and rails.

A **Clos network** joins endpoints (GPUs' network ports) through tiers of identical
switches so that every pair has many equal-cost paths (Clos 1953); its three-tier form
is the k-ary fat tree of Al-Fares, Loukissas & Vahdat 2008 (SIGCOMM, Sec. 3). Sized
from the switch's radix ``k``, the tiers and the leaf's **oversubscription**, it gives
switches, links, optics link groups, bisection and hops in closed form
(:func:`size_fabric`, :func:`fabric_sweep`).

**Planes.** A NIC with ``P`` ports joins ``P`` independent Clos planes, one port each,
so a switch chip of fixed capacity has ``P`` times the radix (:func:`radix_at`,
:func:`size_multiplane`): two tiers of a 102.4 Tb/s chip at 200 Gb/s reach 131,072
endpoints. **Rails.** In a rail-optimised layout GPU ``i`` of every node connects to
rail ``i``'s leaf switches (:func:`rail_layout`). **Traffic.** ECMP hashes whole flows
onto equal-cost paths and collides; spraying a stream's packets over all paths (or
planes) does not, at the price of reordering at the receiver
(:func:`simulate_load_balance`, :func:`simulate_reordering`). For small radixes
:func:`build_graph` wires the actual topology and :func:`check_graph` measures it, which
the tests compare with the closed forms.

The package (every name below is importable from ``scaleout.fabric``)
---------------------------------------------------------------------
==============  ===========================================================
``clos``        tiers, radix, oversubscription; :func:`size_fabric`,
                :class:`ClosDesign`, :func:`fabric_sweep`; shared constants
``switches``    switch chips of ``data/switches.toml``: :func:`switch_chip`
``planes``      :func:`size_multiplane`, :class:`MultiPlaneDesign`
``rails``       :func:`rail_layout`, :class:`RailDesign`
``graph``       :func:`build_graph`, :func:`check_graph` (BFS, max-flow)
``traffic``     ECMP vs spraying vs flowlets; reordering at the receiver
``transports``  RDMA / TCP measurements; :func:`fabric_alpha`,
                :func:`collective_latency_term`
==============  ===========================================================

Each module's docstring names its sources. Bandwidths are per direction unless a name
ends in ``_bidir``. Taught in ``notebooks/09_clos_fabrics.ipynb``.
"""

from __future__ import annotations

from .clos import (
    DEFAULT_COPPER_MAX_M,
    DEFAULT_LENGTHS_M,
    DEFAULT_SWITCH_LATENCY_NS,
    FIBRE_NS_PER_M,
    LINK_TYPES,
    TIER_NAMES,
    TIERS,
    ClosDesign,
    FabricSweep,
    LinkGroup,
    check_radix,
    fabric_sweep,
    leaf_split,
    max_endpoints,
    radix_at,
    size_fabric,
)
from .graph import FabricGraph, GraphCheck, build_graph, check_graph
from .planes import MultiPlaneDesign, size_multiplane
from .rails import RailDesign, rail_layout, rail_max_nodes
from .switches import SwitchChip, switch_chip, switch_chips
from .switches import _switch_chips as _switch_chips  # the table the lookup tests read
from .traffic import (
    LoadBalanceResult,
    ReorderResult,
    ecmp_expected_utilisation,
    load_balance_sweep,
    reorder_buffer_bytes,
    simulate_load_balance,
    simulate_reordering,
)
from .transports import (
    TRANSPORT_UNITS,
    TRANSPORTS,
    TransportMeasurement,
    collective_latency_term,
    fabric_alpha,
    transport_measurements,
)

__all__ = [
    "DEFAULT_COPPER_MAX_M",
    "DEFAULT_LENGTHS_M",
    "DEFAULT_SWITCH_LATENCY_NS",
    "FIBRE_NS_PER_M",
    "LINK_TYPES",
    "TIERS",
    "TIER_NAMES",
    "TRANSPORTS",
    "TRANSPORT_UNITS",
    "ClosDesign",
    "FabricGraph",
    "FabricSweep",
    "GraphCheck",
    "LinkGroup",
    "LoadBalanceResult",
    "MultiPlaneDesign",
    "RailDesign",
    "ReorderResult",
    "SwitchChip",
    "TransportMeasurement",
    "build_graph",
    "check_graph",
    "check_radix",
    "collective_latency_term",
    "ecmp_expected_utilisation",
    "fabric_alpha",
    "fabric_sweep",
    "leaf_split",
    "load_balance_sweep",
    "max_endpoints",
    "radix_at",
    "rail_layout",
    "rail_max_nodes",
    "reorder_buffer_bytes",
    "simulate_load_balance",
    "simulate_reordering",
    "size_fabric",
    "size_multiplane",
    "switch_chip",
    "switch_chips",
    "transport_measurements",
]
