"""Matplotlib figures for the notebooks: drawing only, no model logic.

Functions take results computed by the library and an ``Axes`` to draw on, so
a widget can redraw the same figure on every event. Figures are built with
``matplotlib.figure.Figure`` (not pyplot) so they are never shown twice; those of
:func:`new_figure` print human numbers on their axes and draw Korean with a CJK font where
one is installed (:class:`HumanFigure`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import (
    FuncFormatter,
    LogFormatterSciNotation,
    NullFormatter,
    NullLocator,
    ScalarFormatter,
)

from . import fonts, formatting, svgchart
from .memory import MemoryBreakdown
from .plan import PART_WORDS as _PART_WORDS
from .units import GIB

__all__ = [
    "ALGORITHM_COLORS",
    "ALGORITHM_LABELS",
    "CHANNEL_COLORS",
    "CHANNEL_LABELS",
    "FRAMEWORK_COLORS",
    "HOLDING_COLORS",
    "LINK_COLORS",
    "LOAD_BALANCE_COLORS",
    "LOAD_BALANCE_LABELS",
    "MECHANISM_COLORS",
    "MECHANISM_LABELS",
    "MEMORY_COLORS",
    "MEMORY_LABELS",
    "OTHER_LINK_COLORS",
    "PIPELINE_COLORS",
    "PLANE_COLORS",
    "PLAN_MEMORY_COLORS",
    "RUN_COLORS",
    "STEP_COLORS",
    "STEP_LABELS",
    "STEP_WORD_COLORS",
    "STUDY_COLORS",
    "TIME_COLORS",
    "WALK_COLORS",
    "HumanFigure",
    "activation_lines",
    "bars",
    "bubble_curves",
    "clos_diagram",
    "collective_time_vs_gpus",
    "collective_time_vs_size",
    "dp_timeline",
    "ecmp_against_spraying",
    "expert_map",
    "failure_rates",
    "generation_cost_lines",
    "histogram",
    "holding_bars_svg",
    "incast_queue",
    "incast_victim",
    "labelled_hbars",
    "lines",
    "link_colors",
    "load_balance_lines",
    "memory_bars",
    "memory_bars_svg",
    "memory_gap",
    "new_figure",
    "new_panels",
    "pipeline_gantt",
    "pipeline_gantt_svg",
    "plan_bars_svg",
    "ring_diagram",
    "rooflines",
    "run_timeline",
    "scaling_lines",
    "scatter",
    "stage_bars",
    "stage_memory_bars",
    "stage_memory_bars_svg",
    "step_gap_scatter",
    "step_in_words",
    "tp_sweep_lines",
    "validation_scatter",
    "walk_matches_svg",
]

#: One colour per memory part, the same in every notebook.
MEMORY_COLORS = {
    "weights": "#1f77b4",
    "grads": "#ff7f0e",
    "optimizer": "#2ca02c",
    "activations": "#d62728",
}


#: The planner's memory parts: the model state and activations, and what a run keeps besides
#: (:data:`scaleout.plan.RESERVE`).
PLAN_MEMORY_COLORS = {**MEMORY_COLORS, "reserve": "#7f7f7f"}

#: The memory parts in words, for legends: ``"grads"`` reads ``"gradients"``.
MEMORY_LABELS = {"weights": "weights", "grads": "gradients", "optimizer": "optimizer state",
                 "activations": "activations", "reserve": "reserve (context, buffers, slack)",
                 "HBM capacity": "HBM capacity"}


def _in_words(parts: Mapping[str, float]) -> dict[str, float]:
    return {MEMORY_LABELS.get(k, k): float(v) for k, v in parts.items()}


def _word_colors(colors: Mapping[str, str]) -> dict[str, str]:
    return {MEMORY_LABELS.get(k, k): c for k, c in colors.items()}


def memory_bars_svg(rows: dict[str, MemoryBreakdown], title: str = "",
                    highlight: str | None = None) -> bytes:
    """The same chart as :func:`memory_bars` as SVG bytes, for widgets (sub-millisecond)."""
    data = {label: _in_words({k: v for k, v in b.gib().items() if k in MEMORY_COLORS})
            for label, b in rows.items()}
    cap = next(iter(rows.values())).gib()["capacity"] if rows else None
    return svgchart.stacked_hbars(
        data, _word_colors(MEMORY_COLORS), marker=cap,
        marker_label=f"capacity {formatting.sig(cap)} GiB" if cap else "",
        xlabel="memory per GPU (GiB)", title=title, highlight=highlight,
    )


class HumanFigure(Figure):
    """A ``Figure`` whose axes print numbers as people write them, with no offset or exponent.

    When drawn, every linear or log axis still on matplotlib's default number formatter gets
    :func:`scaleout.formatting.axis_tick` instead: ``20k``, ``1.5M``, ``0.25``, never ``1e6``
    in a corner. Axes whose ticks were labelled otherwise (categories, fixed labels) are left
    alone. Texts with Hangul draw with a CJK font (:func:`scaleout.fonts.fit_korean_texts`).
    """

    def draw(self, renderer):
        fonts.fit_korean_texts(self)
        for ax in self.axes:
            for axis in (ax.xaxis, ax.yaxis):
                formatter = axis.get_major_formatter()
                if isinstance(formatter, ScalarFormatter | LogFormatterSciNotation):
                    axis.set_major_formatter(FuncFormatter(formatting.axis_formatter()))
                    if isinstance(formatter, LogFormatterSciNotation):
                        axis.set_minor_formatter(NullFormatter())
        return super().draw(renderer)


def new_figure(width: float = 8.0, height: float = 3.2) -> tuple[Figure, Axes]:
    """A pyplot-free figure with one axes, sized for a notebook or a projector.

    Its tick labels are human numbers (:class:`HumanFigure`). No layout engine: the inline
    backend saves with ``bbox_inches="tight"``, which already keeps labels and outside
    legends in frame, at half the cost of constrained layout.
    """
    fig = HumanFigure(figsize=(width, height))
    return fig, fig.add_subplot()


def new_panels(n: int = 2, width: float = 11.0, height: float = 3.8) -> tuple[Figure, list[Axes]]:
    """A pyplot-free figure with ``n`` axes side by side (:func:`new_figure`, in a row)."""
    fig = HumanFigure(figsize=(width, height))
    fig.subplots_adjust(wspace=0.3)  # room for the right panel's tick labels and axis title
    return fig, [fig.add_subplot(1, n, i + 1) for i in range(n)]


def _human_axis(axis: Axis, unit: str = "", *, binary: bool = False) -> None:
    """Tick labels of ``axis`` as :func:`scaleout.formatting.axis_tick` writes them, with a
    unit (``"1 ms"``, ``"64 GiB"``) and no labels on minor ticks."""
    axis.set_major_formatter(FuncFormatter(formatting.axis_formatter(unit, binary=binary)))
    axis.set_minor_formatter(NullFormatter())


def _powers_of_two(lo: float, hi: float, step: int) -> list[float]:
    """Every ``step``-th power of two from ``lo`` to ``hi``: ticks of a byte or token axis."""
    first, last = int(np.ceil(np.log2(lo))), int(np.floor(np.log2(hi)))
    first = -(-first // step) * step
    return [2.0**k for k in range(first, last + 1, step)]


def _legend_outside(ax: Axes, fontsize: float = 8) -> None:
    """The legend to the right of the axes, out of the data's way."""
    ax.legend(fontsize=fontsize, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _finish(ax: Axes, title: str = "", *, xlabel: str | None = None, ylabel: str | None = None,
            legend: str | None = "outside", grid: str | None = "major",
            fontsize: float = 8) -> None:
    """The close every line chart shares: axis names, a light ``grid`` (``"major"``,
    ``"both"`` or None), the legend (``"outside"``: :func:`_legend_outside`; else a matplotlib
    location such as ``"lower right"``; None: none) and the title."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if grid:
        ax.grid(True, which=grid, alpha=0.3)
    if legend == "outside":
        _legend_outside(ax, fontsize)
    elif legend:
        ax.legend(fontsize=fontsize, loc=legend)
    if title:
        ax.set_title(title, fontsize=11)


def lines(ax: Axes, x, ys: Mapping[str, Any], *, xlabel: str, ylabel: str, title: str = "",
          xscale: str = "linear", yscale: str = "linear", xbase: float = 10,
          colors: Mapping[str, str] | None = None,
          dashed: Collection[str] = (), marker: str | None = None,
          styles: Mapping[str, str] | None = None, bold: Collection[str] = (),
          points: Mapping[str, tuple[Any, Any]] | None = None,
          hlines: Mapping[str, float] | None = None, mark_x: float | None = None,
          mark_label: str = "", xspan: tuple[float, float, str] | None = None,
          ylim: tuple[float, float] | None = None,
          legend: str | None = "outside") -> None:
    """One line per entry of ``ys`` (label -> values at ``x``), the notebooks' plain line chart.

    Like d2l's ``plot``: a cell computes its curves with the library and hands them over in
    one call. ``x`` is shared, or a mapping label -> x of that line (measurements taken at
    their own sizes). Lines named in ``colors`` take that colour (the rest matplotlib's
    cycle), those in ``dashed`` are dashed, those in ``bold`` thicker (the reader's
    setting); ``styles`` gives a line a matplotlib format instead (``"o"`` dots only,
    ``"x"``, ``"o-"``, ``":"``). Labels starting with ``_`` stay out of the legend.
    ``points`` (label of a line -> ``(xs, ys)``) are dots with a black edge in that line's
    colour: simulated estimates or optima on top of a formula's curve. ``hlines``
    (label -> y) are dashed black reference lines (capacities, budgets) named in the legend;
    ``mark_x`` draws a dotted grey line at the reader's setting with ``mark_label`` beside
    it; ``xspan`` ``(lo, hi, label)`` shades a range of x in grey. Axes are
    ``xscale``/``yscale`` (a log x axis in powers of ``xbase``), with a light major grid and
    the legend ``"outside"`` (or a matplotlib location, or None).
    """
    drawn = {}
    for label, y in ys.items():
        xs = x[label] if isinstance(x, Mapping) else x
        style = (styles or {}).get(label)
        kw: dict[str, Any] = {"color": (colors or {}).get(label), "label": label}
        if label in bold:
            kw["linewidth"] = 2.5
        if style is not None:
            (drawn[label],) = ax.plot(xs, y, style, markersize=5, **kw)
        else:
            (drawn[label],) = ax.plot(xs, y, marker=marker, markersize=4 if marker else None,
                                      linestyle="--" if label in dashed else "-", **kw)
    for label, (px, py) in (points or {}).items():
        ax.plot(px, py, "o", color=drawn[label].get_color(), markeredgecolor="black",
                markersize=6, zorder=3)
    for label, y in (hlines or {}).items():
        ax.axhline(y, color="black", linestyle="--", linewidth=1, label=label)
    if mark_x is not None:
        ax.axvline(mark_x, color="gray", linestyle=":", linewidth=1)
        if mark_label:
            ax.text(mark_x, 0.98, f" {mark_label}", transform=ax.get_xaxis_transform(),
                    fontsize=9, va="top", color="#555555")
    if xspan is not None:
        lo, hi, label = xspan
        ax.axvspan(lo, hi, color="gray", alpha=0.12, label=label)
    if xscale == "log":
        ax.set_xscale("log", base=xbase)
    else:
        ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    if ylim is not None:
        ax.set_ylim(*ylim)
    _finish(ax, title, xlabel=xlabel, ylabel=ylabel, legend=legend)


def bars(ax: Axes, categories: Sequence[Any], values: Mapping[str, Sequence[float]], *,
         ylabel: str, xlabel: str = "", title: str = "",
         colors: Mapping[str, str] | None = None, overlay: bool = False,
         hlines: Mapping[str, float] | None = None, yscale: str = "linear",
         legend: str | None = "outside") -> None:
    """Vertical bars, one series per entry of ``values`` (label -> one value per category).

    The series stand side by side in each category (grouped bars), or with ``overlay`` all
    at the category itself, full width, the later ones slightly see-through (the same
    quantity in two cases: expert loads skewed and balanced). String ``categories`` become
    the tick labels; numeric ones are positions on a numeric axis (many experts, ticks left
    to matplotlib). Series named in ``colors`` take that colour; ``hlines`` (label -> y) are
    dashed black reference lines named in the legend (a mean, the compute time).
    """
    numeric = all(isinstance(c, int | float | np.integer | np.floating) for c in categories)
    pos = np.asarray(categories, dtype=float) if numeric else np.arange(len(categories))
    n = len(values)
    width = 1.0 if overlay else 0.8 / max(n, 1)
    for i, (label, v) in enumerate(values.items()):
        shift = 0.0 if overlay else (i - (n - 1) / 2) * width
        ax.bar(pos + shift, np.asarray(v, dtype=float), width=width, label=label,
               color=(colors or {}).get(label), alpha=0.8 if overlay and i else 1.0)
    if not numeric:
        ax.set_xticks(pos, [str(c) for c in categories])
    for label, y in (hlines or {}).items():
        ax.axhline(y, color="black", linestyle="--", linewidth=1, label=label)
    ax.set_yscale(yscale)
    _finish(ax, title, xlabel=xlabel, ylabel=ylabel, legend=legend, grid=None)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def histogram(ax: Axes, values, *, xlabel: str, ylabel: str = "count", title: str = "",
              bins: int = 40, color: str = "#2ca02c",
              vlines: Mapping[str, float] | None = None,
              legend: str | None = "upper left") -> None:
    """How ``values`` spread: a histogram of ``bins`` bars in ``color``, with ``vlines``
    (label -> x, e.g. a model's prediction) as dashed black lines named in the legend."""
    ax.hist(np.asarray(values, dtype=float), bins=bins, color=color, alpha=0.8)
    for label, xv in (vlines or {}).items():
        ax.axvline(xv, color="black", linestyle="--", linewidth=1, label=label)
    _finish(ax, title, xlabel=xlabel, ylabel=ylabel, legend=legend if vlines else None,
            grid=None)


def scatter(ax: Axes, groups: Mapping[str, tuple[Any, Any]], *, xlabel: str, ylabel: str,
            title: str = "", colors: Mapping[str, str] | None = None,
            markers: Mapping[str, str] | None = None,
            names: Mapping[str, Sequence[str]] | None = None, below: Collection[str] = (),
            lines: Mapping[str, tuple[Any, Any]] | None = None, xscale: str = "linear",
            yscale: str = "linear", legend: str | None = "upper left") -> None:
    """Points in labelled groups (label -> ``(xs, ys)``), each group in its own colour and
    marker (``colors``, ``markers``), named in the legend.

    ``names`` gives a group's points their words (one per point; ``""`` leaves one
    unnamed), written beside the point, or under it for names in ``below``; ``lines``
    (label -> ``(xs, ys)``) are dashed grey reference lines (a rule the points are read
    against).
    """
    for label, (xs, ys) in groups.items():
        ax.scatter(xs, ys, marker=(markers or {}).get(label, "o"),
                   color=(colors or {}).get(label), s=40, label=label, zorder=3)
        for name, xv, yv in zip((names or {}).get(label, ()), np.ravel(xs), np.ravel(ys),
                                strict=False):
            if name:
                ax.annotate(name, (xv, yv), fontsize=8, textcoords="offset points",
                            xytext=(4, -11 if name in below else 3))
    for label, (xs, ys) in (lines or {}).items():
        ax.plot(xs, ys, color="#888888", linestyle="--", label=label)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    _finish(ax, title, xlabel=xlabel, ylabel=ylabel, legend=legend)


def memory_bars(ax: Axes, rows: dict[str, MemoryBreakdown], capacity_gib: float | None = None,
                title: str = "") -> None:
    """Stacked horizontal bars of memory per GPU (GiB), one bar per labelled configuration.

    A dashed line marks the GPU's capacity; bars past it are hatched.
    """
    ax.clear()
    labels = list(rows)
    for i, label in enumerate(labels):
        parts = rows[label].gib()
        left = 0.0
        over = not rows[label].fits
        for part, color in MEMORY_COLORS.items():
            width = parts[part]
            ax.barh(i, width, left=left, color=color, hatch="//" if over else None,
                    edgecolor="white" if not over else "black", linewidth=0.5)
            left += width
        ax.text(left, i, f" {left:,.1f}", va="center", fontsize=9)
    cap = capacity_gib
    if cap is None and labels:
        cap = rows[labels[0]].gib()["capacity"]
    if cap is not None and cap != float("inf"):
        ax.axvline(cap, color="black", linestyle="--", linewidth=1.2)
        ax.text(cap, 0.02, f" capacity {cap:,.0f} GiB", transform=ax.get_xaxis_transform(),
                fontsize=9, ha="left", va="bottom")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_ylim(len(labels) - 0.4, -0.6)
    handles = [Patch(color=c, label=p) for p, c in MEMORY_COLORS.items()]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="does not fit"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
              frameon=False)
    if title:
        ax.set_title(title)


# =========================================================================== scale-up limits
# Figures of notebooks/00_start_here.ipynb and 01_scale_up_limits.ipynb. Every function takes
# numbers already computed (and converted to the unit its axis names) by the library.

#: Colours of the "what must be held" charts: the memory parts plus the capacity bars.
HOLDING_COLORS = {
    "weights": MEMORY_COLORS["weights"],
    "grads": MEMORY_COLORS["grads"],
    "optimizer": MEMORY_COLORS["optimizer"],
    "HBM capacity": "#7f7f7f",
}

#: Colours of the walk chart: matches in written and in planned notebooks.
WALK_COLORS = {"in a written notebook": "#2ca02c", "in a planned notebook": "#bdbdbd"}


def memory_gap(ax: Axes, models: dict[str, tuple[int, float, float]],
               gpus: dict[str, tuple[int, float]], title: str = "",
               weights_label: str = "model: fp16 weights (2 bytes/param)",
               state_label: str = "model: full training state (16 bytes/param)",
               highlight: str | None = None,
               extra: dict[str, tuple[int, float, float]] | None = None) -> None:
    """Model memory against one GPU's memory over the years, on a log scale (GiB).

    ``models`` maps a label to ``(year, weights_gib, training_state_gib)``; ``gpus``
    a label to ``(year, hbm_gib)``. Weights and training state are drawn as two
    series of markers joined by year, GPUs as a staircase of the largest HBM so
    far. ``highlight`` names a model label to draw in bold; ``extra`` models (same
    tuples) are drawn as stars, not joined to the others.
    """
    ax.clear()
    box = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}
    m_items = sorted(models.items(), key=lambda kv: (kv[1][0], kv[1][1]))
    g_items = sorted(gpus.items(), key=lambda kv: (kv[1][0], kv[1][1]))
    years = [v[0] for _, v in m_items]
    ax.plot(years, [v[2] for _, v in m_items], "s--", color=MEMORY_COLORS["optimizer"],
            markersize=8, label=state_label)
    ax.plot(years, [v[1] for _, v in m_items], "o-", color=MEMORY_COLORS["weights"],
            markersize=9, linewidth=2, label=weights_label)
    for label, (year, w, _s) in m_items:
        ax.annotate(label, (year, w), textcoords="offset points", xytext=(10, 0),
                    fontsize=11, color=MEMORY_COLORS["weights"], va="center", bbox=box,
                    fontweight="bold" if label == highlight else "normal")
    for label, (year, w, st) in (extra or {}).items():
        ax.plot([year, year], [w, st], "*", color="#9467bd", markersize=15, zorder=4,
                linestyle="none", label=f"{label}: weights and training state")
        ax.annotate(label, (year, w), textcoords="offset points", xytext=(10, 0),
                    fontsize=11, color="#9467bd", va="center", bbox=box, fontweight="bold")
    g_years = [v[0] for _, v in g_items]
    best: list[float] = []
    for _, (_year, cap) in g_items:
        best.append(max(cap, best[-1]) if best else cap)
    ax.step(g_years, best, where="post", color="black", linewidth=1.5)
    ax.plot(g_years, [v[1] for _, v in g_items], "D", color="black", markersize=7,
            label="one GPU: HBM capacity (largest so far: staircase)")
    for label, (year, cap) in g_items:
        ax.annotate(label, (year, cap), textcoords="offset points", xytext=(5, -7),
                    fontsize=10, ha="left", va="top")
    ax.set_yscale("log")
    ax.set_xlabel("year", fontsize=12)
    ax.set_ylabel("memory (GiB = 2³⁰ bytes), log scale", fontsize=12)
    ax.tick_params(labelsize=11)
    everything = [*m_items, *(extra or {}).items()]
    lo = min([v[0] for _, v in everything] + g_years)
    hi = max([v[0] for _, v in everything] + g_years)
    ax.set_xlim(lo - 0.6, hi + 1.0)
    ax.set_xticks(range(lo, hi + 1))
    top = max(v[2] for _, v in everything)
    bottom = min([v[1] for _, v in everything] + [v[1] for _, v in g_items])
    ax.set_ylim(bottom / 4, top * 3)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.legend(loc="lower right", fontsize=10.5, frameon=True, framealpha=0.9)
    if title:
        ax.set_title(title, fontsize=13)


