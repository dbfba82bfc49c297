"""Fabric: sizing the headline two-tier fabric with its optics bill, and the graph check.

Targets (2-core reference machine): 131,072 GPUs with 800G NICs as four 200G planes on
102.4 Tb/s (radix-512) switches, two tiers, sized (fabric.size_multiplane) and priced
(scaleout.optics.fabric_bill over its link groups) in under 10 ms; the k = 16 three-tier fat tree
(1,024 endpoints, 320 switches, 3,072 links) wired and checked (counts, ports, BFS diameter,
two max-flow bisections) in under 2 s.
"""

from __future__ import annotations

import pytest
from scaleout import fabric, optics

TARGET_BILL_S = 0.010
TARGET_GRAPH_S = 2.0


def size_and_bill():
    design = fabric.size_multiplane(131_072, 800, 4, switch_gbps=102_400)
    return design, optics.fabric_bill(design.link_groups())


def build_and_check():
    design = fabric.size_fabric(1_024, 16, 100, tiers=3)
    return design, fabric.check_graph(fabric.build_graph(design))


def test_size_and_bill_131072(benchmark, results_table) -> None:
    design, bill = benchmark(size_and_bill)
    assert design.plane.radix == 512 and design.plane.tiers == 2 and design.endpoints == 131_072
    assert bill.links == design.links
    median_s = benchmark.stats.stats.median
    table = results_table("Fabric", ("case", "median ms", "target"))
    verdict = "ok" if median_s < TARGET_BILL_S else "TOO SLOW"
    table.rows.append(("131,072 GPUs, 4 x 200G planes, radix 512, two tiers + optics bill",
                       f"{median_s * 1e3:.3f}", f"< {TARGET_BILL_S * 1e3:.0f} ms {verdict}"))
    assert median_s < TARGET_BILL_S


def test_graph_k16_three_tiers(benchmark, results_table) -> None:
    design, check = benchmark.pedantic(build_and_check, rounds=5, iterations=1)
    assert check.switches_per_tier == design.switches_per_tier and check.connected
    assert check.bisection_links_worst == pytest.approx(design.bisection_links)
    median_s = benchmark.stats.stats.median
    table = results_table("Fabric", ("case", "median ms", "target"))
    verdict = "ok" if median_s < TARGET_GRAPH_S else "TOO SLOW"
    table.rows.append(("k = 16 fat tree: build + check the graph", f"{median_s * 1e3:.1f}",
                       f"< {TARGET_GRAPH_S * 1e3:.0f} ms {verdict}"))
    assert median_s < TARGET_GRAPH_S
