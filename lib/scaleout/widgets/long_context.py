"""Long-context and precision explorers (notebook 14): context parallelism and the roofline.

:class:`ContextExplorer`: pick a model, a GPU, the sequence length, TP and CP sizes, the
variant (ring or all-to-all), the recipe and recomputation; see activations per GPU
against the sequence length with and without CP, and one layer's time with CP against a
TP as large (:mod:`scaleout.context_parallel`).

:class:`RooflineExplorer`: pick a GPU, a number format, a model and a layout; see the
GPU's rooflines for HBM, its scale-up link and its network port, with the parts of one
step placed on them (:mod:`scaleout.roofline`).

Charts are SVG (:mod:`scaleout.svgchart`); no model logic here.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
import numpy as np

from .. import catalog, compute, memory, roofline, svgchart
from .. import context_parallel as cpar
from ..plotting import CHANNEL_COLORS
from ..units import GIB
from .common import Explorer, gpu_menu, model_menu

__all__ = ["SEQ_LENS", "ContextExplorer", "RooflineExplorer"]

#: Sequence lengths offered: 4K to 1M tokens.
SEQ_LENS = tuple(2**k for k in range(12, 21))
_WIDE = {"style": {"description_width": "120px"}, "layout": W.Layout(width="300px")}
_SIZES = (1, 2, 4, 8, 16, 32, 64)


def _number(x: float) -> str:
    """``12,345`` above 10, ``1.25`` below: never scientific notation."""
    return f"{x:,.0f}" if x >= 10 else f"{x:.2f}"


def _table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)
    return f"<table>{body}</table>"


class ContextExplorer(Explorer):
    """Activations per GPU against sequence length, and CP against a larger TP.

    Controls: ``model``, ``gpu``, ``seq_len`` (tokens), ``tp``, ``cp``, ``variant``
    (``"ring"`` or ``"all-to-all"``), ``recipe`` and ``recompute``. ``result`` holds the
    activation curves (GiB over :data:`SEQ_LENS`), the chosen point, ring attention's
    times and :func:`scaleout.context_parallel.compare_cp_tp` at this length.
    """

    title = "Long context: activations, context parallelism or a larger TP"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "model": model_menu("llama3-405b", _WIDE),
            "gpu": gpu_menu("H100-SXM5-80GB", _WIDE),
            "seq_len": W.Dropdown(options=list(SEQ_LENS), value=131072,
                                  description="sequence", **_WIDE),
            "tp": W.Dropdown(options=list(_SIZES), value=8, description="TP size", **_WIDE),
            "cp": W.Dropdown(options=list(_SIZES), value=16, description="CP size", **_WIDE),
            "variant": W.Dropdown(options=list(cpar.VARIANTS), value="ring",
                                  description="CP variant", **_WIDE),
            "recipe": W.Dropdown(options=["megatron-bf16", "fp8-te"], value="megatron-bf16",
                                 description="recipe", **_WIDE),
            "recompute": W.Dropdown(options=list(memory.RECOMPUTE_MODES), value="selective",
                                    description="recompute", **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        m = catalog.model(v["model"])
        g = catalog.gpu(v["gpu"])
        r = memory.check_precision(v["recipe"], g)
        s, tp, cp = v["seq_len"], v["tp"], v["cp"]
        cpar.check_cp(s, cp, variant=v["variant"], model=m)
        seqs = np.array(SEQ_LENS, dtype=float)
        kw = {"tp": tp, "recompute": v["recompute"], "recipe": r}
        without = cpar.activation_bytes_per_gpu(m, seqs, cp=1, **kw) / GIB
        with_cp = cpar.activation_bytes_per_gpu(m, seqs, cp=cp, **kw) / GIB
        here = float(cpar.activation_bytes_per_gpu(m, s, cp=cp, **kw))
        from ..plan.network import default_network

        net = default_network(g)
        rate = cpar.attention_rate(m, g, s, tp=tp, cp=cp)
        ring_link = net.intra if tp * cp <= net.gpus_per_node else net.inter
        if v["variant"] == "ring":
            attn = cpar.ring_attention_time(m, s, cp, ring_link, tp=tp, attention_flops_per_s=rate)
        else:
            attn = cpar.ulysses_time(m, s, cp, net.gpus_per_node, net.intra, net.inter,
                                     attention_flops_per_s=rate / tp)
        vs = None
        if cp > 1 and m.n_heads % (tp * cp) == 0:
            vs = cpar.compare_cp_tp(m, g, s, base_tp=tp, factor=cp)
        return {"model": m, "gpu": g, "seqs": seqs, "without": without, "with": with_cp,
                "here_bytes": here, "attn": attn, "vs": vs, "cp": cp, "tp": tp, "s": s,
                "variant": v["variant"]}

    def _render(self, r: dict[str, Any]) -> str:
        hbm = r["gpu"].hbm_gib
        series = {f"CP 1 (TP {r['tp']})": (r["seqs"], r["without"]),
                  f"CP {r['cp']} (TP {r['tp']})": (r["seqs"], r["with"]),
                  f"{r['gpu'].name} HBM": (r["seqs"], np.full(r["seqs"].shape, hbm))}
        palette = {f"CP 1 (TP {r['tp']})": "#c44e52", f"CP {r['cp']} (TP {r['tp']})": "#4c72b0",
                   f"{r['gpu'].name} HBM": "#555555"}
        colors = {label: palette[label] for label in series}
        self.image.value = svgchart.line_chart(
            series, colors, logx=True, logy=True, dashed=[f"{r['gpu'].name} HBM"],
            highlight=f"CP {r['cp']} (TP {r['tp']})", marker_x=r["s"],
            marker_label=f"{r['s']:,} tokens", xlabel="sequence length (tokens)",
            ylabel="activations per GPU (GiB)",
            title=f"{r['model'].name}: one micro-batch, all layers", width=700, height=360)
        a = r["attn"]
        rows = [("activations/GPU", f"{r['here_bytes'] / GIB:,.1f} GiB"),
                (f"{r['variant']} attention", f"{a['compute_s'] * 1e3:,.2f} ms/layer"),
                ("its transfers", f"{a['comm_s'] * 1e3:,.2f} ms/layer"),
                ("not hidden", f"{a['exposed_s'] * 1e3:,.2f} ms/layer")]
        if r["vs"] is not None:
            vs = r["vs"]
            rows += [(f"TP {r['tp'] * r['cp']} layer", f"{vs['tp_only_s'] * 1e3:,.2f} ms"),
                     (f"TP {r['tp']} × CP {r['cp']} layer", f"{vs['cp_s'] * 1e3:,.2f} ms"),
                     ("faster", "CP" if vs["cp_s"] < vs["tp_only_s"] else "larger TP")]
        else:
            rows.append(("larger TP", f"TP {r['tp'] * r['cp']} ∤ {r['model'].n_heads} heads"))
        return _table(rows)


_CHANNEL_NAME = {"hbm": "HBM", "scale-up": "scale-up", "scale-out": "scale-out"}
_CHANNEL_COLORS = {_CHANNEL_NAME[c]: color for c, color in CHANNEL_COLORS.items()}


class RooflineExplorer(Explorer):
    """A GPU's rooflines (HBM, scale-up link, network port) with a step's parts on them.

    Controls: ``gpu``, ``fmt`` (``"bf16"`` or ``"fp8"``), ``model``, ``seq_len``,
    ``micro_batch``, ``tp``, ``dp``, ``ep`` and ``micro_batches`` (per step).
    ``result["parts"]`` is the list of :class:`scaleout.roofline.Part`.
    """

    title = "The roofline: what bounds each part of a step"

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        return {
            "gpu": gpu_menu("H100-SXM5-80GB", _WIDE),
            "fmt": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="format",
                              **_WIDE),
            "model": model_menu("llama3-70b", _WIDE),
            "seq_len": W.Dropdown(options=list(SEQ_LENS[:6]), value=8192,
                                  description="sequence", **_WIDE),
            "micro_batch": W.IntSlider(value=1, min=1, max=16, description="micro-batch",
                                       continuous_update=False, **_WIDE),
            "tp": W.Dropdown(options=list(_SIZES[:5]), value=8, description="TP size",
                             **_WIDE),
            "dp": W.Dropdown(options=[2, 8, 64, 512, 4096], value=64, description="DP size",
                             **_WIDE),
            "ep": W.Dropdown(options=[1, 8, 16, 32, 64], value=1, description="EP size",
                             **_WIDE),
            "micro_batches": W.Dropdown(options=[1, 4, 16, 64], value=16,
                                        description="micro-batches", **_WIDE),
        }

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        m = catalog.model(v["model"])
        if v["ep"] > 1:
            from .. import moe

            moe.check_ep(m, v["ep"])
        parts = roofline.step_parts(m, v["gpu"], micro_batch=v["micro_batch"],
                                    seq_len=v["seq_len"], tp=v["tp"], dp=v["dp"], ep=v["ep"],
                                    micro_batches=v["micro_batches"], fmt=v["fmt"])
        g = catalog.gpu(v["gpu"])
        peak = compute.matmul_peak_flops(g, "fp8-te" if v["fmt"] == "fp8" else "mixed-adam")
        ridge = roofline.ridge_points(g, v["fmt"])
        return {"parts": parts, "gpu": g, "peak": peak, "ridge": ridge, "fmt": v["fmt"]}

    def _render(self, r: dict[str, Any]) -> str:
        xs = np.unique(np.concatenate([np.logspace(-1, 6, 29), list(r["ridge"].values())]))
        series, colors = {}, {}
        for channel, ridge in r["ridge"].items():
            name = _CHANNEL_NAME[channel]
            bw = r["peak"] / ridge
            series[name] = (xs, np.asarray(roofline.attainable_flops(xs, r["peak"], bw)) / 1e12)
            colors[name] = _CHANNEL_COLORS[name]
        points, point_colors = {}, {}
        for i, p in enumerate(r["parts"], start=1):
            bw = r["peak"] / p.ridge
            y = float(roofline.attainable_flops(min(p.intensity, 1e6), r["peak"], bw)) / 1e12
            points[str(i)] = (min(p.intensity, 1e6), y)
            point_colors[str(i)] = _CHANNEL_COLORS[_CHANNEL_NAME[p.channel]]
        top = r["peak"] / 1e12
        self.image.value = svgchart.line_chart(
            series, colors, logx=True, logy=True, points=points, point_colors=point_colors,
            label_points=True, y_range=(top / 1e6, top * 5),
            xlabel="arithmetic intensity (FLOPs per byte of the channel)",
            ylabel="attainable TFLOP/s",
            title=f"{r['gpu'].name}, {r['fmt'].upper()} peak {r['peak'] / 1e12:,.0f} TFLOP/s",
            width=580, height=380)
        head = "<tr><th>part</th><th>FLOP/B</th><th>ridge</th><th>bound by</th></tr>"
        body = "".join(
            f"<tr><th style='white-space:nowrap'>{i} · {html.escape(p.name)}</th>"
            f"<td>{_number(p.intensity)}</td><td>{p.ridge:,.0f}</td>"
            f"<td>{html.escape(p.bound)}</td></tr>"
            for i, p in enumerate(r["parts"], start=1))
        return f"<table>{head}{body}</table>"
