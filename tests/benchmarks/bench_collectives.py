"""Calibration: reading the six shipped nccl-tests logs and fitting α and β to them.

Notebook 07 and its explorer parse and fit every shipped log; a lecturer switching the
explorer's link to "fit: <log>" pays one parse and one fit. Targets (2-core reference
machine): all six logs parsed and fitted (robust IRLS) in under 0.5 s; one log in under
0.1 s, so the first switch to a fitted link stays within a live event's budget.
"""

from __future__ import annotations

import pytest
from scaleout import calibration

TARGET_ALL_S = 0.5
TARGET_ONE_S = 0.1
SLOWEST = "nvidia_h100_16gpu_2node_ib_all_reduce"  # 16 ranks, 32 sizes: the longest log


def parse_and_fit(names: list[str]) -> list[calibration.AlphaBetaFit]:
    """Parse each named log and fit the default (robust ring) model to it."""
    return [calibration.fit_log(calibration.load_log(name)) for name in names]


@pytest.mark.parametrize(("label", "names", "target"), [
    ("all six logs", None, TARGET_ALL_S),
    ("one log (16 ranks)", [SLOWEST], TARGET_ONE_S),
])
def test_parse_and_fit(benchmark, results_table, label, names, target) -> None:
    names = names or calibration.log_names()
    fits = benchmark(parse_and_fit, names)
    assert len(fits) == len(names) and all(f.bandwidth_bytes_s > 0 for f in fits)
    median_s = benchmark.stats.stats.median
    table = results_table("Calibration: parse + robust fit of shipped nccl-tests logs",
                          ("logs", "median ms", "target"))
    verdict = "ok" if median_s < target else "TOO SLOW"
    table.rows.append((label, f"{median_s * 1e3:.1f}", f"< {target * 1e3:.0f} ms {verdict}"))
    assert median_s < target, f"{label}: median {median_s * 1e3:.1f} ms (target {target * 1e3} ms)"