def labelled_hbars(ax: Axes, rows: dict[str, tuple[float, str]], xlabel: str,
                   lines: dict[str, float] | None = None, title: str = "",
                   colors: str | list[str] = "#1f77b4", log: bool = True) -> None:
    """Horizontal bars, each annotated with its own text, on a log (or linear) x axis.

    ``rows`` maps a bar label to ``(value, annotation)``; ``lines`` draws labelled
    dashed reference lines (``{"one year": 365.25}``); ``colors`` is one colour or
    one per bar.
    """
    ax.clear()
    labels = list(rows)
    values = [rows[k][0] for k in labels]
    marks = list((lines or {}).values())
    ax.barh(range(len(labels)), values, color=colors, height=0.6)
    for i, k in enumerate(labels):
        x = values[i] * 1.15 if log else values[i] + 0.015 * max(values + marks)
        ax.text(x, i, rows[k][1], va="center", fontsize=11)
    for name, x in (lines or {}).items():
        ax.axvline(x, color="black", linestyle="--", linewidth=1.2)
        ax.text(x, 1.0, f" {name}", transform=ax.get_xaxis_transform(), fontsize=10.5,
                va="bottom", ha="left")
    ax.set_yticks(range(len(labels)), labels, fontsize=11)
    ax.set_ylim(len(labels) - 0.4, -0.6)
    if log:
        ax.set_xscale("log")
        ax.set_xlim(min(values + marks) / 3, max(values + marks) * 8)
    else:
        ax.set_xlim(0, max(values + marks) * 1.2)
    ax.set_xlabel(xlabel, fontsize=12)
    ax.tick_params(axis="x", labelsize=11)
    ax.grid(True, which="major", axis="x", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=13, pad=18 if lines else 6)


