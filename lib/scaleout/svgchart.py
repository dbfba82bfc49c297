"""Tiny SVG charts for widgets: a redraw costs well under a millisecond.

Matplotlib's Agg renderer takes 60-150 ms per redraw on a 2-core machine,
too slow for a slider in a live class; these charts are plain SVG text that
the browser draws. Use them in explorers (``Image(format="svg+xml")``);
static figures in notebooks stay matplotlib. Drawing only, no model logic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["gantt", "line_chart", "nice_ticks", "stacked_hbars", "vstack"]

_FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def _open_svg(width: float, height: float, title: str = "") -> list[str]:
    """The opening of every chart: the <svg> element, a white background, a bold title."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {_FONT} font-size="13">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" '
                   f'font-weight="bold">{escape(title)}</text>')
    return out


def _marker_text(x: float, y: float, label: str, right_side: bool) -> str:
    """A marker line's label, kept inside the chart: left of the line when it is far right."""
    anchor, dx = ("end", -4) if right_side else ("start", 4)
    return (f'<text x="{x + dx:.1f}" y="{y}" font-size="12" text-anchor="{anchor}">'
            f"{escape(label)}</text>")


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

    out = _open_svg(width, height, title)
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
            out.append(_marker_text(x(marker), top - 8, marker_label, marker > 0.6 * xmax))
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


