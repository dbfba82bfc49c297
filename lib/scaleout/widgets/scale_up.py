"""Explorers of notebooks 00 and 01: the glossary search and "what does it take to hold a model?".

* :class:`GlossaryExplorer` (``00_start_here``): type a word in English or
  Korean, see its definition and which notebooks of the walk teach it.
* :class:`ScaleUpExplorer` (``01_scale_up_limits``): pick a model, a GPU and a
  training recipe; see the weights and the full training state against one
  GPU's HBM and its scale-up domain, and how many GPUs merely hold them.

Both draw SVG charts (:mod:`scaleout.svgchart` through :mod:`scaleout.plotting`),
because a matplotlib redraw takes over 100 ms on a small machine; the
notebooks' static figures stay matplotlib.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import catalog, formatting, glossary, memory, plotting, scaling, units
from ..render import html_table
from .common import Explorer

__all__ = ["GlossaryExplorer", "ScaleUpExplorer"]

_WIDE = {"style": {"description_width": "70px"}, "layout": W.Layout(width="300px")}
_MAX_ROWS = 12


# =========================================================================== 00: glossary
class GlossaryExplorer(Explorer):
    """Search the glossary and the concept map; chart where the hits are taught.

    Controls: ``query`` (text, English or Korean; empty shows everything) and
    ``notebook`` (``"all"`` or one notebook of the walk). ``result`` is a
    :class:`scaleout.glossary.SearchResult`. A query that matches nothing shows
    its message, with close terms, in the status line.
    """

    title = "Glossary search: what does a word mean, and where is it taught?"
    readout_below = True  # a table of definitions needs the full width

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        menu = [("every notebook", glossary.ALL),
                *((f"{nb.id[:2]} · {nb.title}" if nb.id[:2].isdigit() else nb.title, nb.id)
                  for nb in glossary.walk())]
        return {
            "query": W.Text(value="parallelism", description="search", continuous_update=False,
                            placeholder="e.g. bubble, 버블, RDMA", **_WIDE),
            "notebook": W.Dropdown(options=menu, value=glossary.ALL, description="notebook",
                                   **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> glossary.SearchResult:
        return glossary.search(v["query"], v["notebook"])

    def _render(self, r: glossary.SearchResult) -> str:
        counts = r.per_notebook()
        walk = glossary.walk()
        self.image.value = plotting.walk_matches_svg(
            {nb.short: (counts[nb.id], nb.written) for nb in walk},
            title=(f"'{r.query}': {formatting.plural(len(r.terms), 'term')}, "
                   f"{formatting.plural(len(r.concepts), 'concept')}"),
        )
        where = {nb.id: f"{nb.short} ({nb.status})" for nb in walk}
        rows = [(t.term, t.korean, t.definition, where[t.notebook]) for t in r.terms[:_MAX_ROWS]]
        more = len(r.terms) - len(rows)
        tail = (f"<p>… and {formatting.plural(more, 'more term')}: narrow the search.</p>"
                if more > 0 else "")
        return (html_table(["term", "한국어", "definition", "taught in"], rows,
                           align=["left"] * 4,
                           col_styles=["min-width:7em", "min-width:6em", "min-width:18em",
                                       "min-width:8em"]) + tail)


# =========================================================================== 01: scale-up
class ScaleUpExplorer(Explorer):
    """Weights and full training state of a model against GPU memory, and GPUs to hold them.

    Controls: ``model`` and ``gpu`` (catalog names or aliases; type a name or pick
    one), ``recipe`` (a name of :data:`scaleout.memory.RECIPES`). ``result`` is a
    dict with the :class:`scaleout.scaling.HoldingPlan` under ``"plan"``, the
    same quantities in GiB and GB, and the largest scale-up system of the
    catalog with whether it holds the training state.
    """

    title = "What does it take to hold a model?"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": W.Combobox(value="gpt3-175b", options=catalog.model_names(),
                                description="model", ensure_option=False,
                                continuous_update=False, **_WIDE),
            "gpu": W.Combobox(value="A100-SXM4-80GB", options=catalog.gpu_names(),
                              description="GPU", ensure_option=False,
                              continuous_update=False, **_WIDE),
            "recipe": W.Dropdown(options=list(memory.RECIPES), value="mixed-adam",
                                 description="recipe", **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        plan = scaling.holding_plan(v["model"], v["gpu"], v["recipe"])
        biggest = scaling.largest_system()
        biggest_gpu = catalog.gpu(biggest.gpu)
        gib = {
            "weights": units.bytes_to_gib(plan.weights),
            "grads": units.bytes_to_gib(plan.grads),
            "optimizer": units.bytes_to_gib(plan.optimizer),
            "state": units.bytes_to_gib(plan.state),
            "hbm": plan.gpu.hbm_gib,
            "domain": units.bytes_to_gib(plan.domain_bytes),
            "biggest": units.bytes_to_gib(scaling.system_hbm_bytes(biggest)),
        }
        return {
            "plan": plan,
            "gib": gib,
            "gb": {"weights": units.bytes_to_gb(plan.weights),
                   "state": units.bytes_to_gb(plan.state)},
            "biggest": biggest,
            "biggest_gpus_for_state": scaling.gpus_to_hold(plan.state, biggest_gpu),
        }

    def _render(self, r: dict[str, Any]) -> str:
        p: scaling.HoldingPlan = r["plan"]
        g = r["gib"]
        domain_label = f"{p.domain_gpus}-GPU domain"
        rows = {
            "weights only": {"weights": g["weights"]},
            "training state": {"weights": g["weights"], "grads": g["grads"],
                               "optimizer": g["optimizer"]},
            "one GPU": {"HBM capacity": g["hbm"]},
            domain_label: {"HBM capacity": g["domain"]},
        }
        self.image.value = plotting.holding_bars_svg(
            rows, marker_gib=g["hbm"], marker_label=f"one GPU: {formatting.sig(g['hbm'])} GiB",
            title=(f"{p.model.name} on {p.gpu.name}: weights need {p.gpus_for_weights} GPUs, "
                   f"training state {p.gpus_for_state}"),
        )

        def yes(flag: bool) -> str:
            return "yes" if flag else "no"

        big = r["biggest"]
        big_fits = r["biggest_gpus_for_state"] <= big.gpus
        table = html_table(
            ["", "weights only", "full training state"],
            [
                ("bytes per parameter", formatting.sig(p.recipe.weight_bytes),
                 formatting.sig(p.recipe.total_bytes)),
                ("decimal (GB = 10⁹ bytes)", formatting.bytes_si(p.weights),
                 formatting.bytes_si(p.state)),
                ("binary (GiB = 2³⁰ bytes)", formatting.bytes_iec(p.weights),
                 formatting.bytes_iec(p.state)),
                (f"GPUs of {formatting.sig(g['hbm'])} GiB to hold it", p.gpus_for_weights,
                 p.gpus_for_state),
                ("fits on one GPU", yes(p.weights_fit_gpu), yes(p.state_fits_gpu)),
                (f"fits in one {domain_label} ({formatting.sig(g['domain'])} GiB)",
                 yes(p.weights_fit_domain), yes(p.state_fits_domain)),
            ],
            align=["left", "right", "right"],
        )
        verdict_cls = "so-status-ok" if p.state_fits_domain else "so-status-bad"
        return (
            f"<p>{html.escape(p.model.name)}: {formatting.large_count(p.params)} parameters; "
            f"recipe {html.escape(p.recipe.name)}</p>{table}"
            f'<p class="{verdict_cls}">The training state '
            f"{'fits in' if p.state_fits_domain else 'does not fit in'} one {domain_label}.</p>"
            f"<p>Largest scale-up domain in the catalog, {html.escape(big.name)} "
            f"({formatting.sig(g['biggest'])} GiB): {'holds' if big_fits else 'does not hold'} "
            "this training state.</p>"
        )