def holding_bars_svg(rows: dict[str, dict[str, float]], marker_gib: float,
                     marker_label: str, title: str = "") -> bytes:
    """What must be held against what GPUs hold, as SVG for a widget (GiB).

    ``rows`` maps a bar label to ``{part: GiB}`` with parts from
    :data:`HOLDING_COLORS` (weights, grads, optimizer, HBM capacity); the dashed
    marker is one GPU's HBM.
    """
    return svgchart.stacked_hbars(
        {label: _in_words(parts) for label, parts in rows.items()}, _word_colors(HOLDING_COLORS),
        marker=marker_gib, marker_label=marker_label,
        xlabel="memory (GiB = 2³⁰ bytes)", title=title,
    )


def walk_matches_svg(counts: dict[str, tuple[int, bool]], title: str = "") -> bytes:
    """Matches per notebook of the walk as SVG bars: ``{label: (count, written)}``."""
    rows = {label: {next(iter(WALK_COLORS)) if written else list(WALK_COLORS)[1]: n}
            for label, (n, written) in counts.items()}
    return svgchart.stacked_hbars(
        rows, WALK_COLORS, xlabel="glossary terms + concepts found (count)", title=title,
        row_height=26, total_format=formatting.count, integer_ticks=True,
    )


# =========================================================================== parallelism
# Figures of notebooks/03_data_parallelism, 04_tensor_parallelism and 06_zero_stages.

#: One colour per link in the parallelism notebooks; other links get :data:`OTHER_LINK_COLORS`.
LINK_COLORS = {
    "NVLink 4": "#2ca02c",
    "InfiniBand NDR": "#1f77b4",
    "RoCE v2 400GbE": "#9467bd",
    "TCP/IP 100GbE": "#d62728",
}
OTHER_LINK_COLORS = ("#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")

#: Compute against communication, inside a node and across the network.
TIME_COLORS = {
    "compute": "#1f77b4",
    "comm over NVLink": "#2ca02c",
    "comm over the network": "#d62728",
}


def link_colors(names) -> dict[str, str]:
    """A colour for each link name: :data:`LINK_COLORS` where known, then a fixed cycle."""
    extra = iter(OTHER_LINK_COLORS * 4)
    return {name: LINK_COLORS.get(name) or next(extra) for name in names}


def dp_timeline(ax: Axes, timeline, title: str = "", label: str = "") -> None:
    """One step's backward pass and its bucket all-reduces as two rows of bars (milliseconds).

    ``timeline`` is a :class:`scaleout.data_parallel.BucketTimeline`. Bucket
    all-reduces alternate two shades so that neighbours stay distinguishable;
    the part after the backward pass ends is the exposed communication.
    """
    ms = 1e3
    back = timeline.backward_s * ms
    ax.barh(1, back, left=0, color=TIME_COLORS["compute"], height=0.5)
    ax.text(back / 2, 1, "backward pass", ha="center", va="center", color="white", fontsize=10)
    shades = ("#d62728", "#ff9896")
    for i, (s, e) in enumerate(zip(timeline.start_s, timeline.end_s, strict=True)):
        ax.barh(0, (e - s) * ms, left=s * ms, color=shades[i % 2], height=0.5,
                edgecolor="white", linewidth=0.3)
    ax.axvline(back, color="black", linestyle="--", linewidth=1)
    end = timeline.end_s[-1] * ms
    ax.annotate("", xy=(end, -0.45), xytext=(back, -0.45),
                arrowprops={"arrowstyle": "<->", "color": "black"})
    narrow = end - back < 0.15 * max(back, end)
    ax.text(back if narrow else (back + end) / 2, -0.55,
            f"exposed {timeline.exposed_s * ms:,.1f} ms ", ha="right" if narrow else "center",
            va="top", fontsize=10)
    ax.set_yticks([0, 1], [f"all-reduces\n({len(timeline.sizes_bytes)} buckets)", "compute"])
    ax.set_ylim(-0.9, 1.5)
    ax.set_xlim(0, max(back, end) * 1.04)
    ax.set_xlabel("time from the start of the backward pass (ms)")
    if title:
        ax.set_title(title, fontsize=11)
    if label:
        ax.text(0.01, 0.97, label, transform=ax.transAxes, va="top", fontsize=10)


