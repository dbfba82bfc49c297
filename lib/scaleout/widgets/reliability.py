"""Checkpoint-interval explorer (notebook 11): goodput against the interval, optimum marked.

Pick the checkpoint interval, the model (or a checkpoint size), the storage
bandwidth, and where the mean time between failures comes from (a GPU count and
a study's failure rates, by default Llama 3's, or an MTBF typed in), plus the
restart time. The chart
shows goodput (kept work over wall time) against the interval on a log axis,
Daly's exact model and Young's first-order one, with Young's and Daly's optima
marked; the readout gives the numbers. Every number comes from
:mod:`scaleout.reliability`; the chart is SVG (:mod:`scaleout.svgchart`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as W
import numpy as np

from .. import catalog, checks, reliability, svgchart, units
from .. import formatting as fmt
from ..render import html_table
from .common import Explorer

__all__ = ["CUSTOM_SIZE", "MTBF_SOURCES", "CheckpointExplorer", "duration_text"]

#: The model menu's entry that uses the typed checkpoint size instead of a model.
CUSTOM_SIZE = "(checkpoint size below)"
#: Where the MTBF comes from: a GPU count with a study's failure rates, or typed in hours.
MTBF_SOURCES = ("GPU count", "MTBF (hours)")
_STUDY = "llama3-405b"
_EXACT, _FIRST = "exact (Daly's model)", "first order (Young)"
_YOUNG, _DALY = "Young's optimum", "Daly's optimum"
_COLORS = {_EXACT: "#1f77b4", _FIRST: "#ff7f0e", _DALY: "#1f77b4", _YOUNG: "#ff7f0e"}
_WIDE = {"style": {"description_width": "120px"}, "layout": W.Layout(width="330px")}


def duration_text(seconds: float) -> str:
    """``42 s``, ``7.3 min``, ``3.09 h``, ``12.5 days``: :func:`scaleout.formatting.duration`."""
    return fmt.duration(seconds)


class CheckpointExplorer(Explorer):
    """Goodput against the checkpoint interval, with Young's and Daly's optima.

    Controls: ``interval_min`` (a log slider, minutes), ``model`` (a catalog
    model or :data:`CUSTOM_SIZE`), ``checkpoint_tb`` (TB, used with
    :data:`CUSTOM_SIZE`), ``storage_gbytes_s`` (aggregate write bandwidth, GB/s),
    ``mtbf_from`` (:data:`MTBF_SOURCES`), ``n_gpus``, ``mtbf_h`` (used with
    ``"MTBF (hours)"``) and ``restart_min``. Checkpoints are sharded (every GPU
    writes its part) and synchronous. ``result`` is a dict of the numbers shown.
    """

    title = "How often to checkpoint? Goodput against the interval"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        storage = reliability.figure("llama3-storage-sustained").si / units.GB
        return {
            "interval_min": W.FloatLogSlider(value=5.0, base=10, min=-1, max=4, step=0.02,
                                             description="interval (min)", readout_format=",.3r",
                                             continuous_update=False, **_WIDE),
            "model": W.Dropdown(options=[*catalog.model_names(), CUSTOM_SIZE],
                                value="llama3-405b", description="model", **_WIDE),
            "checkpoint_tb": W.BoundedFloatText(value=1.0, min=0.0, max=1e5, step=0.1,
                                                description="checkpoint (TB)", **_WIDE),
            "storage_gbytes_s": W.FloatLogSlider(value=storage, base=10, min=0, max=5,
                                                 step=0.05, description="storage (GB/s)",
                                                 readout_format=",.3r", continuous_update=False,
                                                 **_WIDE),
            "mtbf_from": W.Dropdown(options=list(MTBF_SOURCES), value=MTBF_SOURCES[0],
                                    description="MTBF from", **_WIDE),
            "study": W.Dropdown(options=reliability.study_names(), value=_STUDY,
                                description="failure rates", **_WIDE),
            "n_gpus": W.BoundedIntText(value=16384, min=0, max=10_000_000, description="GPUs",
                                       **_WIDE),
            "mtbf_h": W.FloatText(value=3.0, description="MTBF (hours)", **_WIDE),
            "restart_min": W.BoundedFloatText(value=10.0, min=0.0, max=1e4, step=1.0,
                                              description="restart (min)", **_WIDE),
        }

    # -- library calls only -----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        custom = v["model"] == CUSTOM_SIZE
        self.controls["checkpoint_tb"].disabled = not custom
        by_gpus = v["mtbf_from"] == MTBF_SOURCES[0]
        self.controls["mtbf_h"].disabled = by_gpus
        self.controls["study"].disabled = not by_gpus
        n_gpus = v["n_gpus"]
        if custom:  # a size in TB at 14 bytes per parameter (weights + Adam state)
            size = float(v["checkpoint_tb"]) * units.TB
            if not size > 0:
                raise ValueError(f"checkpoint size must be > 0 TB, got {v['checkpoint_tb']!r}")
            params = size / reliability.checkpoint_bytes(1.0)
        else:
            params = v["model"]
        plan = reliability.checkpoint_plan(params, n_gpus, storage_gbytes_s=v["storage_gbytes_s"])
        if by_gpus:
            mtbf_s = units.hours_to_seconds(float(reliability.mtbf_h(n_gpus, v["study"])))
        else:
            mtbf_s = units.hours_to_seconds(checks.check_positive("MTBF (hours)", v["mtbf_h"]))
        restart_s = units.minutes_to_seconds(v["restart_min"])
        delta = plan.blocking_s
        interval_s = units.minutes_to_seconds(v["interval_min"])
        chosen = float(reliability.goodput(interval_s, delta, mtbf_s, restart_s))
        young = reliability.young_interval_s(delta, mtbf_s)
        daly = reliability.daly_interval_s(delta, mtbf_s)
        exact = reliability.exact_optimal_interval_s(delta, mtbf_s)
        lo = max(delta, min(interval_s, young) / 20)
        hi = max(interval_s, young, daly) * 20
        sweep = np.geomspace(lo, hi, 160)
        return {
            "plan": plan, "mtbf_s": mtbf_s, "restart_s": restart_s, "delta_s": delta,
            "interval_s": interval_s, "goodput": chosen,
            "young_s": young, "daly_s": daly, "exact_s": exact,
            "goodput_daly": float(reliability.goodput(max(daly, delta), delta, mtbf_s,
                                                      restart_s)),
            "first_order": float(reliability.goodput_first_order(interval_s, delta, mtbf_s,
                                                                  restart_s)),
            "lost_s": float(reliability.expected_lost_work_s(interval_s, delta, mtbf_s)),
            "failures_per_day": units.SECONDS_PER_DAY / mtbf_s,
            "n_gpus": n_gpus, "by_gpus": by_gpus, "custom": custom,
            "sweep": {"interval_s": sweep,
                      "exact": np.asarray(reliability.goodput(sweep, delta, mtbf_s, restart_s)),
                      "first": np.asarray(reliability.goodput_first_order(sweep, delta, mtbf_s,
                                                                          restart_s))},
        }

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, r: dict[str, Any]) -> str:
        sw = r["sweep"]
        minutes = units.seconds_to_minutes(sw["interval_s"])
        series = {_EXACT: (minutes, 100 * sw["exact"]), _FIRST: (minutes, 100 * sw["first"])}
        mtbf_text = duration_text(r["mtbf_s"])
        where = (f"{fmt.plural(r['n_gpus'], 'GPU')}, MTBF {mtbf_text}" if r["by_gpus"]
                 else f"MTBF {mtbf_text}")
        points = {_DALY: (units.seconds_to_minutes(r["daly_s"]), 100 * r["goodput_daly"])}
        if r["young_s"] >= r["delta_s"]:
            points[_YOUNG] = (units.seconds_to_minutes(r["young_s"]), 100 * float(
                reliability.goodput_first_order(r["young_s"], r["delta_s"], r["mtbf_s"],
                                                r["restart_s"])))
        low = float(np.min(100 * sw["exact"]))
        self.image.value = svgchart.line_chart(
            series, _COLORS, logx=True, y_range=(max(0.0, 10 * np.floor(low / 10 - 0.5)), 100.0),
            xlabel="compute time between checkpoints, τ (minutes)", ylabel="goodput (%)",
            title=f"Goodput: {where}, checkpoint write {duration_text(r['delta_s'])}",
            dashed=(_FIRST,), highlight=_EXACT, marker_x=units.seconds_to_minutes(
                r["interval_s"]), marker_label=f"τ = {duration_text(r['interval_s'])}",
            points=points, height=360)
        plan = r["plan"]
        rows = [
            ("checkpoint", f"{fmt.bytes_si(plan.total_bytes)} "
                           f"({fmt.bytes_si(plan.per_writer_bytes)} per GPU)"),
            ("write time δ", duration_text(r["delta_s"])),
            ("MTBF M", f"{mtbf_text} ({fmt.sig(r['failures_per_day'])} failures a day)"),
            ("Young √(2δM)", duration_text(r["young_s"])),
            ("Daly", duration_text(r["daly_s"])),
            ("exact optimum", duration_text(r["exact_s"])),
            ("goodput at τ", f"{fmt.percent(r['goodput'], 4)} "
                             f"(first order {fmt.percent(r['first_order'], 4)})"),
            ("goodput at Daly's τ", fmt.percent(r["goodput_daly"], 4)),
            ("work lost per failure", duration_text(r["lost_s"])),
        ]
        return html_table(["", ""], rows, align=["left", "right"])
