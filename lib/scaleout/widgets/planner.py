"""3D-parallel planner explorer (notebook 08): the best layouts for a model, GPU and GPU count.

Pick a model (from the catalog, or ``custom`` with its layers, hidden size and heads), a
GPU, the GPU count, the GPUs per NVLink domain, the global batch, the sequence length and
a token budget; see the ranked plans that fit as a table, the best plans' memory and
step-time breakdowns as charts, the winner's training time, and in words why it wins.
All numbers come from :func:`scaleout.plan.search`; charts are SVG
(:func:`scaleout.plotting.plan_bars_svg`).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import catalog, plan, plotting, units
from .. import formatting as fmt
from ..render import html_table
from .common import Explorer

__all__ = ["CUSTOM", "GPU_COUNTS", "USUAL", "PlannerExplorer"]

CUSTOM = "custom"
#: Network menu entry for the GPU's usual port (``scaleout.plan.default_network``).
USUAL = "the GPU's usual port"
#: GPU counts offered: powers of two, the counts of published runs, and whole NVL72 racks.
GPU_COUNTS = tuple(sorted({8, 16, 32, 64, 128, 256, 280, 512, 1024, 1536, 1920, 2048, 2520, 3072,
                           4096, 6144, 8192, 12288, 16384, 24576, 32768,
                           72, 144, 288, 576, 1152, 2304, 4608, 9216, 18432}))
_WIDE = {"style": {"description_width": "110px"}, "layout": W.Layout(width="300px")}
_TOP = 8


class PlannerExplorer(Explorer):
    """The fastest layouts that fit, for one model, GPU and cluster.

    Controls: ``model`` (catalog name or ``"custom"``), ``custom_layers``,
    ``custom_hidden``, ``custom_heads`` (used by ``"custom"``:
    :func:`scaleout.catalog.custom_model`), ``gpu``, ``n_gpus``, ``gpus_per_node``,
    ``global_batch``
    (sequences), ``seq_len``, ``tokens_b`` (training budget, billions of tokens) and
    ``flash_attention``, ``network`` (:data:`USUAL` or a scale-out link of
    ``data/links.toml``, one port per GPU) and ``framework`` (a preset of
    :mod:`scaleout.plan.frameworks`: which collectives run and what they overlap).
    ``result`` is the :class:`scaleout.plan.SearchResult`;
    ``best`` the winner's :class:`scaleout.plan.PlanResult`.

    ``measured`` (a :class:`scaleout.lab.calibrate.MeasuredNetwork`, from
    ``./workbook calibrate``) adds a network entry "measured: ..." that uses its fitted
    links (inside and between nodes, at the GPUs per node chosen) and collectives at the
    measured rate.
    """

    def __init__(self, measured=None, **initial: Any) -> None:
        self.measured = measured
        super().__init__(**initial)

    @property
    def measured_label(self) -> str | None:
        """The network menu's entry for the measured network (None without one)."""
        return None if self.measured is None else f"measured: {self.measured.name}"

    title = "Which layout trains fastest? The 3D-parallel planner"
    image_format = "svg+xml"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": W.Dropdown(options=[*catalog.model_names(), CUSTOM], value="gpt3-175b",
                                description="model", **_WIDE),
            "custom_layers": W.BoundedIntText(value=48, min=0, max=1000,
                                              description="custom layers", **_WIDE),
            "custom_hidden": W.BoundedIntText(value=6144, min=0, max=200_000, step=128,
                                              description="custom hidden", **_WIDE),
            "custom_heads": W.BoundedIntText(value=48, min=0, max=1024,
                                             description="custom heads", **_WIDE),
            "gpu": W.Dropdown(options=catalog.gpu_names(), value="A100-SXM4-80GB",
                              description="GPU", **_WIDE),
            "n_gpus": W.Dropdown(options=list(GPU_COUNTS), value=1024, description="GPUs",
                                 **_WIDE),
            "gpus_per_node": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 36, 64, 72], value=8,
                                        description="GPUs per node", **_WIDE),
            "global_batch": W.BoundedIntText(value=1536, min=0, max=10_000_000,
                                             description="global batch", **_WIDE),
            "seq_len": W.Dropdown(options=[512, 1024, 2048, 4096, 8192, 16384, 32768],
                                  value=2048, description="sequence", **_WIDE),
            "tokens_b": W.BoundedFloatText(value=300.0, min=0.0, max=1e6,
                                           description="tokens (B)", **_WIDE),
            "network": W.Dropdown(options=[USUAL, *(lk.name for lk in catalog.links()
                                                   if lk.scope == "scale-out"),
                                           *([self.measured_label] if self.measured else [])],
                                  value=USUAL, description="network", **_WIDE),
            "framework": W.Dropdown(options=[(f.label, f.name) for f in
                                             plan.FRAMEWORKS.values()],
                                    value=plan.DEFAULT_FRAMEWORK, description="framework",
                                    **_WIDE),
            "flash_attention": W.Checkbox(value=False, description="flash attention",
                                          **_WIDE),
        }

    # -- library calls only -----------------------------------------------------------------
    def _model(self, v: Mapping[str, Any]):
        if v["model"] != CUSTOM:
            return catalog.model(v["model"])
        return catalog.custom_model(v["custom_layers"], v["custom_hidden"], v["custom_heads"],
                                    seq_len=v["seq_len"])

    def _compute(self, v: Mapping[str, Any]) -> plan.SearchResult:
        tokens = float(v["tokens_b"]) * 1e9
        if tokens <= 0:
            raise ValueError(f"tokens (B) must be > 0 billion tokens, got {v['tokens_b']!r}")
        key = tuple(value for name, value in sorted(v.items()) if name != "tokens_b")
        if key == getattr(self, "_key", None):  # only the budget changed: keep the search
            result = dataclasses.replace(self.result, tokens=tokens)
        else:
            calibration = None
            if self.measured is not None and v["network"] == self.measured_label:
                network = self.measured.fabric(v["gpu"], v["gpus_per_node"])
                calibration = self.measured.plan_calibration()
            else:
                inter = None if v["network"] == USUAL else v["network"]
                network = plan.default_network(v["gpu"], v["gpus_per_node"], inter)
            result = plan.search(self._model(v), v["gpu"], v["n_gpus"], v["global_batch"],
                                 network, seq_len=v["seq_len"], tokens=tokens,
                                 flash_attention=v["flash_attention"], calibration=calibration,
                                 framework=v["framework"])
        self.best = result.result(0)
        self._key = key
        return result

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, r: plan.SearchResult) -> str:
        self.image.value = plotting.plan_bars_svg(
            r, k=5, title=f"{r.model} on {fmt.count(r.n_gpus)} × {r.gpu}: memory of the best plans")
        best = self.best
        table = html_table(
            ["#", "plan", "GiB per GPU", "s per iteration", "vs best", "MFU"],
            [(row["rank"], row["plan"], fmt.sig(row["memory_gib"]),
              fmt.sig(row["step_s"]), fmt.percent(row["slower_pct"] / 100, signed=True),
              fmt.percent(row["mfu_pct"] / 100)) for row in r.top(_TOP)],
            align=["right", "left", "right", "right", "right", "right"],
            col_styles=["", "min-width:12em", "", "", "", ""])
        why = "<br>".join(html.escape(line) for line in plan.explain(r, k=3).splitlines())
        return (
            f"<p><b>{fmt.count(r.n_fit)}</b> of {fmt.count(r.n_evaluated)} valid plans fit in "
            f"{fmt.bytes_iec(best.capacity_bytes)}. Best: <b>{html.escape(best.plan.label)}"
            f"</b>: {fmt.duration(best.step_s)} per iteration, "
            f"{fmt.large_count(best.tokens_per_s)} tokens/s, MFU {fmt.percent(best.mfu)}, "
            f"{fmt.flop_rate(best.model_tflops_per_gpu * 1e12)} per GPU.</p>"
            f"<p>Memory: {fmt.sig(best.memory_bytes / units.GIB)} of "
            f"{fmt.sig(best.capacity_bytes / units.GIB)} GiB, "
            f"{fmt.sig(best.headroom_gib)} GiB free"
            + (" <b>⚠ tight</b>: above 90% of HBM, fragmentation and peaks the model does not "
               "see may push it over" if best.tight else "")
            + f". Framework: {html.escape(best.framework_label)}.</p>"
            f"<p>{fmt.tokens(r.tokens)}: "
            f"<b>{fmt.duration(units.days_to_seconds(best.training_days))}</b>, "
            f"{fmt.large_count(best.gpu_hours)} GPU-hours.</p>"
            f"{table}<p>{why}</p>"
        )
