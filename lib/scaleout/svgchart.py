"""Tiny SVG charts for widgets: a redraw costs well under a millisecond.

Matplotlib's Agg renderer takes 60-150 ms per redraw on a 2-core machine,
too slow for a slider in a live class; these charts are plain SVG text that
the browser draws. Use them in explorers (``Image(format="svg+xml")``);
static figures in notebooks stay matplotlib. Drawing only, no model logic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape

__all__ = ["nice_ticks", "stacked_hbars"]

_FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def nice_ticks(upper: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values from 0 to at least ``upper`` (1, 2, 2.5 or 5 times 10^k)."""
    if not upper > 0 or not math.isfinite(upper):
        return [0.0, 1.0]
    raw = upper / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    count = math.ceil(upper / step - 1e-9)
    return [i * step for i in range(count + 1)]


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 10 or x == int(x) else f"{x:,.1f}"


def stacked_hbars(
    rows: Mapping[str, Mapping[str, float]],
    colors: Mapping[str, str],
    *,
    marker: float | None = None,
    marker_label: str = "",
    xlabel: str = "",
    title: str = "",
    highlight: str | None = None,
    width: int = 720,
    row_height: int = 34,
    total_format: str = ",.1f",
) -> bytes:
    """Horizontal stacked bars as SVG bytes.

    Parameters
    ----------
    rows
        ``{row label: {segment: value}}``; segments are drawn in ``colors`` order.
    colors
        ``{segment: css colour}``; also the legend.
    marker
        An x value drawn as a dashed vertical line (a capacity, a budget).
    highlight
        A row label drawn in bold.
    total_format
        Format of the total printed after each bar (``",d"``-like ``",.0f"`` for counts).
    """
    left, right, top = 120, 70, 48 if title else 24
    plot_w = width - left - right
    height = top + row_height * len(rows) + 58
    totals = [sum(seg.values()) for seg in rows.values()]
    upper = max([*totals, marker or 0.0, 1e-9])
    ticks = nice_ticks(upper)
    xmax = ticks[-1]

    def x(v: float) -> float:
        return left + plot_w * v / xmax

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {_FONT} font-size="13">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" '
                   f'font-weight="bold">{escape(title)}</text>')
    bottom = top + row_height * len(rows)
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{bottom}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{bottom + 16}" text-anchor="middle">{_fmt(t)}</text>')
    for i, (label, segs) in enumerate(rows.items()):
        y0 = top + i * row_height + 5
        h = row_height - 10
        weight = ' font-weight="bold"' if label == highlight else ""
        out.append(f'<text x="{left - 8}" y="{y0 + h / 2 + 4:.1f}" text-anchor="end"{weight}>'
                   f"{escape(label)}</text>")
        acc = 0.0
        for name, color in colors.items():
            v = float(segs.get(name, 0.0))
            if v > 0:
                out.append(f'<rect x="{x(acc):.1f}" y="{y0}" width="{x(acc + v) - x(acc):.1f}" '
                           f'height="{h}" fill="{color}"><title>{escape(name)}: {v:,.2f}'
                           "</title></rect>")
            acc += v
        out.append(f'<text x="{x(acc) + 4:.1f}" y="{y0 + h / 2 + 4:.1f}"{weight}>'
                   f"{acc:{total_format}}</text>")
    if marker is not None and math.isfinite(marker):
        out.append(f'<line x1="{x(marker):.1f}" x2="{x(marker):.1f}" y1="{top - 6}" '
                   f'y2="{bottom}" stroke="black" stroke-width="2" stroke-dasharray="6,4"/>')
        if marker_label:
            anchor = "end" if marker > 0.6 * xmax else "start"
            dx = -4 if anchor == "end" else 4
            out.append(f'<text x="{x(marker) + dx:.1f}" y="{top - 8}" font-size="12" '
                       f'text-anchor="{anchor}">{escape(marker_label)}</text>')
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2}" y="{bottom + 34}" text-anchor="middle">'
                   f"{escape(xlabel)}</text>")
    lx = left
    for name, color in colors.items():
        out.append(f'<rect x="{lx}" y="{bottom + 42}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{lx + 16}" y="{bottom + 53}">{escape(name)}</text>')
        lx += 24 + 8 * len(name)
    out.append("</svg>")
    return "".join(out).encode()
