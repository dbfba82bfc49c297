"""Congestion and load balancing: the simulations behind notebook 09's sections 8 and 10.

Targets (2-core reference machine): one incast (16 senders × 2 MB to a 400G port, a 32 MB
victim) under each of PFC, DCQCN and receiver credits, and the largest the explorer allows
(128 senders × 32 MB at 800G), each under 30 ms; the load-balancing simulation (five
schemes) at its largest explorer shape, 16 paths and 128 flows, with the explorer's 150 trials
under 10 ms and with the default 2,000 trials under 100 ms.
"""

from __future__ import annotations

import pytest
from scaleout import congestion, fabric

TARGET_INCAST_S = 0.030
TARGET_BALANCE_S = {150: 0.010, 2000: 0.100}

CASES = {
    "16 senders × 2 MB, 400G, 32 MB victim": dict(senders=16, message_bytes=2e6,
                                                  victim_bytes=32e6, link_gbps=400),
    "128 senders × 32 MB, 800G, 32 MB victim": dict(senders=128, message_bytes=32e6,
                                                    victim_bytes=32e6, link_gbps=800),
}


@pytest.mark.parametrize("mechanism", congestion.MECHANISMS)
@pytest.mark.parametrize("case", list(CASES))
def test_incast(benchmark, results_table, case: str, mechanism: str) -> None:
    kw = dict(CASES[case])
    senders = kw.pop("senders")
    run = benchmark(congestion.simulate_incast, senders, mechanism, **kw)
    assert run.incast_s >= run.ideal_incast_s * (1 - 1e-9)
    median_s = benchmark.stats.stats.median
    table = results_table("Congestion", ("case", "median ms", "target"))
    verdict = "ok" if median_s < TARGET_INCAST_S else "TOO SLOW"
    table.rows.append((f"incast, {mechanism}: {case}", f"{median_s * 1e3:.1f}",
                       f"< {TARGET_INCAST_S * 1e3:.0f} ms {verdict}"))
    assert median_s < TARGET_INCAST_S


@pytest.mark.parametrize("trials", sorted(TARGET_BALANCE_S))
def test_load_balance(benchmark, results_table, trials: int) -> None:
    run = benchmark(fabric.simulate_load_balance, 128, 16, path_slowdown=0.1, slow_paths=2,
                    trials=trials)
    assert run.spray_mean >= run.rr_mean
    median_s = benchmark.stats.stats.median
    target = TARGET_BALANCE_S[trials]
    table = results_table("Congestion", ("case", "median ms", "target"))
    verdict = "ok" if median_s < target else "TOO SLOW"
    table.rows.append((f"load balancing: 16 paths, 128 flows, {trials:,} trials, five schemes",
                       f"{median_s * 1e3:.1f}", f"< {target * 1e3:.0f} ms {verdict}"))
    assert median_s < target
