"""Sweeps of the parallelism models (notebooks 03, 04, 06): one call as a notebook cell makes it.

Each case is a sweep a figure or an explorer redraw runs: a weak-scaling curve of 17 GPU
counts, the bucket-size sweep (one vectorised call), a tensor-parallel sweep over t = 1..64,
the four ZeRO stages' communication and ZeRO Table 1. Target: median under 10 ms each, so
that an explorer drawing five such curves stays well under its 50 ms per event.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scaleout import data_parallel, tensor_parallel, zero
from scaleout.collectives import NodeNetwork

TARGET_MS = 10.0
GRADS = data_parallel.gradient_bytes(1.56e9)

CASES: dict[str, Callable[[], object]] = {
    "data_parallel.weak_scaling, 17 GPU counts": lambda: data_parallel.weak_scaling(
        "gpt2-1.5b", [2**k for k in range(17)], fabric=NodeNetwork()),
    "data_parallel.exposed_comm_time, 40 bucket sizes": lambda: data_parallel.exposed_comm_time(
        GRADS, np.logspace(5, np.log10(GRADS), 40), 0.14, 1024, NodeNetwork()),
    "tensor_parallel.tp_sweep, t = 1..64": lambda: tensor_parallel.tp_sweep(
        "gpt3-175b", [1, 2, 4, 8, 16, 32, 64]),
    "zero.zero_comm, stages 0-3": lambda: [zero.zero_comm(175e9, z, 1024) for z in range(4)],
    "zero.zero_memory_table, Table 1 (3 x 6 x 3)": lambda: [
        zero.zero_memory_table(p, [1, 4, 16, 64, 256, 1024], (1, 2, 3))
        for p in (7.5e9, 128e9, 1e12)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_parallel_sweep(benchmark, name: str, results_table) -> None:
    benchmark(CASES[name])
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Parallelism sweeps: one library call",
                          ("sweep", "median ms", "rounds", "target"))
    verdict = "ok" if median_ms < TARGET_MS else "TOO SLOW"
    table.rows.append((name, f"{median_ms:.2f}", str(benchmark.stats.stats.rounds),
                       f"< {TARGET_MS:.0f} ms {verdict}"))
    assert median_ms < TARGET_MS, f"{name}: median {median_ms:.1f} ms (target {TARGET_MS} ms)"
