"""The mechanism pictures: how long each takes to draw, and one step of the ring stepper.

Each picture of :mod:`scaleout.diagrams` is drawn with the arguments the notebooks use (at
their defaults); the stepper's step slider is moved one step at 8 GPUs, its largest ring.
Targets: a picture **under 20 ms** (so the notebooks' run time barely changes), a stepper
event **under 50 ms** (as every explorer).
"""

from __future__ import annotations

import itertools

import pytest
from scaleout import diagrams
from scaleout.widgets.diagrams import RingStepper

PICTURE_MS, STEPPER_MS = 20.0, 50.0
PICTURES = {
    "ring_all_reduce (8 GPUs, step 7)": lambda: diagrams.ring_all_reduce(8, 7),
    "tree_all_reduce (8)": lambda: diagrams.tree_all_reduce(8),
    "halving_doubling (4)": lambda: diagrams.halving_doubling(4),
    "tensor_parallel_mlp (8)": lambda: diagrams.tensor_parallel_mlp(8),
    "sequence_parallel (8)": lambda: diagrams.sequence_parallel(8),
    "zero_stages (4, GPT-3)": lambda: diagrams.zero_stages(4, 174_600_000_000),
    "pipeline_stages (96 layers, 8 × 2)": lambda: diagrams.pipeline_stages(96, 8, 2),
    "node (H100)": lambda: diagrams.node(),
    "rail_optimised (4 × 8)": lambda: diagrams.rail_optimised(),
    "multi_plane (4 planes)": lambda: diagrams.multi_plane(),
    "super_node (CloudMatrix384)": lambda: diagrams.super_node("CloudMatrix384"),
    "transceivers (800G)": lambda: diagrams.transceivers(800),
}


@pytest.mark.parametrize("name", list(PICTURES))
def test_picture(benchmark, name: str, results_table) -> None:
    svg = benchmark(PICTURES[name])
    assert svg.startswith("<svg")
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Pictures: one drawing", ("picture", "median ms", "KB", "target"))
    verdict = "ok" if median_ms < PICTURE_MS else "TOO SLOW"
    table.rows.append((name, f"{median_ms:.2f}", f"{len(svg) / 1e3:.1f}",
                       f"< {PICTURE_MS:.0f} ms {verdict}"))
    assert median_ms < PICTURE_MS


def test_ring_stepper_step(benchmark, results_table) -> None:
    stepper = RingStepper(n=8, step=6)
    steps = itertools.cycle([7, 6])
    benchmark(lambda: setattr(stepper.controls["step"], "value", next(steps)))
    assert stepper.error is None
    median_ms = benchmark.stats.stats.median * 1e3
    table = results_table("Pictures: one drawing", ("picture", "median ms", "KB", "target"))
    verdict = "ok" if median_ms < STEPPER_MS else "TOO SLOW"
    table.rows.append(("RingStepper: one step (8 GPUs)", f"{median_ms:.2f}",
                       f"{len(stepper.figure.value) / 1e3:.1f}",
                       f"< {STEPPER_MS:.0f} ms {verdict}"))
    assert median_ms < STEPPER_MS
