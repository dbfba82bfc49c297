"""Notebook 12's cluster plans: one plan with four domain sizes, and a design over four counts.

``scaleout.synthesis.cluster_plan`` for GPT-3 175B on 1,152 GB200 with domains of 8, 16, 36
and 72 GPUs (four planner searches, the fabric and its optics bill, reliability), and
``design_cluster`` over 576 to 4,608 GPUs (Llama 3 70B, 2T tokens, a 30-day deadline that the
first count meets: one plan) and with a deadline only the largest meets (four plans).
Targets: one plan under 150 ms, a four-count design under 0.5 s, so that the notebook and
the explorer stay interactive.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from scaleout import synthesis

COUNTS = (576, 1152, 2304, 4608)


def _plan() -> synthesis.ClusterPlan:
    return synthesis.cluster_plan("gpt3-175b", "GB200", 1152, 1536, 300e9,
                                  domain_sizes=(8, 16, 36, 72))


def _design(deadline_days: float) -> Callable[[], synthesis.ClusterPlan]:
    return lambda: synthesis.design_cluster("llama3-70b", "GB200", 2e12, deadline_days, 2304,
                                            COUNTS)


CASES: dict[str, tuple[Callable[[], object], float]] = {
    "cluster_plan, gpt3-175b on 1,152 GB200, domains 8/16/36/72": (_plan, 150.0),
    "design_cluster, first of 4 counts meets 30 days": (_design(30.0), 500.0),
    "design_cluster, last of 4 counts meets 4 days": (_design(4.0), 500.0),
}


def test_the_designs_are_the_ones_described() -> None:
    assert _design(30.0)().n_gpus == COUNTS[0] and _design(4.0)().n_gpus == COUNTS[-1]
    assert _plan().domains.sizes == (8, 16, 36, 72)


@pytest.mark.parametrize("name", list(CASES))
def test_cluster_plans(benchmark, name: str, results_table) -> None:
    call, target_ms = CASES[name]
    benchmark(call)
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Cluster plans (notebook 12)", ("case", "median ms", "rounds",
                                                          "target"))
    verdict = "ok" if median_ms < target_ms else "TOO SLOW"
    table.rows.append((name, f"{median_ms:.1f}", str(benchmark.stats.stats.rounds),
                       f"< {target_ms:g} ms {verdict}"))
    assert median_ms < target_ms, f"{name}: median {median_ms:.1f} ms (target {target_ms} ms)"
