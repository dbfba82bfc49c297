"""Matplotlib figures for the notebooks: drawing only, no model logic.

Functions take results computed by the library and an ``Axes`` to draw on, so
a widget can redraw the same figure on every event. Figures are built with
``matplotlib.figure.Figure`` (not pyplot) so they are never shown twice.
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import svgchart
from .memory import MemoryBreakdown

__all__ = ["MEMORY_COLORS", "memory_bars", "memory_bars_svg", "new_figure"]

#: One colour per memory part, the same in every notebook.
MEMORY_COLORS = {
    "weights": "#1f77b4",
    "grads": "#ff7f0e",
    "optimizer": "#2ca02c",
    "activations": "#d62728",
}


def memory_bars_svg(rows: dict[str, MemoryBreakdown], title: str = "",
                    highlight: str | None = None) -> bytes:
    """The same chart as :func:`memory_bars` as SVG bytes, for widgets (sub-millisecond)."""
    data = {label: {k: v for k, v in b.gib().items() if k in MEMORY_COLORS}
            for label, b in rows.items()}
    cap = next(iter(rows.values())).gib()["capacity"] if rows else None
    return svgchart.stacked_hbars(
        data, MEMORY_COLORS, marker=cap, marker_label=f"capacity {cap:,.0f} GiB" if cap else "",
        xlabel="memory per GPU (GiB)", title=title, highlight=highlight,
    )


def new_figure(width: float = 8.0, height: float = 3.2) -> tuple[Figure, Axes]:
    """A pyplot-free figure with one axes, sized for a notebook or a projector."""
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


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
                    edgecolor="white" if not over else "black", linewidth=0.5,
                    label=part if i == 0 else None)
            left += width
        ax.text(left, i, f" {left:,.1f}", va="center", fontsize=9)
    cap = capacity_gib
    if cap is None and labels:
        cap = rows[labels[0]].gib()["capacity"]
    if cap is not None and cap != float("inf"):
        ax.axvline(cap, color="black", linestyle="--", linewidth=1.2)
        ax.text(cap, len(labels) - 0.45, f" capacity {cap:,.0f} GiB", fontsize=9, va="bottom")
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_ylim(len(labels) - 0.4, -0.6)
    ax.legend(loc="lower right", fontsize=8, ncols=4)
    if title:
        ax.set_title(title)
