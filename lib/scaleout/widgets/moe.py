"""Expert-parallelism explorer (notebook 13): an MoE layer's all-to-all on a board, a rack or RDMA.

Pick a mixture-of-experts model (its width, expert size and layers), change its experts
and top-k, the expert-parallel size, the GPUs per scale-up domain, the links, the tokens
per GPU, the recipe and how skewed the router is; see one MoE layer's time (compute
against its dispatch and combine, forward and backward) for several domain sizes, and the
experts' memory per GPU. Every number is a :mod:`scaleout.moe` call; the chart is SVG.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W

from .. import catalog, memory, moe, svgchart
from ..units import GIB
from .common import Explorer

__all__ = ["DOMAINS", "MoEExplorer", "moe_models"]

#: GPUs per scale-up domain compared in the chart: an HGX board, two boards' worth, half an
#: NVL72 rack, a whole one.
DOMAINS = (8, 16, 36, 72)
_WIDE = {"style": {"description_width": "120px"}, "layout": W.Layout(width="300px")}
_COLORS = {"compute": "#4c72b0", "all-to-all on NVLink": "#55a868",
           "all-to-all across the network": "#c44e52"}


def moe_models() -> list[str]:
    """The catalog's mixture-of-experts models."""
    return [m.name for m in catalog.models() if m.is_moe]


def _links(scope: str) -> list[str]:
    return [x.name for x in catalog.links() if x.scope == scope and x.rdma]


