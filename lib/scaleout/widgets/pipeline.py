"""Pipeline explorers (notebook 05): a schedule drawn pass by pass, its bubble and its memory;
the memory of every pipeline rank of a real model's plan.

Drawn as SVG (:func:`scaleout.plotting.pipeline_gantt_svg`): one bar per pass,
so a redraw of the largest schedule the sliders allow (16 stages, 64
micro-batches, 4 chunks: 8,192 passes) stays well under 50 ms.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import formatting as fmt
from .. import pipeline, plotting
from ..render import html_table
from .common import Explorer

__all__ = ["MAX_M", "MAX_P", "MAX_V", "SCHEDULE_LABELS", "PipelineExplorer",
           "StageMemoryExplorer"]

#: Slider limits: beyond them a Gantt chart is a smear, not a picture.
MAX_P, MAX_M, MAX_V = 16, 64, 4
#: The schedules in words, for the menu and the chart's title.
SCHEDULE_LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B",
                   "zb-h1": "zero bubble (ZB-H1)"}
_WIDE = {"style": {"description_width": "120px"}, "layout": W.Layout(width="300px")}
_MS = 1e-3


def _micro_batches(n: float) -> str:
    """``"1 micro-batch"``, ``"2.5 micro-batches"``."""
    return f"{fmt.sig(n)} micro-batch{'' if n == 1 else 'es'}"


class PipelineExplorer(Explorer):
    """Pick a schedule, stages, micro-batches, chunks and the send time; see every pass.

    Controls: ``schedule`` (:data:`scaleout.pipeline.SCHEDULES`), ``p``, ``m``,
    ``v`` (model chunks; used by ``"interleaved"`` only, greyed out
    otherwise), ``t_forward_ms`` (one micro-batch's forward through a stage;
    the backward takes twice as long) and ``p2p_ms`` (sending activations to
    the next stage). ``result`` is the :class:`scaleout.pipeline.PipelineTimeline`.
    """

    title = "Pipeline schedules: where does the time go?"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        slider = {"continuous_update": False, **_WIDE}
        return {
            "schedule": W.Dropdown(options=[(SCHEDULE_LABELS.get(k, k), k)
                                            for k in pipeline.SCHEDULES],
                                   value="1f1b", description="schedule", **_WIDE),
            "p": W.IntSlider(value=4, min=1, max=MAX_P, description="stages p", **slider),
            "m": W.IntSlider(value=8, min=1, max=MAX_M, description="micro-batches m",
                             **slider),
            "v": W.IntSlider(value=2, min=1, max=MAX_V, description="chunks v", **slider),
            "t_forward_ms": W.FloatSlider(value=1.0, min=0.1, max=10.0, step=0.1,
                                          description="forward (ms)", **slider),
            "p2p_ms": W.FloatSlider(value=0.0, min=0.0, max=5.0, step=0.05,
                                    description="send (ms)", **slider),
        }

    def _chunks(self, v: Mapping[str, Any]) -> int:
        """Chunks per device: the slider's value for the interleaved schedule, else 1."""
        return v["v"] if v["schedule"] == "interleaved" else 1

    def refresh(self) -> None:
        """Grey out the chunks slider unless the schedule interleaves, then recompute."""
        self.controls["v"].disabled = self.controls["schedule"].value != "interleaved"
        super().refresh()

    def _compute(self, v: Mapping[str, Any]) -> pipeline.PipelineTimeline:
        return pipeline.simulate(v["schedule"], v["p"], v["m"], self._chunks(v),
                                 forward_s=v["t_forward_ms"] * _MS,
                                 transfer_s=v["p2p_ms"] * _MS)

    def _render(self, t: pipeline.PipelineTimeline) -> str:
        name = (SCHEDULE_LABELS.get(t.schedule, t.schedule)
                + (f", v={t.v}" if t.schedule == "interleaved" else ""))
        self.image.value = plotting.pipeline_gantt_svg(
            t, title=f"{name}: p={t.p} stages, m={t.m} micro-batches", labels=t.n_tasks <= 1024)
        peak = t.peak_in_flight_mb
        rows = [
            ("passes", fmt.count(t.n_tasks)),
            ("iteration", fmt.duration(t.makespan_s)),
            ("ideal (no bubble)", fmt.duration(t.ideal_s)),
            ("bubble, simulated", fmt.percent(t.bubble_fraction)),
            ("bubble, formula", fmt.percent(t.bubble_closed_form)),
            ("in flight, first stage", _micro_batches(peak[0])),
            ("in flight, last stage", _micro_batches(peak[-1])),
        ]
        note = ("" if t.transfer_s == 0 else
                "<p>sends add to the simulated bubble; the formula assumes they are free</p>")
        return html_table(["", ""], rows, align=["left", "right"]) + note