def tp_sweep_lines(ax: Axes, sweeps: Mapping[str, Mapping[str, np.ndarray]], domain_gpus: int,
                   *, share: bool = False, domain_label: str = "", title: str = "",
                   colors: Mapping[str, str] | None = None) -> None:
    """Tensor-parallel communication against the tensor-parallel size ``t``, one line per fabric.

    ``sweeps`` maps a fabric's label to :func:`scaleout.tensor_parallel.tp_sweep` (arrays
    ``t``, ``comm_s``, ``compute_s``, ``comm_fraction``). Drawn: seconds of all-reduces per
    layer and micro-batch from ``t = 2`` (at ``t = 1`` there are none) with the first sweep's
    compute per GPU dashed, on log-log axes; or, with ``share``, communication's share of
    the layer (%). A dotted line marks ``domain_gpus``, the GPUs one scale-up domain holds,
    labelled ``domain_label``. Colours follow :data:`LINK_COLORS` in order unless ``colors``
    names them: list the scale-up fabric first, then InfiniBand, RoCE and TCP.
    """
    palette = dict(zip(sweeps, [*LINK_COLORS.values(), *OTHER_LINK_COLORS], strict=False))
    palette.update(colors or {})
    ts = [int(t) for t in next(iter(sweeps.values()))["t"]] if sweeps else []
    for label, sw in sweeps.items():
        t = np.asarray(sw["t"])
        if share:
            ax.plot(t, 100 * np.asarray(sw["comm_fraction"]), marker="o", color=palette[label],
                    label=label)
        else:
            many = t > 1
            ax.plot(t[many], np.asarray(sw["comm_s"])[many], marker="o", color=palette[label],
                    label=label)
    if sweeps and not share:
        first = next(iter(sweeps.values()))
        ax.plot(first["t"], first["compute_s"], color="black", linestyle="--",
                label="compute per GPU")
        ax.set_yscale("log")
        _human_axis(ax.yaxis, "s")
        ax.set_ylabel("time per layer per micro-batch")
    else:
        ax.set_ylim(0, 100)
        ax.set_ylabel("communication share of the layer (%)")
    ax.axvline(domain_gpus, color="gray", linestyle=":", linewidth=1)
    if domain_label:
        ax.text(domain_gpus, 0.98, f" {domain_label}", transform=ax.get_xaxis_transform(),
                fontsize=9, va="top", color="#555555")
    ax.set_xscale("log")
    ax.set_xticks(ts, [str(t) for t in ts])
    ax.xaxis.set_minor_locator(NullLocator())
    _finish(ax, title, xlabel="tensor-parallel size t")


# =========================================================================== collectives
# Figures of notebooks/07_all_reduce_cost: times in seconds, message sizes in bytes.

#: One colour per all-reduce algorithm (:data:`scaleout.collectives.ALGORITHMS`), the same in
#: the notebook's figures and its explorer.
ALGORITHM_COLORS = {
    "ring": "#1f77b4",
    "tree": "#ff7f0e",
    "halving_doubling": "#2ca02c",
    "sharp": "#9467bd",
}
#: The algorithms in words, for menus, legends and tables.
ALGORITHM_LABELS = {"ring": "ring", "tree": "double binary tree",
                    "halving_doubling": "halving-doubling", "sharp": "SHARP (in-network)"}
