"""The lab's explorer (notebook 15): pick a sharding and a mesh, see what XLA compiled.

For the lab's small GPT (a MoE layer for expert parallelism) on the JAX devices of this
process: the collectives of one training step as XLA's SPMD partitioner inserted them,
next to the workbook's formulas (:func:`scaleout.lab.compare.compare_collectives`), and
the model state per device (:func:`scaleout.lab.compare.compare_memory`). A layout seen
once is compiled once (:func:`scaleout.lab.engine.compile_step` keeps it); a new one takes
seconds to compile, then is instant. Bytes per step by kind are an SVG bar chart.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import svgchart
from ..lab import compare, engine, shardings
from ..lab.devices import jax_module, use_devices
from ..lab.model import LabModel
from .common import Explorer

__all__ = ["KIND_COLORS", "ShardingExplorer"]

#: Colours of the collective kinds in the chart.
KIND_COLORS = {"all-reduce": "#1f77b4", "reduce-scatter": "#2ca02c", "all-gather": "#ff7f0e",
               "all-to-all": "#9467bd", "collective-permute": "#8c564b"}
_WIDE = {"style": {"description_width": "80px"}, "layout": W.Layout(width="300px")}
_KIB = 1024
#: Devices the explorer asks JAX for when nothing has imported JAX yet.
DEFAULT_DEVICES = 8
_CHART_WIDTH = 640


def _meshes(n_devices: int) -> list[str]:
    """Every ``"data × model"`` mesh whose device count divides ``n_devices``."""
    return [f"{d} × {k // d}" for k in range(1, n_devices + 1) if n_devices % k == 0
            for d in range(1, k + 1) if k % d == 0]


class ShardingExplorer(Explorer):
    """Collectives and memory of one compiled training step, per sharding and mesh.

    Controls: ``sharding`` (:data:`scaleout.lab.shardings.SHARDINGS`) and ``mesh``
    (``"data × model"`` devices). If JAX is not imported yet, the explorer asks for
    :data:`DEFAULT_DEVICES` CPU devices first. ``dense`` and ``moe`` are the models (``ep`` uses
    ``moe``); ``result`` is the :class:`scaleout.lab.engine.CompiledStep`, ``rows`` its
    :class:`~scaleout.lab.compare.CollectiveRow` s.
    """

    title = "What did the compiler insert? Collectives and memory of a sharded step"

    def __init__(self, dense: LabModel | None = None, moe: LabModel | None = None,
                 **initial: Any) -> None:
        self.dense = dense or LabModel()
        self.moe = moe or LabModel(n_experts=8)
        if "jax" not in sys.modules:  # nobody asked for devices yet: the lab's default
            use_devices(DEFAULT_DEVICES)
        self.n_devices = len(jax_module().devices("cpu"))
        super().__init__(**initial)
        # the table of traffic needs the width: the chart above it, not beside it
        header, controls, status, _row = self.view.children
        self.view.children = (header, controls, status, self.image, self.readout)
        self.image.layout.width = f"{_CHART_WIDTH}px"  # its own size, not the column's

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        meshes = _meshes(self.n_devices)
        return {
            "sharding": W.Dropdown(options=[(f"{k}: {v.split(':')[0]}", k)
                                            for k, v in shardings.SHARDINGS.items()],
                                   value="tp", description="sharding", **_WIDE),
            "mesh": W.Dropdown(options=meshes, value=next(
                                   (m for m in ("1 × 4", "1 × 2") if m in meshes), meshes[-1]),
                               description="mesh", **_WIDE),
        }

    # -- library calls only -----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> engine.CompiledStep:
        m = self.moe if v["sharding"] == "ep" else self.dense
        layout = shardings.check_layout(m, v["sharding"], v["mesh"], self.n_devices)
        step = engine.compile_step(m, layout)
        self.rows = compare.compare_collectives(step)
        self.memory_rows = compare.compare_memory(step)
        return step

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, step: engine.CompiledStep) -> str:
        formula: dict[str, float] = {}
        for r in self.rows:
            if r.formula_bytes is not None:
                formula[r.kind] = formula.get(r.kind, 0.0) + r.formula_bytes / _KIB
        measured = {k: row["size_bytes"] / _KIB for k, row in step.by_kind.items()}
        kinds = {k: c for k, c in KIND_COLORS.items() if k in formula or k in measured}
        self.image.value = svgchart.stacked_hbars(
            {"formulas": formula, "compiled": measured}, kinds or KIND_COLORS,
            xlabel="KiB per device and training step (nccl-tests sizes)",
            title=f"{step.layout.label}", width=_CHART_WIDTH, row_height=40)
        body = "".join(
            f"<tr><th>{html.escape(row[0])}</th><td>{html.escape(row[2])}</td>"
            f"<td>{html.escape(row[3])}</td><td>{html.escape(row[4])}</td></tr>"
            for row in compare.summary_rows(step))
        notes = "".join(f"<li>{html.escape(r.what)}: {html.escape(r.note)}</li>"
                        for r in self.rows if r.note)
        state = self.memory_rows[0]
        return (
            f"<p><b>{html.escape(step.model.label)}</b>; {step.layout.n_devices} of "
            f"{self.n_devices} devices; {len(step.collectives)} collective instructions, "
            f"{step.total_bytes / _KIB:,.1f} KiB per step.</p>"
            "<table><tr><th>traffic</th><th>formula</th><th>XLA</th><th></th></tr>"
            f"{body}</table>"
            f"<p>Weights + Adam moments per device: formula "
            f"{state.formula_bytes / _KIB:,.1f} KiB, XLA {state.measured_bytes / _KIB:,.1f} KiB "
            f"({'equal' if state.formula_matches else f'{state.rel_error:+.0%}'}); "
            f"temporaries {step.memory.temp_bytes / _KIB:,.1f} KiB.</p>"
            + (f"<ul style='max-width:640px'>{notes}</ul>" if notes else ""))
