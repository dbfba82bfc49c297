"""Scale-up against scale-out explorer (notebook 12): one cluster, several scale-up domain sizes.

Pick a model, a GPU, the GPU count, the scale-up domain size of the design (8, 16, 36, 72
... GPUs per NVLink domain), the global batch, the token budget and the optics of the
scale-out fabric. :func:`scaleout.synthesis.cluster_plan` plans the cluster: the planner's
best layout for each compared domain size, the fabric and its optics, failures and goodput.
The top chart splits each domain size's iteration into its parts, the bottom one its
wall-clock days into computing and what failures add. The explorer computes nothing itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import formatting as fmt
from .. import optics, plan, plotting, svgchart, synthesis
from ..render import html_table
from .common import Explorer, gpu_menu, model_menu

__all__ = ["COMPARED_SIZES", "DOMAIN_MENU", "DomainExplorer"]

#: Domain sizes the explorer always compares with the chosen one (those that tile the cluster).
COMPARED_SIZES = (8, 72)
#: Domain sizes the design can choose: boards, racks and super-nodes of the catalog.
DOMAIN_MENU = (4, 8, 16, 32, 36, 64, 72, 144, 256, 384)
_DAY_COLORS = {"computing": "#1f77b4", "failures and checkpoints": "#d62728"}
_WIDE = {"style": {"description_width": "120px"}, "layout": W.Layout(width="320px")}


class DomainExplorer(Explorer):
    """The best plan, step time and days per scale-up domain size, with fabric and failures.

    Controls: ``model``, ``gpu`` (catalog names), ``n_gpus``, ``domain`` (GPUs per scale-up
    domain of the design), ``global_batch`` (sequences), ``tokens_b`` (token budget,
    billions) and ``optics`` (:data:`scaleout.optics.CHOICES`). ``result`` is the
    :class:`~scaleout.synthesis.ClusterPlan`.
    """

    title = "Scale-up domain size against step time, days, fabric and failures"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": model_menu("gpt3-175b", _WIDE),
            "gpu": gpu_menu("GB200", _WIDE),
            "n_gpus": W.BoundedIntText(value=1152, min=0, max=1_000_000, description="GPUs",
                                       **_WIDE),
            "domain": W.Dropdown(options=list(DOMAIN_MENU), value=72,
                                 description="GPUs per domain", **_WIDE),
            "global_batch": W.BoundedIntText(value=1536, min=0, max=10_000_000,
                                             description="batch (sequences)", **_WIDE),
            "tokens_b": W.BoundedFloatText(value=300.0, min=-1.0, max=1e6, step=10.0,
                                           description="tokens (billions)", **_WIDE),
            "optics": W.Dropdown(options=list(optics.CHOICES), value="dsp",
                                 description="scale-out optics", **_WIDE),
        }

    # -- library calls only -----------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> synthesis.ClusterPlan:
        return synthesis.cluster_plan(
            v["model"], v["gpu"], v["n_gpus"], v["global_batch"], v["tokens_b"] * 1e9,
            gpus_per_node=v["domain"], domain_sizes=COMPARED_SIZES, optics_choice=v["optics"])

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, cp: synthesis.ClusterPlan) -> str:
        options = cp.domains.options
        label = {o.domain_gpus: f"{o.domain_gpus} GPUs/domain" for o in options}
        chosen = label[cp.gpus_per_node]
        steps = {label[o.domain_gpus]: plotting.step_in_words(
            {p: o.result.step[p] for p in plan.STEP_PARTS}) for o in options}
        top = svgchart.stacked_hbars(
            steps, plotting.STEP_WORD_COLORS, xlabel="seconds per iteration", highlight=chosen,
            title=f"{cp.model} on {fmt.count(cp.n_gpus)} × {cp.gpu}: one iteration by domain size",
            row_height=30)
        days = {}
        for o in options:
            wall = cp.wall_days_of(o.domain_gpus)
            days[label[o.domain_gpus]] = {"computing": o.training_days,
                                          "failures and checkpoints": wall - o.training_days}
        bottom = svgchart.stacked_hbars(
            days, _DAY_COLORS, xlabel="days, wall clock", highlight=chosen, row_height=30,
            title=f"{fmt.tokens(cp.tokens)}: days by domain size")
        self.image.value = svgchart.vstack([top, bottom])

        table = html_table(
            ["GPUs per domain", "best plan", "s per iteration", "MFU", "days computing",
             "days, wall clock"],
            [(("★ " if o.domain_gpus == cp.gpus_per_node else "") + str(o.domain_gpus),
              o.label, fmt.sig(o.step_s), fmt.percent(o.mfu), fmt.sig(o.training_days),
              fmt.sig(cp.wall_days_of(o.domain_gpus))) for o in options],
            align=["right", "left", "right", "right", "right", "right"],
            col_styles=["", "min-width:12em", "", "", "", ""])
        skipped = "".join(f"<li>{d} GPUs per domain: {html.escape(why[:160])}</li>"
                          for d, why in cp.domains.skipped.items())
        design = html_table(["the design (★)", ""], cp.rows(), align=["left", "left"])
        return (f"{table}" + (f"<p>Not compared:</p><ul>{skipped}</ul>" if skipped else "")
                + design)