_OTHER_COLORS = ("#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


def _time_lines(ax: Axes, x, times_s: Mapping[str, Any],
                colors: Mapping[str, str] | None) -> list[float]:
    """One line per entry of ``times_s``: algorithms (:data:`ALGORITHM_COLORS` keys) in their
    colour and words, the tree dashed so that halving-doubling stays visible under it;
    other labels as given, in ``colors`` or a fixed cycle of those not given to another line.
    Returns the smallest time drawn."""
    taken = set((colors or {}).values())
    extra = iter([c for c in _OTHER_COLORS if c not in taken] * 4)
    lows = []
    for key, t in times_s.items():
        t = np.asarray(t, dtype=float)
        color = (colors or {}).get(key) or ALGORITHM_COLORS.get(key) or next(extra)
        tree = key == "tree"
        ax.plot(x, t, color=color, linewidth=2, label=ALGORITHM_LABELS.get(key, key),
                linestyle="--" if tree else "-", zorder=3 if tree else 2)
        if np.any(t > 0):
            lows.append(float(t[t > 0].min()))
    return lows


def collective_time_vs_size(ax: Axes, sizes_bytes, times_s: Mapping[str, Any], *,
                            bound_s=None, bound_label: str = "bandwidth lower bound",
                            crossover_bytes: float | None = None, title: str = "",
                            colors: Mapping[str, str] | None = None) -> None:
    """A collective's time against its message size, on log-log axes.

    ``times_s`` maps an algorithm (``"ring"``, ``"tree"``, ...; drawn in its words) or any
    label to seconds, one per size of ``sizes_bytes``; ``bound_s`` is the bandwidth lower
    bound (dashed black, left out below the fastest algorithm); ``crossover_bytes`` marks
    the ring's S*, where its latency and bandwidth terms are equal. Sizes are labelled in
    binary units (1 KiB, 32 MiB), times with their unit (µs, ms, s).
    """
    sizes = np.asarray(sizes_bytes, dtype=float)
    lows = _time_lines(ax, sizes, times_s, colors)
    if bound_s is not None:
        ax.plot(sizes, bound_s, "k--", linewidth=1.2, label=bound_label)
    if crossover_bytes is not None and np.isfinite(crossover_bytes):
        ring = ALGORITHM_COLORS["ring"]
        ax.axvline(crossover_bytes, color=ring, linestyle=":", linewidth=1.5,
                   label=f"ring crossover S* = {formatting.bytes_iec(crossover_bytes)}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    if sizes.size:
        ax.set_xticks(_powers_of_two(sizes.min(), sizes.max(), 5))
    _human_axis(ax.xaxis, binary=True)
    _human_axis(ax.yaxis, "s")
    if lows:
        ax.set_ylim(bottom=min(lows) / 3)
    _finish(ax, title, xlabel="message size S", ylabel="time")


def collective_time_vs_gpus(ax: Axes, gpus, times_s: Mapping[str, Any], *,
                            mark_gpus: int | None = None, title: str = "",
                            colors: Mapping[str, str] | None = None) -> None:
    """A collective's time against the number of GPUs, on log-log axes, one line per
    algorithm of ``times_s`` (as :func:`collective_time_vs_size`); a dotted line marks
    ``mark_gpus``, the job's size."""
    _time_lines(ax, np.asarray(gpus, dtype=float), times_s, colors)
    if mark_gpus is not None:
        ax.axvline(mark_gpus, color="gray", linestyle=":")
        ax.text(mark_gpus, 0.98, f" n = {formatting.count(mark_gpus)}", va="top", fontsize=9,
                transform=ax.get_xaxis_transform())
    ax.set_xscale("log")
    ax.set_yscale("log")
    _human_axis(ax.yaxis, "s")
    _finish(ax, title, xlabel="GPUs n", ylabel="time")


# =========================================================================== pipelines
# Figures of notebooks/05_pipeline_parallelism. Every function takes a simulated
# scaleout.pipeline.PipelineTimeline (or numbers computed by the library) and only draws.

#: Forward, backward and weight-gradient passes; model chunk 0 darkest, later chunks lighter.
PIPELINE_COLORS = {
    "F": ("#1f77b4", "#4f9bd0", "#85bbe3", "#b3d4ee"),
    "B": ("#d95f02", "#f07f2a", "#f8a35f", "#fbc79a"),
    "W": ("#2ca02c", "#5cbf5c", "#8fd68f", "#bfe8bf"),
}
_PASS_NAMES = {"F": "forward", "B": "backward", "W": "weight gradient"}


def _pass_fills(timeline) -> list[str]:
    """A colour per pass: its kind's palette, shaded by model chunk."""
    palette = [c for kind in ("F", "B", "W") for c in PIPELINE_COLORS[kind]]
    codes = (timeline.kind.astype(int) * 4 + timeline.chunk.astype(int) % 4).tolist()
    return [palette[c] for c in codes]


def _pass_legend(timeline) -> dict[str, str]:
    kinds = ["F", "B", "W"][: int(timeline.kind.max()) + 1]
    legend = {_PASS_NAMES[k]: PIPELINE_COLORS[k][0] for k in kinds}
    if timeline.v > 1:
        legend["later chunks: lighter"] = PIPELINE_COLORS["F"][2]
    return legend


def pipeline_gantt_svg(timeline, title: str = "", time_scale: float = 1e3,
                       time_unit: str = "ms", labels: bool = True) -> bytes:
    """A pipeline schedule as an SVG Gantt chart: one row per device, one bar per pass.

    Bars are coloured by kind (:data:`PIPELINE_COLORS`) and labelled with their
    micro-batch number where wide enough; grey is idle time (the bubble). The
    dashed line marks the ideal time, the busiest device's work.
    """
    scale = time_scale
    return svgchart.gantt(
        timeline.device.tolist(), (timeline.start_s * scale).tolist(),
        (timeline.end_s * scale).tolist(), _pass_fills(timeline),
        [f"GPU {d}" for d in range(timeline.p)],
        labels=timeline.micro_batch.tolist() if labels else None,
        legend=_pass_legend(timeline), marker=timeline.ideal_s * scale,
        marker_label="ideal (no bubble)", xlabel=f"time ({time_unit})", title=title,
        lane_height=22 if timeline.p <= 8 else 16,
    )


def pipeline_gantt(ax: Axes, timeline, title: str = "", time_scale: float = 1e3,
                   time_unit: str = "ms", max_labels: int = 120) -> None:
    """A pipeline schedule on matplotlib axes: a row per device, a bar per pass.

    Same colours as :func:`pipeline_gantt_svg`. Micro-batch numbers are written
    in the passes of each kind (F, B, W) whose bars are all wide enough for
    them, up to ``max_labels`` numbers (each adds a few ms to the rendering).
    """
    ax.clear()
    starts = (timeline.start_s * time_scale).tolist()
    widths = ((timeline.end_s - timeline.start_s) * time_scale).tolist()
    span = timeline.makespan_s * time_scale * 1.01
    fills = _pass_fills(timeline)
    for d in range(timeline.p):  # one collection per device: far faster than a patch per bar
        sl = timeline.tasks_of(d)
        ax.broken_barh(list(zip(starts[sl], widths[sl], strict=True)), (d - 0.4, 0.8),
                       facecolors=fills[sl], edgecolor="white", linewidth=0.4)
    size = 8
    pt_per_unit = ax.get_position().width * ax.figure.get_figwidth() * 72 / span
    kinds = timeline.kind.tolist()
    labels = [(k, x + w / 2, y, str(mb), w * pt_per_unit >= 0.7 * size * len(str(mb)) + 2)
              for k, y, x, w, mb in zip(kinds, timeline.device.tolist(), starts, widths,
                                        timeline.micro_batch.tolist(), strict=True)]
    misfits = {k for k, *_rest, fits in labels if not fits}
    shown = [(x, y, text) for k, x, y, text, _fits in labels if k not in misfits]
    if len(shown) <= max_labels:
        for x, y, text in shown:
            ax.text(x, y, text, ha="center", va="center", fontsize=size, color="white")
    ideal = ax.axvline(timeline.ideal_s * time_scale, color="black", linestyle="--",
                       linewidth=1, label="ideal (no bubble)")
    ax.set_yticks(range(timeline.p), [f"GPU {d}" for d in range(timeline.p)])
    ax.set_ylim(timeline.p - 0.4, -0.6)
    ax.set_xlim(0, span)
    ax.set_xlabel(f"time ({time_unit})")
    ax.set_facecolor("#eeeeee")
    handles = [Patch(color=c, label=name) for name, c in _pass_legend(timeline).items()]
    handles.append(ideal)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
              frameon=False)
    if title:
        ax.set_title(title, fontsize=11)


def bubble_curves(ax: Axes, curves: dict[str, tuple[list[float], list[float]]],
                  points: dict[str, tuple[list[float], list[float]]], title: str = "") -> None:
    """Bubble fraction against micro-batches: closed-form lines, simulated points on top.

    ``curves`` and ``points`` map a schedule label to ``(m values, bubble fractions)``;
    a label's curve and points share a colour.
    """
    ax.clear()
    colors = dict(zip(curves, ("#1f77b4", "#d62728", "#9467bd", "#2ca02c", "#8c564b"),
                      strict=False))
    for label, (ms, fractions) in curves.items():
        ax.plot(ms, fractions, color=colors[label], label=f"{label}: formula")
    for label, (ms, fractions) in points.items():
        ax.plot(ms, fractions, "o", color=colors.get(label, "black"), markersize=6,
                markerfacecolor="none", label=f"{label}: simulated")
    ax.set_xscale("log", base=2)
    positive = any(f > 0 for _ms, fractions in curves.values() for f in fractions)
    if positive:  # one stage has no bubble at all: a log axis would have nothing to show
        ax.set_yscale("log")
    _finish(ax, title, xlabel="micro-batches m (log scale)",
            ylabel="bubble / ideal time" + (" (log scale)" if positive else ""))


def stage_bars(ax: Axes, groups: dict[str, list[float]], ylabel: str, title: str = "",
               line: float | None = None, line_label: str = "") -> None:
    """Grouped vertical bars, one group per pipeline stage, one bar per labelled series
    (:func:`bars`).

    ``groups`` maps a series label to one value per stage; ``line`` draws a dashed
    horizontal reference (a GPU's capacity).
    """
    ax.clear()
    stages = len(next(iter(groups.values()))) if groups else 0
    cycle = ("#1f77b4", "#d62728", "#9467bd", "#2ca02c")
    bars(ax, [str(s) for s in range(stages)], groups, xlabel="pipeline stage", ylabel=ylabel,
         title=title, colors={k: cycle[i % len(cycle)] for i, k in enumerate(groups)},
         hlines=None if line is None else {line_label or "_line": line})


def stage_memory_bars(ax: Axes, stages: Sequence[Any], capacity_bytes: float,
                      title: str = "") -> None:
    """Memory of every pipeline rank: one stacked bar per stage (GiB) of the planner's parts,
    weights, gradients, optimizer state, activations and reserve
    (:class:`scaleout.plan.StageMemory`, rank 0 first), a dashed line at the GPU's HBM, and
    each bar's total above it; a bar past the line is hatched."""
    ax.clear()
    cap = capacity_bytes / GIB
    top = cap
    for x, st in enumerate(stages):
        parts = st.parts()
        total = sum(parts.values()) / GIB
        over = total > cap
        bottom = 0.0
        for part, color in PLAN_MEMORY_COLORS.items():
            height = parts[part] / GIB
            ax.bar(x, height, bottom=bottom, color=color, width=0.7,
                   hatch="//" if over else None, edgecolor="black" if over else "white",
                   linewidth=0.5, label=MEMORY_LABELS[part] if x == 0 else None)
            bottom += height
        ax.text(x, bottom, formatting.sig(bottom, 3), ha="center", va="bottom",
                fontsize=8)
        top = max(top, bottom)
    ax.axhline(cap, color="black", linestyle="--", linewidth=1.2,
               label=f"HBM {formatting.sig(cap, 3)} GiB")
    n = len(stages)
    step = max(1, int(np.ceil(n / 16)))  # at most 16 tick labels
    ax.set_xticks(range(0, n, step), [str(i) for i in range(0, n, step)], fontsize=9)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(0, top * 1.12)
    _human_axis(ax.yaxis)
    _finish(ax, title, xlabel="pipeline stage (GPU's pipeline rank)",
            ylabel="memory per GPU (GiB)", grid=None)


def stage_memory_bars_svg(stages: Sequence[Any], capacity_bytes: float, title: str = ""
                          ) -> bytes:
    """The chart of :func:`stage_memory_bars` as SVG bytes for a widget: one horizontal
    stacked bar per pipeline rank (GiB), the HBM as the dashed marker, the fullest rank
    highlighted."""
    rows = {f"stage {st.stage}": _in_words({k: v / GIB for k, v in st.parts().items()})
            for st in stages}
    big = max(stages, key=lambda st: st.total_bytes).stage if stages else None
    cap = capacity_bytes / GIB
    return svgchart.stacked_hbars(
        rows, _word_colors(PLAN_MEMORY_COLORS), marker=cap,
        marker_label=f"HBM {formatting.sig(cap)} GiB", xlabel="memory per GPU (GiB)",
        title=title, highlight=None if big is None else f"stage {big}", row_height=24)


#: One colour per plane of a multi-plane fabric (drawn in this order).
PLANE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")


def clos_diagram(ax: Axes, graph, planes: int = 1, title: str = "") -> None:
    """A built Clos topology (:func:`scaleout.fabric.build_graph`) drawn tier by tier.

    Endpoints sit at the bottom, then leaves, spines and cores. With ``planes`` > 1 the
    same plane is drawn again, shifted up and right in its own colour, every endpoint
    joining each plane with one link: a multi-plane fabric. Drawing only.
    """
    from matplotlib.collections import LineCollection

    kind, edges = graph.kind, graph.edges
    n_tiers = int(kind.max())
    x = np.zeros(kind.size)
    for level in range(n_tiers + 1):
        idx = np.flatnonzero(kind == level)
        x[idx] = (np.arange(idx.size) + 0.5) / idx.size
    for p in range(planes - 1, -1, -1):
        color = PLANE_COLORS[p % len(PLANE_COLORS)]
        dx, dy = 0.025 * p, 0.28 * p
        px = np.where(kind > 0, x + dx, x)
        py = np.where(kind > 0, kind + dy, 0.0)
        segments = np.stack([np.stack([px[edges[:, 0]], py[edges[:, 0]]], axis=1),
                             np.stack([px[edges[:, 1]], py[edges[:, 1]]], axis=1)], axis=1)
        ax.add_collection(LineCollection(segments, colors=color, linewidths=0.8, alpha=0.55))
        sw = kind > 0
        ax.scatter(px[sw], py[sw], s=70, marker="s", color=color, edgecolors="black",
                   linewidths=0.5, zorder=3, label=f"plane {p + 1}" if planes > 1 else None)
    ep = kind == 0
    ax.scatter(x[ep], np.zeros(ep.sum()), s=30, color="#444444", zorder=4)
    names = ["endpoints (GPU ports)", "leaf", "spine", "core"]
    for level in range(n_tiers + 1):
        ax.text(-0.02, level, names[level], ha="right", va="center", fontsize=9)
    ax.set(xlim=(-0.3, 1.08), ylim=(-0.4, n_tiers + 0.28 * (planes - 1) + 0.5))
    ax.set_axis_off()
    if planes > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    if title:
        ax.set_title(title, fontsize=11)


#: One colour per load-balancing scheme of :func:`scaleout.fabric.load_balance_sweep`, keyed
#: as its arrays are, the same in the notebook's figures and its explorer.
LOAD_BALANCE_COLORS = {"spray": "#2ca02c", "flowlet": "#17becf", "rr": "#9467bd",
                       "ecmp": "#1f77b4", "ecmp_sync": "#d62728"}
#: The schemes in words, for legends.
LOAD_BALANCE_LABELS = {"spray": "adaptive packet spraying", "flowlet": "adaptive flowlets",
                       "rr": "round-robin spraying", "ecmp": "ECMP, throughput",
                       "ecmp_sync": "ECMP, collective (slowest flow)"}
_PATH_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def load_balance_lines(ax: Axes, flows: Sequence[int], utilisation: Mapping[str, Any],
                       capacity: float | None = None, title: str = "") -> None:
    """Utilisation of the paths against the number of large flows, one line per scheme.

    ``utilisation`` maps a scheme key of :data:`LOAD_BALANCE_COLORS` (``"spray"``,
    ``"ecmp_sync"``, ...) to one mean utilisation per entry of ``flows``: a row of
    :func:`scaleout.fabric.load_balance_sweep`, drawn in the order of that map. ECMP, which
    hashes whole flows, is dashed; ``capacity`` (the paths' mean speed, the ceiling of any
    scheme) is a dotted line.
    """
    order = [k for k in LOAD_BALANCE_COLORS if k in utilisation]
    for key in order + [k for k in utilisation if k not in LOAD_BALANCE_COLORS]:
        ax.plot(flows, utilisation[key], "--" if key.startswith("ecmp") else "-", marker="o",
                markersize=3, color=LOAD_BALANCE_COLORS.get(key, "#555555"),
                label=LOAD_BALANCE_LABELS.get(key, key))
    if capacity is not None:
        ax.axhline(capacity, color="gray", linestyle=":", linewidth=1)
        ax.text(flows[0], capacity, " the paths' mean speed", va="bottom", fontsize=8,
                color="gray")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    _finish(ax, title, xlabel="large flows", ylabel="utilisation", legend="lower right")


def ecmp_against_spraying(ax: Axes, flows: Sequence[int], paths: Sequence[int], ecmp_sync,
                          spray, title: str = "") -> None:
    """A collective's utilisation under ECMP (solid, with markers) against adaptive spraying
    (dashed), one colour per number of paths: ``ecmp_sync`` and ``spray`` are arrays of shape
    ``(len(paths), len(flows))`` from :func:`scaleout.fabric.load_balance_sweep`."""
    for i, e in enumerate(paths):
        color = _PATH_COLORS[i % len(_PATH_COLORS)]
        ax.plot(flows, ecmp_sync[i], "o-", color=color, markersize=3,
                label=f"ECMP, {formatting.plural(e, 'path')}")
        ax.plot(flows, spray[i], "--", color=color, linewidth=1.2)
    ax.plot([], [], "k--", linewidth=1.2, label="adaptive spraying (same colour)")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    _finish(ax, title, xlabel="large flows", ylabel="utilisation (a collective)",
            legend="lower right")


#: One label per congestion mechanism of :data:`scaleout.congestion.MECHANISMS`, and a colour
#: per label, the same in the notebook's figures and its explorer.
MECHANISM_LABELS = {"pfc": "PFC alone", "dcqcn": "ECN + DCQCN (+ PFC)",
                    "credits": "receiver credits"}
MECHANISM_COLORS = {"PFC alone": "#d62728", "ECN + DCQCN (+ PFC)": "#ff7f0e",
                    "receiver credits": "#2ca02c"}


def _incast_lines(ax: Axes, incast: Mapping[str, Any], attr: str) -> None:
    for mechanism, r in incast.items():
        label = MECHANISM_LABELS.get(mechanism, mechanism)
        ax.plot(r.t_s, getattr(r, attr), color=MECHANISM_COLORS.get(label, "#555555"),
                label=label, linewidth=1.2)
    _human_axis(ax.xaxis, "s")
    _human_axis(ax.yaxis, "B")
    ax.set_xlabel("time")
    ax.grid(True, alpha=0.3)


def incast_queue(ax: Axes, incast: Mapping[str, Any], title: str = "") -> None:
    """The receiver's queue over time, one line per mechanism, and the pause threshold.

    ``incast`` maps a mechanism (``"pfc"``, ``"dcqcn"``, ``"credits"``) to its
    :class:`scaleout.congestion.IncastResult`; the dotted line is their XOFF threshold.
    """
    _incast_lines(ax, incast, "queue_bytes")
    xoff = {r.xoff_bytes for r in incast.values()}
    if len(xoff) == 1:
        ax.axhline(*xoff, color="gray", linestyle=":", linewidth=1)
        ax.text(1.0, *xoff, "XOFF: pause ", transform=ax.get_yaxis_transform(), ha="right",
                va="bottom", fontsize=8, color="#555555",
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})
    _finish(ax, title, ylabel="receiver's queue", legend="center right", grid=None)


