"""Collective-cost explorer (notebook 07): α-β time and bus bandwidth of a collective, by algorithm.

Pick a collective, one or more algorithms, a link (a catalog link, or α and B
fitted to one of the real nccl-tests logs of ``data/nccl-tests``), the number of
GPUs and a message size; see time against message size on log-log axes (with the
bandwidth lower bound dashed) and bus bandwidth against size, and read the
numbers at the chosen size. All numbers come from :mod:`scaleout.collectives`
and :mod:`scaleout.calibration`; the charts are SVG (:mod:`scaleout.svgchart`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as W
import numpy as np

from .. import calibration, catalog, collectives, svgchart
from .. import formatting as fmt
from ..plotting import ALGORITHM_COLORS, ALGORITHM_LABELS  # one colour and name per algorithm
from ..render import html_table
from .common import Explorer

__all__ = ["ALGORITHM_COLORS", "ALGORITHM_LABELS", "FIT_PREFIX", "CollectiveExplorer", "size_text"]

_BOUND_COLOR = "#555555"
_BOUND = "bandwidth lower bound"
_LINK_LINE = "link bandwidth B"
#: Link menu entries that stand for α and B fitted to a shipped log: ``"fit: <log name>"``.
FIT_PREFIX = "fit: "
#: Sizes of the sweep drawn on the charts: 1 B to 8 GiB.
_SWEEP = 2.0 ** np.arange(0, 34)
_WIDE = {"style": {"description_width": "90px"}, "layout": W.Layout(width="330px")}


def size_text(n_bytes: float) -> str:
    """``268435456`` → ``"256 MiB"`` (binary prefixes, as nccl-tests sweeps powers of two)."""
    if not np.isfinite(n_bytes):
        return "none"
    return fmt.bytes_iec(n_bytes)


def _op_text(op: str) -> str:
    """``"all_reduce"`` → ``"all-reduce"``: a collective as it is written in prose."""
    return op.replace("_", "-")


#: Ticks of the message-size axis: 1 B, 32 B, 1 KiB, 32 KiB ... 8 GiB.
_SIZE_TICKS = [2.0**k for k in range(0, 34, 5)]


class CollectiveExplorer(Explorer):
    """Time and bus bandwidth of one collective under several algorithms.

    Controls: ``op`` (:data:`scaleout.collectives.OPS`), ``algorithms`` (a tuple
    of :data:`scaleout.collectives.ALGORITHMS`; those that do not model the op
    are skipped and named), ``link`` (a catalog link name or ``"fit: <log>"``),
    ``n`` (GPUs) and ``size_bytes`` (a log slider, 1 B to 8 GiB).
    ``result`` is a dict: ``link`` (the :class:`~scaleout.collectives.AlphaBeta`
    used), ``time_s``, ``busbw_gbytes_s`` and ``crossover_bytes`` per algorithm
    at the chosen size, ``bound_s`` (the bandwidth lower bound), ``best``
    (the fastest algorithm), ``skipped`` and the ``sweep`` arrays drawn.
    """

    title = "What does a collective cost? α-β time by algorithm"

    def __init__(self, **initial: Any) -> None:
        self._fits: dict[str, tuple[calibration.NcclTestsLog, calibration.AlphaBetaFit]] = {}
        super().__init__(**initial)

    def _build_controls(self) -> dict[str, W.ValueWidget]:
        links = [*catalog.link_names(), *(FIT_PREFIX + name for name in calibration.log_names())]
        return {
            "op": W.Dropdown(options=[(_op_text(op), op) for op in collectives.OPS],
                             value="all_reduce", description="collective", **_WIDE),
            "algorithms": W.SelectMultiple(options=[(ALGORITHM_LABELS.get(a, a), a)
                                                    for a in collectives.ALGORITHMS],
                                           value=("ring", "tree"), rows=4,
                                           description="algorithms", **_WIDE),
            "link": W.Dropdown(options=links, value="InfiniBand NDR", description="link",
                               **_WIDE),
            "n": W.BoundedIntText(value=1024, min=0, max=10_000_000, description="GPUs n",
                                  **_WIDE),
            "size_bytes": W.FloatLogSlider(value=2.0**28, base=2, min=0, max=33, step=1,
                                           description="message", readout=False,
                                           continuous_update=False, **_WIDE),
        }

    # -- library calls only -----------------------------------------------------------------
    def _link(self, name: str) -> collectives.AlphaBeta:
        if name.startswith(FIT_PREFIX):
            log_name = name.removeprefix(FIT_PREFIX)
            if log_name not in self._fits:
                log = calibration.load_log(log_name)
                self._fits[log_name] = (log, calibration.fit_log(log))
            return self._fits[log_name][1].link
        spec = catalog.link(name)
        return collectives.AlphaBeta(spec.latency_s, spec.bandwidth_bytes_s)

    def _label(self, name: str) -> str:
        if name.startswith(FIT_PREFIX):
            log, _fit = self._fits[name.removeprefix(FIT_PREFIX)]
            return f"α, B fitted to {log.short_label}"
        return name

    def _compute(self, v: Mapping[str, Any]) -> dict[str, Any]:
        op, n, size = v["op"], v["n"], float(v["size_bytes"])
        chosen = tuple(v["algorithms"])
        if not chosen:
            raise ValueError("algorithms: choose at least one of "
                             f"{', '.join(collectives.ALGORITHMS)}")
        link = self._link(v["link"])
        usable, skipped = [], []
        for algo in chosen:
            try:
                collectives.cost_terms(op, 1.0, n, algo)
            except ValueError as exc:
                if "algorithm here" not in str(exc):
                    raise  # a bad n, not an unsupported pairing
                skipped.append(algo)
            else:
                usable.append(algo)
        if not usable:
            raise ValueError(f"algorithms {', '.join(map(repr, chosen))} do not model op={op!r}; "
                             "ring models every collective")
        sweep_t = {a: np.asarray(collectives.collective_time(op, _SWEEP, n, link, a))
                   for a in usable}
        sweep_bus = {a: np.asarray(collectives.nccl_tests_prediction(op, _SWEEP, n, link, a)
                                   ["busbw_gbytes_s"]) for a in usable}
        bound = np.asarray(collectives.lower_bound_bytes(op, _SWEEP, n)) / link.bandwidth_bytes_s
        at = {a: collectives.nccl_tests_prediction(op, size, n, link, a) for a in usable}
        time_s = {a: at[a]["time_us"] * 1e-6 for a in usable}
        return {
            "op": op, "n": n, "size_bytes": size, "link": link, "link_name": v["link"],
            "link_label": self._label(v["link"]),
            "algorithms": tuple(usable), "skipped": tuple(skipped),
            "time_s": time_s,
            "busbw_gbytes_s": {a: at[a]["busbw_gbytes_s"] for a in usable},
            "algbw_gbytes_s": {a: at[a]["algbw_gbytes_s"] for a in usable},
            "latency_share": {a: collectives.collective_time(op, 0.0, n, link, a) / time_s[a]
                              if time_s[a] > 0 else 0.0 for a in usable},
            "crossover_bytes": {a: collectives.crossover_bytes(op, n, link, a) for a in usable},
            "bound_s": float(collectives.lower_bound_bytes(op, size, n))
            / link.bandwidth_bytes_s,
            "best": min(usable, key=lambda a: time_s[a]),
            "sweep": {"size_bytes": _SWEEP, "time_s": sweep_t, "busbw_gbytes_s": sweep_bus,
                      "bound_s": bound},
        }

    # -- drawing ----------------------------------------------------------------------------
    def _render(self, r: dict[str, Any]) -> str:
        sw = r["sweep"]
        name = {a: ALGORITHM_LABELS.get(a, a) for a in r["algorithms"]}
        colors = {name[a]: ALGORITHM_COLORS[a] for a in r["algorithms"]}
        size, best = r["size_bytes"], r["best"]
        op = _op_text(r["op"])
        where = f"{op}, n = {fmt.count(r['n'])}, {r['link_label']}"
        times = {name[a]: (sw["size_bytes"], sw["time_s"][a]) for a in r["algorithms"]}
        curves = np.concatenate([t for _, t in times.values()])
        curves = curves[curves > 0]
        y_lo = float(curves.min()) / 2 if curves.size else 1e-9
        y_hi = float(curves.max()) * 2 if curves.size else 1e-6
        if r["n"] > 1:  # the bound, where it is inside the frame of the algorithms' curves
            bound_s = sw["bound_s"]
            times[_BOUND] = (sw["size_bytes"], np.where(bound_s >= y_lo, bound_s, np.nan))
        top = svgchart.line_chart(
            times, {**colors, _BOUND: _BOUND_COLOR}, logx=True, logy=True, y_range=(y_lo, y_hi),
            xlabel="message size S", ylabel="time", title=f"Time: {where}",
            dashed=(_BOUND,), highlight=name[best], marker_x=size, marker_label=size_text(size),
            points={name[a]: (size, r["time_s"][a]) for a in r["algorithms"]}, height=330,
            xticks=_SIZE_TICKS, xtick_format=fmt.bytes_iec, ytick_format=fmt.duration)
        link_b = r["link"].bandwidth_bytes_s / 1e9
        bus = {name[a]: (sw["size_bytes"], sw["busbw_gbytes_s"][a]) for a in r["algorithms"]}
        bus[_LINK_LINE] = (sw["size_bytes"], np.full(sw["size_bytes"].shape, link_b))
        peak = max([link_b, *(float(np.max(y)) for _, y in bus.values())])
        bottom = svgchart.line_chart(
            bus, {**colors, _LINK_LINE: _BOUND_COLOR}, logx=True,
            xlabel="message size S", ylabel="bus bandwidth (GB/s)",
            title="Bus bandwidth = S / t · F(n)", dashed=(_LINK_LINE,), highlight=name[best],
            marker_x=size, y_range=(0.0, peak * 1.1),
            points={name[a]: (size, r["busbw_gbytes_s"][a]) for a in r["algorithms"]},
            height=300,
            xticks=_SIZE_TICKS, xtick_format=fmt.bytes_iec)
        self.image.value = svgchart.vstack([top, bottom])

        rows = [(name[a] + (" ★" if a == best else ""), fmt.duration(r["time_s"][a]),
                 fmt.byte_rate(r["busbw_gbytes_s"][a] * 1e9), fmt.percent(r["latency_share"][a]),
                 size_text(r["crossover_bytes"][a])) for a in r["algorithms"]]
        table = html_table(["algorithm", "time", "bus bandwidth", "latency share",
                            "crossover S*"], rows,
                           align=["left", "right", "right", "right", "right"])
        skipped = (f"<p>Not modelled for {html.escape(op)}: "
                   f"{html.escape(', '.join(ALGORITHM_LABELS.get(a, a) for a in r['skipped']))}"
                   ".</p>" if r["skipped"] else "")
        ab = r["link"]
        return (
            f"<p><b>{html.escape(op)}</b> of {size_text(size)} on "
            f"{fmt.plural(r['n'], 'GPU')}; link α = {fmt.duration(ab.latency_s)}, "
            f"B = {fmt.byte_rate(ab.bandwidth_bytes_s)} per direction</p>{table}"
            f"<p>Bandwidth lower bound: {fmt.duration(r['bound_s'])}. Fastest here: "
            f"<b>{html.escape(name[best])}</b>.</p>{skipped}"
        )
