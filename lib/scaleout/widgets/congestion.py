"""The incast explorer (notebook 09): many senders to one port, a victim flow through the
same links, under PFC alone, DCQCN and receiver credits. Every number comes from
:func:`scaleout.congestion.simulate_incast`; charts are SVG.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import ipywidgets as W
import numpy as np

from .. import congestion, svgchart
from ..plotting import MECHANISM_COLORS, MECHANISM_LABELS  # one label and colour per mechanism
from ..render import html_table
from .common import Explorer

__all__ = ["LINK_SPEEDS_GBPS", "MECHANISM_COLORS", "MECHANISM_LABELS", "MECHANISM_SHORT",
           "IncastExplorer"]

#: Port speeds offered, Gb/s.
LINK_SPEEDS_GBPS = (100, 200, 400, 800)
#: Column headings of the readout.
MECHANISM_SHORT = {"pfc": "PFC", "dcqcn": "DCQCN", "credits": "credits"}
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}
_POINTS = 400  # points per line drawn


def _thin(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most :data:`_POINTS` evenly spaced samples of a line, for a light SVG."""
    step = max(1, len(x) // _POINTS)
    return x[::step], y[::step]


class IncastExplorer(Explorer):
    """Senders, port speed, message sizes and the pause threshold → the incast under each
    mechanism.

    Controls: ``senders`` (hosts sending to one receiver at once), ``link_gbps``,
    ``message_mb`` (each sender's message, MB), ``victim_mb`` (the victim flow, MB) and
    ``xoff_kb`` (the queue depth at which PFC pauses, KB). ``result`` maps each mechanism
    to its :class:`scaleout.congestion.IncastResult`.
    """

    title = "Incast: many senders to one port, and an innocent flow beside them"
    SIZES_MB: ClassVar[tuple[float, ...]] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)

    def __init__(self, **initial: Any) -> None:
        super().__init__(**initial)
        self.view.add_class("so-explorer-incast")

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        slider = {"continuous_update": False, **_WIDE}
        return {
            "senders": W.IntSlider(value=16, min=2, max=128, description="senders", **slider),
            "link_gbps": W.Dropdown(options=list(LINK_SPEEDS_GBPS), value=400,
                                    description="port Gb/s", **_WIDE),
            "message_mb": W.Dropdown(options=list(self.SIZES_MB), value=2.0,
                                     description="each sends MB", **_WIDE),
            "victim_mb": W.Dropdown(options=list(self.SIZES_MB), value=32.0,
                                    description="victim MB", **_WIDE),
            "xoff_kb": W.BoundedFloatText(value=1000.0, min=-1.0, max=100_000.0,
                                          description="PFC XOFF KB", **_WIDE),
        }

    # -- library calls only ----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, congestion.IncastResult]:
        kw = {"link_gbps": v["link_gbps"], "message_bytes": v["message_mb"] * 1e6,
              "victim_bytes": v["victim_mb"] * 1e6, "xoff_bytes": v["xoff_kb"] * 1e3}
        return {m: congestion.simulate_incast(v["senders"], m, **kw)
                for m in congestion.MECHANISMS}

    # -- drawing -----------------------------------------------------------------------------
    def _render(self, runs: dict[str, congestion.IncastResult]) -> str:
        any_run = next(iter(runs.values()))
        queue = {MECHANISM_LABELS[m]: _thin(r.t_s * 1e6, r.queue_bytes / 1e3)
                 for m, r in runs.items()}
        victim = {MECHANISM_LABELS[m]: _thin(r.t_s * 1e6, r.victim_delivered_bytes / 1e6)
                  for m, r in runs.items()}
        where = (f"{any_run.senders} senders × {any_run.message_bytes / 1e6:g} MB to one "
                 f"{any_run.link_gbps:g}G port")
        top = svgchart.line_chart(
            queue, MECHANISM_COLORS, xlabel="time (µs)", ylabel="receiver's queue (KB)",
            title=f"{where}: its queue (PFC pauses at {any_run.xoff_bytes / 1e3:,.0f} KB)",
            width=640, height=280)
        bottom = svgchart.line_chart(
            victim, MECHANISM_COLORS, xlabel="time (µs)", ylabel="victim's data delivered (MB)",
            title="The victim: to an idle host, over the same links",
            width=640, height=280)
        self.image.value = svgchart.vstack([top, bottom])
        cols = [MECHANISM_SHORT[m] for m in runs]
        rows = [
            ("incast done (µs)", *(f"{r.incast_s * 1e6:,.0f}" for r in runs.values())),
            ("victim done (µs)", *(f"{r.victim_s * 1e6:,.0f}" for r in runs.values())),
            ("victim slowed", *(f"{r.victim_slowdown:.2f}×" for r in runs.values())),
            ("pause frames", *(f"{r.pauses:,}" for r in runs.values())),
            ("time paused", *(f"{r.pause_fraction:.0%}" for r in runs.values())),
            ("deepest queue (KB)", *(f"{r.max_queue_bytes / 1e3:,.0f}" for r in runs.values())),
        ]
        ideal = (f"<p>Ideal: incast {any_run.ideal_incast_s * 1e6:,.0f} µs (the port busy all "
                 f"along), victim {any_run.ideal_victim_s * 1e6:,.0f} µs.</p>")
        return html_table(["", *cols], rows, align=["left"] + ["right"] * len(cols)) + ideal