def incast_victim(ax: Axes, incast: Mapping[str, Any], title: str = "") -> None:
    """The victim flow's data delivered over time, one line per mechanism (as
    :func:`incast_queue`): where a line runs flat, the victim was paused."""
    _incast_lines(ax, incast, "victim_delivered_bytes")
    _finish(ax, title, ylabel="victim's data delivered", legend="lower right", grid=None)


def generation_cost_lines(ax: Axes, ratios, new_cost, old_cost: float, *, new_label: str,
                          old_label: str, forecast: tuple[float, float] | None = None,
                          xlabel: str = "price of a new module over its old counterpart",
                          title: str = "") -> None:
    """The optics bill of a build on a new module generation against the price ratio of a new
    module over its old counterpart (:func:`scaleout.optics.relative_cost_at_ratio`).

    ``new_cost`` has one bill per ratio; ``old_cost`` is the old generation's bill, drawn
    flat, and twice it (dashed: the same bandwidth, as the new modules carry twice as
    much); ``forecast`` shades the expected range of the ratio.
    """
    ax.plot(ratios, new_cost, "o-", color="#d62728", label=new_label)
    ax.axhline(old_cost, color="#1f77b4", label=old_label)
    ax.axhline(2 * old_cost, color="#1f77b4", linestyle="--",
               label="twice that: the same bandwidth")
    if forecast is not None:
        lo, hi = forecast
        ax.axvspan(lo, hi, color="gray", alpha=0.15,
                   label=f"the forecast, {formatting.sig(lo)}-{formatting.sig(hi)}")
    _finish(ax, title, xlabel=xlabel, ylabel="optics, relative cost")


# =========================================================================== the planner
#: One colour per part of an iteration (scaleout.plan.STEP_PARTS), the same in every figure.
STEP_COLORS = {
    "forward": "#1f77b4",
    "backward": "#aec7e8",
    "recompute": "#9467bd",
    "tp_comm": "#ff7f0e",
    "cp_comm": "#e377c2",
    "ep_comm": "#17becf",
    "bubble": "#bbbbbb",
    "p2p": "#8c564b",
    "dp_comm": "#d62728",
    "optimizer": "#2ca02c",
}


#: The parts of an iteration in words, as :func:`scaleout.plan.explain` names them.
STEP_LABELS = dict(_PART_WORDS)
#: :data:`STEP_COLORS` keyed by those words: the legend of every step-time chart.
STEP_WORD_COLORS = {STEP_LABELS[p]: c for p, c in STEP_COLORS.items()}


def step_in_words(step: Mapping[str, float]) -> dict[str, float]:
    """An iteration's parts (``{"tp_comm": s, ...}``) keyed by their words, for a chart."""
    return {STEP_LABELS.get(p, p): float(v) for p, v in step.items()}


def plan_bars_svg(search, k: int = 5, title: str = "") -> bytes:
    """Memory per GPU and seconds per iteration of a search's ``k`` best plans, as SVG.

    ``search`` is a :class:`scaleout.plan.SearchResult`; the best plan is drawn in bold,
    HBM capacity as a dashed line; the parts of an iteration are named in words, those that
    no plan shown has left out; context and expert parallelism appear in a label above 1.
    """
    a = search.arrays
    idx = search.order[:k]
    def extra(i, key: str) -> str:
        value = int(a[key][i]) if key in a else 1
        return f" {key.upper()}{value}" if value > 1 else ""

    labels = [f"#{r + 1} TP{a['tp'][i]}{extra(i, 'cp')} PP{a['pp'][i]} DP{a['dp'][i]}"
              f"{extra(i, 'ep')}" for r, i in enumerate(idx)]
    gib = 2.0**30
    pairs = list(zip(labels, idx, strict=True))
    mem = {lab: _in_words({part: a[f"{part}_bytes"][i] / gib for part in PLAN_MEMORY_COLORS})
           for lab, i in pairs}
    cap = float(a["capacity_bytes"][idx[0]]) / gib if len(idx) else None
    top = svgchart.stacked_hbars(
        mem, _word_colors(PLAN_MEMORY_COLORS), marker=cap,
        marker_label=f"HBM {formatting.sig(cap)} GiB" if cap else "",
        xlabel="memory per GPU (GiB)", title=title or "Memory per GPU of the best plans",
        highlight=labels[0] if labels else None, width=720, row_height=28)
    # only the parts some plan has: a dense model's chart names no all-to-all
    present = [p for p in STEP_COLORS if any(float(a[f"{p}_s"][i]) > 0 for i in idx)]
    step = {lab: step_in_words({p: float(a[f"{p}_s"][i]) for p in present})
            for lab, i in pairs}
    bottom = svgchart.stacked_hbars(
        step, {STEP_LABELS[p]: STEP_COLORS[p] for p in present},
        xlabel="seconds per iteration",
        title="Where an iteration's time goes",
        highlight=labels[0] if labels else None, width=720, row_height=28)
    return svgchart.vstack([top, bottom])