# =========================================================================== lines
def _log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten (or of two for narrow ranges) spanning ``[lo, hi]``."""
    k0, k1 = math.floor(math.log10(lo) + 1e-9), math.ceil(math.log10(hi) - 1e-9)
    if k1 - k0 >= 2:
        return [10.0**k for k in range(k0, k1 + 1)]
    j0, j1 = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    return [2.0**j for j in range(j0, j1 + 1)]


def _tick_label(v: float) -> str:
    """Plain numbers up to 100,000, then ``1e6``, ``1e10`` (no sign or padded exponent)."""
    if v >= 1e6 or (0 < v < 1e-2):
        mantissa, exponent = f"{v:.0e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{v:,.0f}" if v == int(v) else f"{v:g}"


def line_chart(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    colors: Mapping[str, str],
    *,
    xlabel: str = "",
    ylabel: str = "",
    title: str = "",
    logx: bool = False,
    logy: bool = False,
    y_range: tuple[float, float] | None = None,
    dashed: Sequence[str] = (),
    highlight: str | None = None,
    marker_x: float | None = None,
    marker_label: str = "",
    points: Mapping[str, tuple[float, float]] | None = None,
    point_colors: Mapping[str, str] | None = None,
    label_points: bool = False,
    width: int = 720,
    height: int = 340,
) -> bytes:
    """Lines as SVG bytes: one polyline per series, optional log axes.

    Parameters
    ----------
    series
        ``{label: (xs, ys)}``; non-finite points are skipped.
    colors
        ``{label: css colour}`` for every series (also the legend order).
    y_range
        Fixed ``(low, high)`` of the y axis (default: from the data; 0 at the
        bottom of a linear axis).
    dashed
        Labels drawn dashed; ``highlight`` is drawn thicker.
    marker_x
        An x value drawn as a dashed vertical line, labelled ``marker_label``.
    points
        ``{label: (x, y)}`` drawn as dots on the series of the same colour (or in
        ``point_colors[label]``); ``label_points`` writes each label beside its dot.
    """
    left, right, top, bottom_pad = 70, 44, 40 if title else 16, 86
    plot_w, plot_h = width - left - right, height - top - bottom_pad
    xs_all = [float(x) for xs, _ in series.values() for x in xs]
    ys_all = [float(y) for _, ys in series.values() for y in ys if math.isfinite(float(y))]
    if logx:
        xs_all = [x for x in xs_all if x > 0]
    if logy:
        ys_all = [y for y in ys_all if y > 0]
    x_lo, x_hi = (min(xs_all), max(xs_all)) if xs_all else (1.0, 10.0)
    if y_range is not None:
        y_lo, y_hi = y_range
    elif ys_all:
        y_lo, y_hi = (min(ys_all), max(ys_all)) if logy else (0.0, max(ys_all))
    else:
        y_lo, y_hi = (1.0, 10.0) if logy else (0.0, 1.0)
    if x_hi <= x_lo:
        x_hi = x_lo * 2 if logx else x_lo + 1
    if logy:
        y_lo, y_hi = 10 ** math.floor(math.log10(y_lo)), 10 ** math.ceil(math.log10(y_hi))
        if y_hi <= y_lo:
            y_hi = y_lo * 10
        yticks = _log_ticks(y_lo, y_hi)
    else:
        yticks = nice_ticks(y_hi - y_lo if y_hi > y_lo else 1.0)
        yticks = [y_lo + t for t in yticks]
        y_hi = yticks[-1]
    xticks = _log_ticks(x_lo, x_hi) if logx else nice_ticks(x_hi)
    if logx:
        x_lo, x_hi = min(x_lo, xticks[0]), max(x_hi, xticks[-1])
    else:
        x_lo, x_hi = 0.0, xticks[-1]

    def fx(v: float) -> float:
        if logx:
            span = math.log(x_hi) - math.log(x_lo)
            return left + plot_w * (math.log(v) - math.log(x_lo)) / span
        return left + plot_w * (v - x_lo) / (x_hi - x_lo)

    def fy(v: float) -> float:
        if logy:
            frac = (math.log(v) - math.log(y_lo)) / (math.log(y_hi) - math.log(y_lo))
        else:
            frac = (v - y_lo) / (y_hi - y_lo)
        return top + plot_h * (1 - frac)

    out = _open_svg(width, height, title)
    y0 = top + plot_h
    for t in xticks:
        out.append(f'<line x1="{fx(t):.1f}" x2="{fx(t):.1f}" y1="{top}" y2="{y0}" stroke="#ddd"/>')
        out.append(f'<text x="{fx(t):.1f}" y="{y0 + 16}" text-anchor="middle">'
                   f"{_tick_label(t)}</text>")
    for t in yticks:
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{fy(t):.1f}" y2="{fy(t):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{fy(t) + 4:.1f}" text-anchor="end">'
                   f"{_tick_label(t) if logy else _fmt_tick(t)}</text>")
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
               'stroke="#999"/>')
    for label, color in colors.items():
        if label not in series:
            continue
        xs, ys = series[label]
        pts = [(float(x), float(y)) for x, y in zip(xs, ys, strict=True)
               if math.isfinite(float(y)) and (not logx or float(x) > 0)
               and (not logy or float(y) > 0)]
        pts = [(x, min(max(y, y_lo), y_hi)) for x, y in pts]
        if not pts:
            continue
        path = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="7,5"' if label in dashed else ""
        sw = 3.5 if label == highlight else 2
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{sw}"'
                   f'{dash}><title>{escape(label)}</title></polyline>')
    for label, (x, y) in (points or {}).items():
        if math.isfinite(x) and math.isfinite(y) and (not logx or x > 0) and (not logy or y > 0):
            color = (point_colors or {}).get(label, colors.get(label, "black"))
            yy = min(max(y, y_lo), y_hi)
            xx = min(max(x, x_lo), x_hi) if logx else x
            out.append(f'<circle cx="{fx(xx):.1f}" cy="{fy(yy):.1f}" r="6" fill="{color}" '
                       f'stroke="black"><title>{escape(label)}: {y:,.3g}</title></circle>')
            if label_points:
                out.append(_marker_text(fx(xx), fy(yy) - 9, label,
                                        fx(xx) > left + 0.6 * plot_w))
    if marker_x is not None and math.isfinite(marker_x) and (not logx or marker_x > 0):
        mx = fx(min(max(marker_x, x_lo), x_hi))
        out.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top}" y2="{y0}" stroke="black" '
                   'stroke-width="1.5" stroke-dasharray="5,4"/>')
        if marker_label:
            out.append(_marker_text(mx, y0 - 8, marker_label, mx > left + 0.6 * plot_w))
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2}" y="{y0 + 36}" text-anchor="middle">'
                   f"{escape(xlabel)}</text>")
    if ylabel:
        out.append(f'<text x="16" y="{top + plot_h / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 16 {top + plot_h / 2})">{escape(ylabel)}</text>')
    lx, ly = left, y0 + 56
    for label, color in colors.items():
        if label not in series:
            continue
        step = 44 + 8 * len(label)
        if lx + step > width and lx > left:
            lx, ly = left, ly + 18
        dash = ' stroke-dasharray="7,5"' if label in dashed else ""
        out.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" '
                   f'stroke-width="{3.5 if label == highlight else 2}"{dash}/>')
        weight = ' font-weight="bold"' if label == highlight else ""
        out.append(f'<text x="{lx + 27}" y="{ly}"{weight}>{escape(label)}</text>')
        lx += step
    out.append("</svg>")
    return "".join(out).encode()


def _fmt_tick(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 10 or v == int(v) else f"{v:,.2g}"


def vstack(charts: Sequence[bytes]) -> bytes:
    """Several SVG charts of this module, one above the other, as one SVG (one widget image)."""
    sizes = []
    for svg in charts:
        text = svg.decode()
        w = float(text.split('width="', 1)[1].split('"', 1)[0])
        h = float(text.split('height="', 1)[1].split('"', 1)[0])
        sizes.append((w, h, text))
    width = max((w for w, _, _ in sizes), default=0)
    height = sum(h for _, h, _ in sizes)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
           f'viewBox="0 0 {width:g} {height:g}">']
    y = 0.0
    for _w, h, text in sizes:
        out.append(text.replace("<svg ", f'<svg y="{y:g}" ', 1))
        y += h
    out.append("</svg>")
    return "".join(out).encode()


# =========================================================================== gantt
def gantt(
    lanes: Sequence[int],
    starts: Sequence[float],
    ends: Sequence[float],
    fills: Sequence[str],
    lane_names: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    legend: Mapping[str, str] | None = None,
    marker: float | None = None,
    marker_label: str = "",
    xlabel: str = "",
    title: str = "",
    width: int = 760,
    lane_height: int = 22,
    char_px: float = 6.5,
) -> bytes:
    """A Gantt chart as SVG bytes: one row per lane, one bar per task.

    Lanes are drawn on a light grey background, so the time a lane sits idle
    shows as grey. Drawing only: positions and colours come from the caller.

    Parameters
    ----------
    lanes, starts, ends, fills
        Per bar: lane index (0 at the top), start and end (x units), css colour.
    lane_names
        One label per lane, drawn at the left.
    labels
        Per bar text drawn inside the bar where it fits (``char_px`` per
        character), e.g. a micro-batch number; ``None`` for none.
    legend
        ``{name: css colour}`` drawn under the axis.
    marker
        An x value drawn as a dashed vertical line (a deadline, an ideal time).
    """
    n_lanes = len(lane_names)
    left, right, top = 74, 16, 44 if title else 16
    plot_w = width - left - right
    bottom = top + lane_height * n_lanes
    height = bottom + (62 if legend else 42)
    ends_l = [float(e) for e in ends]
    xmax = max([*ends_l, marker or 0.0, 1e-12])
    scale = plot_w / xmax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" {_FONT} font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14" '
                   f'font-weight="bold">{escape(title)}</text>')
    for i, name in enumerate(lane_names):
        y = top + i * lane_height
        out.append(f'<rect x="{left}" y="{y + 1}" width="{plot_w}" height="{lane_height - 2}" '
                   f'fill="#eeeeee"/><text x="{left - 6}" y="{y + lane_height / 2 + 4:.1f}" '
                   f'text-anchor="end">{escape(str(name))}</text>')
    ticks = [t for t in nice_ticks(xmax) if t <= xmax * (1 + 1e-9)]
    for t in ticks:
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="#ccc" '
                   f'stroke-width="0.6"/><text x="{x:.1f}" y="{bottom + 15}" '
                   f'text-anchor="middle">{_fmt(t)}</text>')
    h = lane_height - 4
    font = min(11, h - 3)
    # One <path> per colour, a closed sub-path per bar, in whole tenths of a pixel (drawn
    # at scale 0.1): a third of the bytes of <rect>s and half the time of float formatting.
    x0, sx = 10.0 * left, 10.0 * scale
    lane_y = [f" {10 * (top + i * lane_height + 2)}h" for i in range(n_lanes)]
    paths: dict[str, list[str]] = {}
    for k, s, e, f in zip(lanes, starts, ends_l, fills, strict=True):
        w = int((e - s) * sx + 0.5)
        paths.setdefault(f, []).append(f"M{int(x0 + s * sx + 0.5)}{lane_y[k]}{w}v{10 * h}h-{w}z")
    n_bars = sum(len(d) for d in paths.values())
    # white edges separate bars, but would wash out bars narrower than a few pixels
    edges = ' stroke="white" stroke-width="5"' if plot_w * n_lanes >= 5 * n_bars else ""
    out.append(f'<g transform="scale(0.1)"{edges}>')
    out += [f'<path fill="{f}" d="{"".join(d)}"/>' for f, d in paths.items()]
    out.append("</g>")
    if labels is not None:
        for k, s, e, text in zip(lanes, starts, ends_l, labels, strict=True):
            w = (e - s) * scale
            if w >= char_px * len(str(text)) + 3:
                out.append(f'<text x="{left + (s + e) / 2 * scale:.1f}" '
                           f'y="{top + k * lane_height + 2 + h / 2 + font / 2 - 1:.1f}" '
                           f'text-anchor="middle" font-size="{font}" fill="white">'
                           f"{escape(str(text))}</text>")
    if marker is not None and math.isfinite(marker):
        x = left + marker * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4}" y2="{bottom}" '
                   'stroke="black" stroke-width="1.5" stroke-dasharray="5,4"/>')
        if marker_label:
            anchor, dx = ("end", -4) if marker > 0.6 * xmax else ("start", 4)
            out.append(f'<text x="{x + dx:.1f}" y="{top - 6}" font-size="11" '
                       f'text-anchor="{anchor}">{escape(marker_label)}</text>')
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2}" y="{bottom + 31}" text-anchor="middle">'
                   f"{escape(xlabel)}</text>")
    lx = left
    for name, color in (legend or {}).items():
        out.append(f'<rect x="{lx}" y="{bottom + 42}" width="12" height="12" fill="{color}"/>'
                   f'<text x="{lx + 16}" y="{bottom + 53}">{escape(name)}</text>')
        lx += 26 + 7 * len(name)
    out.append("</svg>")
    return "".join(out).encode()
