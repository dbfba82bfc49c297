"""The pipeline simulator at scale, and the pipeline explorer at its largest.

* ``scaleout.pipeline.simulate`` with p = 64 stages, m = 512 micro-batches (and v = 4
  chunks when interleaved: 262,144 passes). Target: median under 0.2 s on the 2-core
  reference machine, so a notebook can sweep schedules freely.
* One event of the explorer of notebook 05 at the largest schedule its sliders allow
  (16 stages, 64 micro-batches, 4 chunks: 8,192 passes drawn as SVG), toggling the send
  time. Target: median under 50 ms, like every explorer (bench_widgets.py).
* One event of the memory-per-rank explorer at 32 stages (an evaluate and 32 stacked bars as
  SVG). Target: the same 50 ms.
"""

from __future__ import annotations

import itertools

import pytest
from scaleout import pipeline
from scaleout.widgets.pipeline import MAX_M, MAX_P, MAX_V, PipelineExplorer

SIMULATE_TARGET_S = 0.2
EVENT_TARGET_MS = 50.0
TITLE = "Pipeline: simulator and explorer"
HEADER = ("case", "passes", "median ms", "rounds", "target")


def _row(results_table, benchmark, case: str, passes: int, target_ms: float) -> float:
    median_ms = benchmark.stats.stats.median * 1e3
    verdict = "ok" if median_ms < target_ms else "TOO SLOW"
    results_table(TITLE, HEADER).rows.append(
        (case, f"{passes:,}", f"{median_ms:.1f}", str(benchmark.stats.stats.rounds),
         f"< {target_ms:.0f} ms {verdict}"))
    return median_ms


@pytest.mark.parametrize(("schedule", "v"), [("interleaved", 4), ("1f1b", 1), ("zb-h1", 1)])
def test_simulate_p64_m512(benchmark, results_table, schedule: str, v: int) -> None:
    timeline = benchmark(pipeline.simulate, schedule, 64, 512, v, transfer_s=1e-4)
    assert timeline.n_tasks == (3 if schedule == "zb-h1" else 2) * 64 * 512 * v
    median_ms = _row(results_table, benchmark, f"simulate {schedule} p=64 m=512 v={v}",
                     timeline.n_tasks, SIMULATE_TARGET_S * 1e3)
    assert median_ms < SIMULATE_TARGET_S * 1e3, f"median {median_ms:.0f} ms"


def test_explorer_event_at_slider_maximum(benchmark, results_table) -> None:
    explorer = PipelineExplorer(schedule="interleaved", p=MAX_P, m=MAX_M, v=MAX_V)
    assert explorer.error is None
    values = itertools.cycle([0.05, 0.0])
    control = explorer.controls["p2p_ms"]

    def event() -> None:
        control.value = next(values)

    benchmark(event)
    assert explorer.error is None
    median_ms = _row(results_table, benchmark, "explorer event, interleaved 16 x 64 x 4",
                     explorer.result.n_tasks, EVENT_TARGET_MS)
    assert median_ms < EVENT_TARGET_MS, f"median {median_ms:.1f} ms per event"


def test_rank_memory_explorer_event_at_32_stages(benchmark, results_table) -> None:
    """The memory-per-rank explorer redraws every rank of a 32-stage plan: one evaluate and
    an SVG of 32 stacked bars per event."""
    from scaleout.widgets.pipeline import StageMemoryExplorer

    explorer = StageMemoryExplorer(model="gpt3-175b", gpu="A100-SXM4-80GB", pp=32, dp=2,
                                   global_batch=64)
    assert explorer.error is None
    values = itertools.cycle([1, 2])
    control = explorer.controls["micro_batch"]

    def event() -> None:
        control.value = next(values)

    benchmark(event)
    assert explorer.error is None and len(explorer.result.stages) == 32
    median_ms = _row(results_table, benchmark, "memory-per-rank explorer event, 32 stages",
                     32, EVENT_TARGET_MS)
    assert median_ms < EVENT_TARGET_MS, f"median {median_ms:.1f} ms per event"