def relative_heatmap(ax: Axes, grid, rows: Sequence[Any], cols: Sequence[Any], *,
                     xlabel: str, ylabel: str, title: str = "", vmax: float = 2.0,
                     split_below: int | None = None, legend: str = "× best") -> None:
    """Each cell of ``grid`` divided by the grid's smallest finite value, as a heat map.

    The planner's step time per (tensor-parallel size, pipeline stages) in notebook 08:
    ``grid[i, j]`` belongs to ``rows[i]`` and ``cols[j]``; NaN cells (nothing fits) stay
    blank. Each filled cell prints its ratio (white on the dark half of the scale), the scale
    runs from 1 (the best) to ``vmax`` with a colour bar named ``legend``, and a white line
    below row ``split_below`` marks a boundary (e.g. the largest size inside a node).
    """
    grid = np.asarray(grid, dtype=float)
    ratio = grid / np.nanmin(grid)
    image = ax.imshow(ratio, cmap="viridis_r", vmin=1, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(cols)), [str(c) for c in cols])
    ax.set_yticks(range(len(rows)), [str(r) for r in rows])
    for (i, j), r in np.ndenumerate(ratio):
        if np.isfinite(r):
            ax.text(j, i, f"{r:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if r > (1 + vmax) / 2 else "black")
    if split_below is not None:
        ax.axhline(split_below + 0.5, color="white", lw=2)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.figure.colorbar(image, ax=ax, label=legend)


def validation_scatter(ax: Axes, rows, title: str = "") -> None:
    """Predicted against published, one marker per case, the diagonal and ±5% bands.

    ``rows`` are :class:`scaleout.plan.ValidationRow`; each table gets its own marker and
    values are drawn relative to their published value (1.0 = exact).
    """
    tables = list(dict.fromkeys(r.table for r in rows))
    markers = ["o", "s", "^", "D"]
    for j, table in enumerate(tables):
        mine = [r for r in rows if r.table == table]
        ax.scatter(range(len(mine)), [100 * (r.predicted / r.published - 1) for r in mine],
                   marker=markers[j % 4], label=table, zorder=3)
    ax.axhline(0, color="black", lw=1)
    for lim in (-5, 5):
        ax.axhline(lim, color="#999", lw=1, ls="--")
    ax.set_ylabel("prediction error (%)")
    ax.set_xlabel("case (in table order)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "Planner vs published measurements")
    ax.grid(alpha=0.3)


def step_gap_scatter(ax: Axes, gaps, title: str = "",
                     fixed_s: Sequence[float] = (0.1, 1.0)) -> None:
    """Each run's miss as a share of its published step against the step's length (log):
    :func:`scaleout.plan.step_gaps`, one colour per source, hollow markers for runs that
    recompute every layer. Dashed curves: where a fixed cost of ``fixed_s`` seconds a step
    would put a run (its share falls as the step grows); a rate priced too fast keeps its
    share whatever the step's length."""
    sources = list(dict.fromkeys(g.table for g in gaps))
    colors = [f"C{i}" for i in range(10)]
    markers = ["o", "s", "^", "D", "v"]
    for j, table in enumerate(sources):
        mine = [g for g in gaps if g.table == table]
        color, marker = colors[j % 10], markers[j % 5]
        for hollow in (False, True):
            pts = [g for g in mine if (g.recompute == "full") == hollow]
            if pts:
                ax.scatter([g.published_s for g in pts], [100 * g.gap_share for g in pts],
                           marker=marker, s=28, zorder=3, edgecolors=color,
                           facecolors="white" if hollow else color,
                           label=table if not hollow or len(pts) == len(mine) else None)
    shares = 100 * np.array([g.gap_share for g in gaps])
    low, high = max(min(-10.0, shares.min() - 8), -100.0), min(max(20.0, shares.max() + 12), 100.0)
    steps = np.array([g.published_s for g in gaps])
    x = np.geomspace(steps.min() * 0.8, steps.max() * 1.25, 100)
    for f in fixed_s:
        ax.plot(x, 100 * f / x, color="#777", ls="--", lw=1, zorder=1)
        at = x[(100 * f / x) <= 0.9 * high]
        if at.size:
            ax.annotate(f"a fixed {formatting.duration(f)} a step", (at[0], 100 * f / at[0]),
                        fontsize=8, color="#555", xytext=(4, 2), textcoords="offset points")
    ax.scatter([], [], marker="o", s=28, color="#444", label="stores its activations")
    ax.scatter([], [], marker="o", s=28, facecolors="white", edgecolors="#444",
               label="recomputes every layer")
    ax.axhline(0, color="black", lw=1)
    ax.set_xscale("log")
    ax.set_ylim(low, high)
    ax.set_xlabel("published step (s, log scale)")
    ax.set_ylabel("step beyond the planner's (% of the step)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, frameon=False)
    ax.set_title(title or "Misses read in seconds: fixed costs fall along the dashed curves")
    ax.grid(alpha=0.3)


#: Colours of the framework presets in scaling figures.
FRAMEWORK_COLORS = {"deepspeed-2021": "#d62728", "megatron-lm-2021": "#1f77b4",
                    "pytorch-fsdp": "#ff7f0e", "torchtitan": "#9467bd", "megatron-core": "#2ca02c"}
_FRAMEWORK_WORDS = {"deepspeed-2021": "ZeRO-3 (DeepSpeed 2021)",
                    "megatron-lm-2021": "3D parallel (Megatron-LM 2021)"}


def scaling_lines(ax: Axes, series: Mapping[str, Mapping[str, Any]], title: str = "") -> None:
    """Published (markers) and predicted (lines) throughput per GPU against the GPU count, one
    colour per framework and one marker per model: :func:`scaleout.plan.scaling_series`."""
    markers = ["o", "s", "^", "D"]
    models = list(dict.fromkeys(k.split(", ")[0] for k in series))
    for key, sr in series.items():
        model, framework = key.split(", ", 1)
        color = FRAMEWORK_COLORS.get(framework, "#555555")
        marker = markers[models.index(model) % len(markers)]
        words = _FRAMEWORK_WORDS.get(framework, framework)
        ax.plot(sr["gpus"], sr["published"], marker=marker, ls="none", color=color, ms=7,
                label=f"{model}, {words}: published", zorder=3)
        ax.plot(sr["gpus"], sr["predicted"], marker=marker, ls="--", color=color, ms=5,
                mfc="white", label=f"{model}, {words}: planner", zorder=2)
    ax.set_xscale("log", base=2)
    gpus = sorted({int(g) for sr in series.values() for g in sr["gpus"]})
    ax.set_xticks(gpus, [formatting.count(g) for g in gpus])
    ax.minorticks_off()
    ax.set_xlabel("GPUs (global batch fixed)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.set_title(title or "Fixed batch, more GPUs: ZeRO-3 collapses, 3D parallelism holds")


# =========================================================================== fault tolerance
#: One colour per kind of bar of a simulated run (:class:`scaleout.reliability.RunTimeline`).
RUN_COLORS = {
    "compute": "#2ca02c",
    "checkpoint": "#1f77b4",
    "lost": "#ff7f0e",
    "restart": "#d62728",
    "unfinished": "#bbbbbb",
}
_RUN_LABELS = {"compute": "kept work", "checkpoint": "checkpoint write", "lost": "lost work",
               "restart": "restart", "unfinished": "cut by the end of the run"}


def run_timeline(ax: Axes, timeline, start_s: float = 0.0, end_s: float | None = None,
                 title: str = "") -> None:
    """One simulated run between ``start_s`` and ``end_s`` as a row of bars, in hours.

    ``timeline`` is a :class:`scaleout.reliability.RunTimeline`; failures are drawn
    as black ticks above the bars. Drawing only.
    """
    end_s = timeline.horizon_s if end_s is None else end_s
    inside = (timeline.end_s > start_s) & (timeline.start_s < end_s)
    for kind, color in RUN_COLORS.items():
        sel = inside & (timeline.kind == kind)
        if not sel.any():
            continue
        lo = timeline.start_s[sel] / 3600
        width = (timeline.end_s[sel] - timeline.start_s[sel]) / 3600
        ax.broken_barh(list(zip(lo, width, strict=True)), (0, 1), facecolors=color,
                       label=_RUN_LABELS[kind])
    hits = timeline.failures_s[(timeline.failures_s >= start_s) & (timeline.failures_s < end_s)]
    if hits.size:
        ax.vlines(hits / 3600, 1.05, 1.45, color="black", linewidth=1.2,
                  label=f"failure ({hits.size})")
    ax.set_xlim(start_s / 3600, end_s / 3600)
    ax.set_ylim(-0.1, 1.6)
    ax.set_yticks([])
    ax.set_xlabel("wall-clock time (hours)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    if title:
        ax.set_title(title, fontsize=11)


#: One colour per failure study of ``data/failures.toml`` (:func:`scaleout.reliability.studies`).
STUDY_COLORS = {"llama3-405b": "#1f77b4", "meta-rsc1": "#2ca02c", "meta-rsc2": "#9467bd",
                "opt-175b": "#8c564b", "alibaba-hpn": "#7f7f7f"}


def failure_rates(ax: Axes, gpus, per_day: Mapping[str, Any], titles: Mapping[str, str], *,
                  observed: Mapping[str, tuple[str, float, float]] | None = None,
                  network_only: Collection[str] = (), mark_gpus: int | None = None,
                  title: str = "") -> None:
    """Failures per day against the GPUs of a job, one line per study, on log-log axes.

    ``per_day`` maps a study name to failures a day at each entry of ``gpus``
    (:func:`scaleout.reliability.failures_per_day`), ``titles`` a study name to its words for
    the legend; studies in ``network_only`` count only network failures and are dashed.
    ``observed`` maps a label to ``(study name, GPUs, failures a day)`` as a report states
    them: a dot in the study's colour, labels alternately below right and above left so
    that neighbouring dots keep their labels apart. Dotted lines mark one failure a day,
    one an hour, and ``mark_gpus``.
    """
    extra = iter(_OTHER_COLORS * 4)
    colors = {name: STUDY_COLORS.get(name) or next(extra) for name in per_day}
    for name, rate in per_day.items():
        dashed = name in network_only
        ax.plot(gpus, rate, color=colors[name], linestyle="--" if dashed else "-", linewidth=2,
                label=titles.get(name, name) + (" (network only)" if dashed else ""))
    for i, (label, (name, n, rate)) in enumerate((observed or {}).items()):
        ax.plot(n, rate, "o", color=colors.get(name, "black"), markersize=8,
                markeredgecolor="black")
        right = i % 2 == 0
        ax.annotate(label, (n, rate), textcoords="offset points", fontsize=8,
                    xytext=(8, -14) if right else (-8, 8), ha="left" if right else "right",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none",
                          "alpha": 0.85})
    for reference, words in ((1, "one a day"), (24, "one an hour")):
        ax.axhline(reference, color="gray", linestyle=":", linewidth=1)
        ax.text(0.01, reference * 1.15, words, color="gray", fontsize=9,
                transform=ax.get_yaxis_transform())
    if mark_gpus is not None:
        ax.axvline(mark_gpus, color="black", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(ax, title, xlabel="GPUs in the job", ylabel="failures per day", legend="lower right")


# =========================================================================== experts and rings
def expert_map(ax: Axes, placement: np.ndarray, choice: np.ndarray, gpus_per_node: int,
               source_gpu: int = 0, title: str = "") -> None:
    """Expert parallelism drawn: each GPU (grouped in nodes) with the experts it holds
    (``placement[r]`` from :func:`scaleout.moe.placement`), and arrows from ``source_gpu``
    to the GPU of every expert its tokens chose (``choice`` from
    :func:`scaleout.moe.route_tokens`; one colour per token). An arrow that leaves the
    node is drawn dashed: it crosses the network."""
    ep, per = placement.shape
    owner = {int(e): r for r in range(ep) for e in placement[r]}
    cols = min(ep, gpus_per_node)
    rows = -(-ep // cols)
    w, h = 1.0, 0.6
    pos = {}
    for r in range(ep):
        x, y = (r % cols) * 1.3, -(r // cols) * 1.1
        pos[r] = (x, y)
        node = r // gpus_per_node
        ax.add_patch(_rect(x, y, w, h, "#e8eef7" if node % 2 == 0 else "#f3ecd9"))
        shown = ", ".join(str(int(e)) for e in placement[r][:6]) + (" …" if per > 6 else "")
        ax.text(x + w / 2, y + h * 0.68, f"GPU {r}", ha="center", fontsize=8, weight="bold")
        ax.text(x + w / 2, y + h * 0.28, f"E {shown}", ha="center", fontsize=7)
    colors = ["#c44e52", "#4c72b0", "#55a868", "#8172b2", "#ccb974", "#64b5cd"]
    sx, sy = pos[source_gpu]
    for t, row in enumerate(choice):
        for e in row:
            r = owner[int(e)]
            if r == source_gpu:
                continue
            tx, ty = pos[r]
            remote = r // gpus_per_node != source_gpu // gpus_per_node
            same_row = ty == sy
            start = (sx + w / 2, sy + h) if same_row else (sx + w / 2, sy)
            ax.annotate("", xy=(tx + w / 2, ty + h), xytext=start,
                        arrowprops={"arrowstyle": "->", "color": colors[t % len(colors)],
                                    "lw": 1.2, "ls": "--" if remote else "-",
                                    "connectionstyle": f"arc3,rad={-0.3 if same_row else 0.2}"})
    ax.set_xlim(-0.3, cols * 1.3)
    ax.set_ylim(-(rows - 1) * 1.1 - 0.3, h + 1.2)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=11)


def _rect(x: float, y: float, w: float, h: float, color: str):
    from matplotlib.patches import FancyBboxPatch

    return FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02", facecolor=color,
                          edgecolor="#555555")


def ring_diagram(ax: Axes, schedule: np.ndarray, step: int = 1, title: str = "") -> None:
    """Ring attention drawn: ``cp`` GPUs on a circle, each keeping its queries ``Q_g`` and,
    at ``step``, the key/value block ``schedule[step, g]``
    (:func:`scaleout.context_parallel.ring_schedule`), with the arrow to the GPU it
    passes its block to next."""
    steps, cp = schedule.shape
    angles = np.pi / 2 - 2 * np.pi * np.arange(cp) / cp
    xs, ys = np.cos(angles), np.sin(angles)
    for g in range(cp):
        ax.add_patch(_rect(xs[g] - 0.3, ys[g] - 0.15, 0.6, 0.3, "#e8eef7"))
        ax.text(xs[g], ys[g] + 0.04, f"GPU {g}: Q{g}", ha="center", fontsize=8, weight="bold")
        ax.text(xs[g], ys[g] - 0.09, f"holds KV{int(schedule[step % steps, g])}", ha="center",
                fontsize=8)
        n = (g + 1) % cp
        ax.annotate("", xy=(0.78 * xs[n], 0.78 * ys[n]), xytext=(0.78 * xs[g], 0.78 * ys[g]),
                    arrowprops={"arrowstyle": "->", "color": "#c44e52", "lw": 1.5,
                                "connectionstyle": "arc3,rad=-0.25"})
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.3, 1.3)
    ax.set_aspect("equal")
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=11)


# =========================================================================== long context
# Figures of notebooks/14_long_context_and_precision.

#: One colour per channel of :func:`scaleout.roofline.ridge_points`, the same in the notebook's
#: figures and its explorer; and the channels in words.
CHANNEL_COLORS = {"hbm": "#4c72b0", "scale-up": "#55a868", "scale-out": "#c44e52"}
CHANNEL_LABELS = {"hbm": "HBM", "scale-up": "scale-up link", "scale-out": "network port"}


def _token_tick(n: float, _pos: int = 0) -> str:
    """A sequence length as people write it: 4096 → ``"4K"``, 2²⁰ → ``"1M"``, 3000 → ``"3k"``."""
    if n >= 1 and float(n).is_integer() and int(n) % 1024 == 0:
        k = int(n) // 1024
        return f"{k // 1024}M" if k % 1024 == 0 else f"{k}K"
    return formatting.axis_tick(n)


def activation_lines(ax: Axes, seqs, bytes_per_gpu: Mapping[str, Any], *, capacity_bytes: float,
                     capacity_label: str, reference: Mapping[str, Any] | None = None,
                     title: str = "") -> None:
    """Activation memory per GPU against the sequence length, on log-log axes.

    ``bytes_per_gpu`` maps a label to bytes at each of ``seqs`` (lines with markers);
    ``reference`` lines (e.g. attention scores stored) are dotted grey, and the dashed black
    line is one GPU's memory, ``capacity_bytes``. Sequence lengths are labelled 4K ... 1M
    (powers of two), memory in binary units (GiB, TiB).
    """
    drawn = [capacity_bytes]
    for label, b in bytes_per_gpu.items():
        ax.plot(seqs, b, "-", marker="o", label=label)
        drawn.extend(np.ravel(b))
    for label, b in (reference or {}).items():
        ax.plot(seqs, b, ":", color="gray", label=label)
        drawn.extend(np.ravel(b))
    ax.axhline(capacity_bytes, color="black", ls="--", label=capacity_label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    lo, hi = min(drawn), max(drawn)
    step = max(1, int(np.ceil(np.log2(hi / lo) / 6)))  # about six ticks: 4 GiB, 64 GiB, 1 TiB
    ax.set_yticks(_powers_of_two(lo, hi, step))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xticks(seqs)
    ax.xaxis.set_major_formatter(FuncFormatter(_token_tick))
    ax.xaxis.set_minor_locator(NullLocator())
    _human_axis(ax.yaxis, binary=True)
    _finish(ax, title, xlabel="sequence length (tokens)",
            ylabel="activations per GPU\n(one micro-batch, all layers)", legend="upper left")


def rooflines(ax: Axes, intensity, attainable_flops: Mapping[str, Any],
              points: Sequence[tuple[str, float, float, str]], title: str = "") -> None:
    """Rooflines of a GPU, one per channel, with the parts of a step placed on them.

    ``attainable_flops`` maps a channel (``"hbm"``, ``"scale-up"``, ``"scale-out"``) to the
    FLOP/s attainable at each ``intensity`` (FLOPs per byte of that channel;
    :func:`scaleout.roofline.attainable_flops`); ``points`` are ``(name, intensity,
    FLOP/s, channel)``, one per part of the step (:func:`scaleout.roofline.step_parts`),
    drawn in their channel's colour and named. The y axis spans five decades below the peak.
    """
    for channel, flops in attainable_flops.items():
        ax.plot(intensity, flops, color=CHANNEL_COLORS.get(channel, "#555555"),
                label=CHANNEL_LABELS.get(channel, channel))
    box = {"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8}
    for i, (name, x, y, channel) in enumerate(points):
        ax.scatter([x], [y], color=CHANNEL_COLORS.get(channel, "#555555"), edgecolor="black",
                   zorder=3)
        ax.annotate(name, (x, y), xytext=(4, (-13, 7, -25)[i % 3]), textcoords="offset points",
                    fontsize=8, bbox=box, zorder=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    peak = max((float(np.max(f)) for f in attainable_flops.values()), default=1.0)
    ax.set_ylim(peak / 1e5, peak * 4)
    _human_axis(ax.yaxis, "FLOP/s")
    ax.set_xlabel("FLOPs per byte of the channel")
    ax.set_ylabel("attainable compute")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    if title:
        ax.set_title(title, fontsize=11)