class MoEExplorer(Explorer):
    """One MoE layer's compute and all-to-all per domain size, and the experts' memory.

    Controls: ``model`` (a catalog MoE model), ``experts`` and ``top_k`` (override the
    model's), ``ep`` (expert-parallel size), ``domain`` (GPUs per scale-up domain, the
    highlighted row), ``gpu`` (its peak and HBM), ``scaleup`` and ``network`` (links),
    ``tokens`` (tokens per GPU in one micro-batch), ``recipe`` (the bytes of dispatch and
    combine, and FP8 compute) and ``skew`` (the router's imbalance,
    :func:`scaleout.moe.popularity`). ``result`` holds the per-domain times
    (``rows``), the chosen domain's :func:`scaleout.moe.layer_comm_time`, the expert
    memory and the imbalance.
    """

    title = "Expert parallelism: where the all-to-all goes, and what it costs"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": W.Dropdown(options=moe_models(), value="deepseek-v3", description="model",
                                **_WIDE),
            "experts": W.BoundedIntText(value=256, min=1, max=4096, description="experts E",
                                        **_WIDE),
            "top_k": W.IntSlider(value=8, min=1, max=16, description="top-k",
                                 continuous_update=False, **_WIDE),
            "ep": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=64,
                             description="EP size", **_WIDE),
            "domain": W.Dropdown(options=list(DOMAINS), value=8, description="GPUs/domain",
                                 **_WIDE),
            "gpu": W.Dropdown(options=[g.name for g in catalog.gpus()], value="H800-SXM5-80GB",
                              description="GPU", **_WIDE),
            "scaleup": W.Dropdown(options=_links("scale-up"), value="NVLink 4 (H800)",
                                  description="scale-up link", **_WIDE),
            "network": W.Dropdown(options=_links("scale-out"), value="InfiniBand NDR",
                                  description="network port", **_WIDE),
            "tokens": W.Dropdown(options=[1024, 2048, 4096, 8192, 16384], value=4096,
                                 description="tokens/GPU", **_WIDE),
            "recipe": W.Dropdown(options=["megatron-bf16", "fp8-te", "fp8-deepseek"],
                                 value="fp8-deepseek", description="recipe", **_WIDE),
            "skew": W.FloatSlider(value=0.0, min=0.0, max=1.5, step=0.1,
                                  description="router skew", continuous_update=False,
                                  **_WIDE),
        }

    def _on_change(self, change: Mapping[str, Any]) -> None:
        if change.get("owner") is self.controls["model"]:
            m = catalog.model(change["new"])
            self._filling = True
            try:
                self.controls["experts"].value = m.experts
                self.controls["top_k"].value = min(m.top_k, self.controls["top_k"].max)
                ep = self.controls["ep"]
                fits = [e for e in ep.options if m.experts % e == 0 and e <= ep.value]
                ep.value = max(fits) if fits else 1
            finally:
                self._filling = False
        if not getattr(self, "_filling", False):
            self.refresh()

    # -- model calls only ------------------------------------------------------------
    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        base = catalog.model(v["model"])
        m = base.replace(name=f"{base.name} (E={v['experts']}, k={v['top_k']})",
                         experts=v["experts"], top_k=v["top_k"],
                         max_nodes_per_token=base.max_nodes_per_token
                         if v["experts"] == base.experts else None)
        ep = moe.check_ep(m, v["ep"])
        g = catalog.gpu(v["gpu"])
        r = memory.check_precision(v["recipe"], g)
        imbalance = moe.rank_imbalance(moe.popularity(m.experts, v["skew"]), ep)
        compute_s = moe.layer_seconds(m, v["tokens"], g, r) * imbalance
        rows, chosen = {}, None
        for d in sorted({*DOMAINS, v["domain"]}):
            comm = moe.layer_comm_time(m, v["tokens"], ep, d, v["scaleup"], v["network"], r,
                                       imbalance=imbalance)
            net = comm["network_bytes"] > 0
            rows[f"{d} GPUs"] = {
                "compute": compute_s * 1e3,
                "all-to-all on NVLink": 0.0 if net else comm["total_s"] * 1e3,
                "all-to-all across the network": comm["total_s"] * 1e3 if net else 0.0}
            if d == v["domain"]:
                chosen = comm
        params = moe.expert_params_per_gpu(m, ep)
        state = params["experts"] * r.total_bytes
        return {"model": m, "ep": ep, "rows": rows, "chosen": chosen, "compute_s": compute_s,
                "imbalance": imbalance, "experts_per_gpu": m.experts // ep,
                "expert_params": params["experts"], "expert_state_bytes": state,
                "hbm_bytes": g.hbm_bytes, "domain": v["domain"]}

    def _render(self, r: dict[str, Any]) -> str:
        label = f"{r['domain']} GPUs"
        self.image.value = svgchart.stacked_hbars(
            r["rows"], _COLORS, xlabel="milliseconds per MoE layer (forward + backward)",
            title=f"{r['model'].name}, EP {r['ep']}: one MoE layer by scale-up domain size",
            highlight=label,
            width=700, total_format=",.2f")
        c = r["chosen"]
        share = c["total_s"] / (c["total_s"] + r["compute_s"])
        rows = [
            ("experts per GPU", f"{r['experts_per_gpu']:,}"),
            ("network MB / dispatch", f"{c['network_bytes'] / 1e6:,.1f}"),
            ("NVLink MB / dispatch", f"{c['nvlink_bytes'] / 1e6:,.1f}"),
            ("one dispatch", f"{c['dispatch_s'] * 1e3:,.2f} ms"),
            ("one combine", f"{c['combine_s'] * 1e3:,.2f} ms"),
            ("all-to-alls, fwd+bwd", f"{c['total_s'] * 1e3:,.2f} ms"),
            ("compute, fwd+bwd", f"{r['compute_s'] * 1e3:,.2f} ms"),
            ("all-to-all share", f"{share:.0%}"),
            ("busiest rank / mean", f"{r['imbalance']:.2f}×"),
            ("expert state, no ZeRO", f"{r['expert_state_bytes'] / GIB:,.1f} GiB"),
            ("HBM per GPU", f"{r['hbm_bytes'] / GIB:,.0f} GiB"),
        ]
        body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(val)}</td></tr>"
                       for k, val in rows)
        return f"<table>{body}</table>"