class StageMemoryExplorer(Explorer):
    """Memory of every pipeline rank of one plan: pick a model, a GPU and the layout.

    Controls: ``model``, ``gpu``, ``framework`` (a planner preset; ``deepseek-hai-llm`` runs
    DualPipe), ``link`` (the port between nodes), ``tp``, ``pp``, ``dp``, ``ep``,
    ``micro_batch``, ``global_batch``, ``interleave``, ``zero_stage``, ``recompute``, ``sp``,
    ``flash_attention``. ``result`` is the :class:`scaleout.plan.PlanResult`;
    its ``stages`` are drawn by :func:`scaleout.plotting.stage_memory_bars`.
    """

    title = "Memory per pipeline rank"
    image_format = "svg+xml"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        from .. import catalog, layout
        from ..plan import framework_names

        box = {"continuous_update": False, **_WIDE}
        return {
            "model": W.Dropdown(options=catalog.model_names(), value="llama3-70b",
                                description="model", **_WIDE),
            "gpu": W.Dropdown(options=catalog.gpu_names(), value="H100-SXM5-80GB",
                              description="GPU", **_WIDE),
            "framework": W.Dropdown(options=framework_names(), value="megatron-core",
                                    description="framework", **_WIDE),
            "link": W.Dropdown(options=catalog.link_names(), value="InfiniBand NDR",
                               description="between nodes", **_WIDE),
            "tp": W.Dropdown(options=[1, 2, 4, 8], value=8, description="TP", **_WIDE),
            "pp": W.IntSlider(value=4, min=1, max=32, description="PP (stages)", **box),
            "dp": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 64, 128], value=2,
                             description="DP", **_WIDE),
            "ep": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 64], value=1, description="EP",
                             **_WIDE),
            "micro_batch": W.Dropdown(options=[1, 2, 4, 8], value=2,
                                      description="micro-batch", **_WIDE),
            "global_batch": W.Dropdown(options=[32, 64, 128, 256, 512, 1024, 2048], value=64,
                                       description="global batch", **_WIDE),
            "interleave": W.Dropdown(options=[1, 2, 3, 4], value=1,
                                     description="chunks v", **_WIDE),
            "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=1, description="ZeRO stage",
                                     **_WIDE),
            "recompute": W.Dropdown(options=list(layout.RECOMPUTE_MODES), value="selective",
                                    description="recompute", **_WIDE),
            "sp": W.Checkbox(value=True, description="sequence parallel", indent=False),
            "flash_attention": W.Checkbox(value=True, description="flash attention",
                                          indent=False),
        }

    def _compute(self, v: Mapping[str, Any]):
        from .. import plan

        p = plan.Plan(tp=v["tp"], pp=v["pp"], dp=v["dp"], ep=v["ep"],
                      micro_batch=v["micro_batch"], global_batch=v["global_batch"],
                      interleave=v["interleave"], zero_stage=v["zero_stage"],
                      recompute=v["recompute"], sp=v["sp"],
                      flash_attention=v["flash_attention"])
        return plan.evaluate(v["model"], v["gpu"], p,
                             plan.default_network(v["gpu"], inter=v["link"]),
                             framework=v["framework"])

    def _render(self, r) -> str:
        self.image.value = plotting.stage_memory_bars_svg(
            r.stages, r.capacity_bytes, title=f"{r.model} on {r.gpu}: {r.plan.pp} stages")
        big, small = r.largest_stage, min(r.stages, key=lambda s: s.total_bytes)
        rows = [
            ("fullest rank", f"{big.stage}: {fmt.bytes_iec(big.total_bytes)}"),
            ("emptiest rank", f"{small.stage}: {fmt.bytes_iec(small.total_bytes)}"),
            ("fullest / emptiest", f"{fmt.sig(big.total_bytes / small.total_bytes)}×"),
            ("HBM", fmt.bytes_iec(r.capacity_bytes)),
            ("fits", "yes" if r.fits else "no"),
        ]
        return html_table(["", ""], rows, align=["left", "right"])
