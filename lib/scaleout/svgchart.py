"""Tiny SVG charts for widgets: a redraw costs well under a millisecond.

Matplotlib's Agg renderer takes 60-150 ms per redraw on a 2-core machine,
too slow for a slider in a live class; these charts are plain SVG text that
the browser draws. Use them in explorers (``Image(format="svg+xml")``);
static figures in notebooks stay matplotlib. Drawing only, no model logic.

Every text is measured (:func:`text_width`, DejaVu Sans metrics, the first font the
charts ask for) before it is placed: margins grow to fit the longest label, legends
wrap onto new rows, titles shrink or wrap, and labels that do not fit inside a bar are
left out rather than drawn over its neighbours. Numbers go through
:mod:`scaleout.formatting` (no exponents, no offsets).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

from . import formatting

__all__ = ["gantt", "line_chart", "nice_ticks", "stacked_hbars", "text_width", "vstack"]

_FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
#: A white outline under a label, so that it stays readable where it crosses a line.
_HALO = ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'

# Advance widths of DejaVu Sans (regular, bold), in thousandths of the font size, for the
# printable ASCII characters 32-126 (read from the font files matplotlib ships).
_ASCII_W = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698,
    770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635, 611, 732,
    684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
    634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,
    525, 636, 337, 636, 838)
_ASCII_W_BOLD = (
    348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696,
    696, 696, 696, 696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734,
    830, 683, 683, 821, 837, 372, 372, 775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812,
    774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500, 675, 716, 593, 716, 678, 435, 716,
    712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652, 924, 645, 652,
    582, 712, 365, 712, 838)


def _char_w(ch: str, bold: bool) -> int:
    code = ord(ch)
    if 32 <= code < 127:
        return (_ASCII_W_BOLD if bold else _ASCII_W)[code - 32]
    if 0x1100 <= code <= 0x11FF or 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF \
            or 0xF900 <= code <= 0xFAFF or 0xFF00 <= code <= 0xFFEF:
        return 1000  # Hangul and CJK ideographs: one em each, in any CJK font
    return 900 if bold else 860  # Greek, arrows, symbols: DejaVu draws them about this wide


def text_width(text: str, size: float = 13, bold: bool = False) -> float:
    """Width in pixels of ``text`` in DejaVu Sans at ``size`` px (``bold`` for bold).

    Arial and most sans-serif fallbacks are narrower, so a label measured here fits
    in any of the fonts the charts ask for.
    """
    return size * sum(_char_w(ch, bold) for ch in str(text)) / 1000.0


def _title_lines(title: str, width: float, size: float = 15) -> tuple[list[str], float]:
    """A title as lines that fit ``width`` (shrunk to 12 px first, then wrapped at spaces)."""
    room = width - 16
    while size > 12 and text_width(title, size, True) > room:
        size -= 0.5
    if text_width(title, size, True) <= room:
        return [title], size
    lines, line = [], ""
    for word in title.split(" "):
        trial = f"{line} {word}".strip()
        if line and text_width(trial, size, True) > room:
            lines.append(line)
            line = word
        else:
            line = trial
    lines.append(line)
    return lines, size


def _open_svg(width: float, height: float, title_lines: Sequence[str] = (),
              title_size: float = 15, font_size: int = 13) -> list[str]:
    """The opening of every chart: the <svg> element, a white background, a bold title."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
           f'viewBox="0 0 {width:g} {height:g}" {_FONT} font-size="{font_size}">',
           f'<rect width="{width:g}" height="{height:g}" fill="white"/>']
    for i, line in enumerate(title_lines):
        out.append(f'<text x="{width / 2:g}" y="{22 + i * (title_size + 4):g}" '
                   f'text-anchor="middle" font-size="{title_size:g}" font-weight="bold">'
                   f"{escape(line)}</text>")
    return out


def _title_height(lines: Sequence[str], size: float) -> float:
    """Vertical room the title takes (0 without one)."""
    return 0.0 if not lines else 30 + (len(lines) - 1) * (size + 4)


def _marker_text(x: float, y: float, label: str, right_side: bool, left: float = 0.0,
                 right: float = math.inf, size: float = 12) -> str:
    """A marker line's label, kept inside ``[left, right]``: left of the line when far right."""
    w = text_width(label, size)
    anchor_end = right_side or x + 4 + w > right
    if anchor_end and x - 4 - w < left:  # fits on neither side: put it where there is most room
        anchor_end = (x - left) > (right - x)
    anchor, dx = ("end", -4) if anchor_end else ("start", 4)
    xx = x + dx
    if anchor == "end":
        xx = max(xx, left + w)
    else:
        xx = min(xx, right - w)
    return (f'<text x="{xx:.1f}" y="{y:g}" font-size="{size:g}" text-anchor="{anchor}"{_HALO}>'
            f"{escape(label)}</text>")


def _legend_layout(items: Sequence[tuple[str, str]], left: float, width: float,
                   size: float, bold: str | None) -> list[tuple[float, int]]:
    """``(x, row)`` of each legend entry ``(label, kind)``: rows wrap at ``width - 8``."""
    places, x, row = [], left, 0
    for label, kind in items:
        step = (16 if kind == "box" else 27) + text_width(label, size, label == bold) + 18
        if x + step - 18 > width - 8 and x > left:
            x, row = left, row + 1
        places.append((x, row))
        x += step
    return places


def _legend_rows(items: Sequence[tuple[str, str]], left: float, width: float,
                 size: float = 13, bold: str | None = None) -> int:
    """How many rows :func:`_legend` needs for ``items`` (``(label, kind)``)."""
    places = _legend_layout(items, left, width, size, bold)
    return 1 + max((row for _x, row in places), default=0)


def _legend(items: Sequence[tuple[str, str, str]], left: float, width: float, y: float,
            size: float = 13, bold: str | None = None) -> list[str]:
    """Legend entries ``(label, colour, kind)`` in rows that fit ``[left, width - 8]``.

    ``kind`` is ``"box"`` (a filled square), ``"line"`` or ``"dash"``; ``y`` is the first
    row's baseline, rows are ``size + 7`` apart.
    """
    out: list[str] = []
    places = _legend_layout([(lab, kind) for lab, _c, kind in items], left, width, size, bold)
    for (label, color, kind), (x, row) in zip(items, places, strict=True):
        row_y = y + row * (size + 7)
        if kind == "box":
            out.append(f'<rect x="{x:.1f}" y="{row_y - 11:g}" width="12" height="12" '
                       f'fill="{color}"/>')
            tx = x + 16
        else:
            dash = ' stroke-dasharray="7,5"' if kind == "dash" else ""
            sw = 3.5 if label == bold else 2
            out.append(f'<line x1="{x:.1f}" x2="{x + 22:.1f}" y1="{row_y - 4:g}" '
                       f'y2="{row_y - 4:g}" stroke="{color}" stroke-width="{sw}"{dash}/>')
            tx = x + 27
        weight = ' font-weight="bold"' if label == bold else ""
        out.append(f'<text x="{tx:.1f}" y="{row_y:g}" font-size="{size:g}"{weight}>'
                   f"{escape(label)}</text>")
    return out


def nice_ticks(upper: float, n: int = 5, *, integer: bool = False) -> list[float]:
    """About ``n`` round tick values from 0 to at least ``upper`` (1, 2, 2.5 or 5 times 10^k).

    ``integer`` keeps every step a whole number (for counts: no tick at 0.5).
    """
    if not upper > 0 or not math.isfinite(upper):
        return [0.0, 1.0]
    raw = upper / n
    if integer:
        raw = max(raw, 1.0)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10)
                if m * mag >= raw and (not integer or float(m * mag).is_integer()))
    count = math.ceil(upper / step - 1e-9)
    return [i * step for i in range(count + 1)]


def _value_text(total_format: str | Callable[[float], str] | None) -> Callable[[float], str]:
    """How bar totals print: a format spec (``",.1f"``), a function, or 3 significant figures."""
    if total_format is None:
        return formatting.sig
    if callable(total_format):
        return total_format
    return lambda v: format(v, total_format)


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
    total_format: str | Callable[[float], str] | None = None,
    tick_format: Callable[[float], str] = formatting.axis_tick,
    integer_ticks: bool = False,
) -> bytes:
    """Horizontal stacked bars as SVG bytes.

    Parameters
    ----------
    rows
        ``{row label: {segment: value}}``; segments are drawn in ``colors`` order.
    colors
        ``{segment: css colour}``; also the legend (wrapped onto rows as needed), which
        names only the segments some row has above zero.
    marker
        An x value drawn as a dashed vertical line (a capacity, a budget).
    highlight
        A row label drawn in bold.
    total_format
        How the total printed after each bar reads: a format spec (``",.0f"``), a
        function of the value, or by default three significant figures
        (:func:`scaleout.formatting.sig`).
    tick_format
        The x axis' tick labels (default :func:`scaleout.formatting.axis_tick`).
    integer_ticks
        Whole-number ticks only (the bars are counts).

    The left margin fits the longest row label (in bold where highlighted), the right
    margin the widest total, so nothing is drawn outside the chart.
    """
    value_text = _value_text(total_format)
    totals = [sum(float(v) for v in seg.values()) for seg in rows.values()]
    total_texts = [value_text(t) for t in totals]
    label_w = max((text_width(label, 13, label == highlight) for label in rows), default=0.0)
    total_w = max((text_width(t, 13, lab == highlight) for t, lab in zip(
        total_texts, rows, strict=True)), default=0.0)
    left = max(60.0, label_w + 14)
    right = max(24.0, total_w + 10)
    if left + right > width - 200:  # keep at least 200 px of plot: shrink the label column
        left = max(60.0, width - 200 - right)
    title_lines, title_size = _title_lines(title, width) if title else ([], 15.0)
    top = _title_height(title_lines, title_size) + (18 if marker_label else 0) + 6
    top = max(top, 24.0)
    plot_w = width - left - right
    # the legend names the segments some row has: a part that is zero everywhere is not drawn
    legend_items = [(name, color, "box") for name, color in colors.items()
                    if any(float(segs.get(name, 0.0)) > 0 for segs in rows.values())]
    n_legend = _legend_rows([(n, "box") for n, _c, _k in legend_items], left, width)
    bottom = top + row_height * len(rows)
    height = bottom + 58 + 20 * (n_legend - 1) - (0 if xlabel else 14)
    upper = max([*totals, marker or 0.0, 1e-9])
    ticks = nice_ticks(upper, integer=integer_ticks)
    xmax = ticks[-1]

    def x(v: float) -> float:
        return left + plot_w * v / xmax

    out = _open_svg(width, height, title_lines, title_size)
    for t in ticks:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top:g}" y2="{bottom:g}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{bottom + 16:g}" text-anchor="middle">'
                   f"{escape(tick_format(t))}</text>")
    for i, (label, segs) in enumerate(rows.items()):
        y0 = top + i * row_height + 5
        h = row_height - 10
        weight = ' font-weight="bold"' if label == highlight else ""
        shown = label
        while text_width(shown, 13, label == highlight) > left - 10 and len(shown) > 2:
            shown = shown[:-2] + "…"
        out.append(f'<text x="{left - 8:g}" y="{y0 + h / 2 + 4:.1f}" text-anchor="end"{weight}>'
                   f"{escape(shown)}</text>")
        acc = 0.0
        for name, color in colors.items():
            v = float(segs.get(name, 0.0))
            if v > 0:
                out.append(f'<rect x="{x(acc):.1f}" y="{y0:g}" '
                           f'width="{x(acc + v) - x(acc):.1f}" height="{h:g}" fill="{color}">'
                           f"<title>{escape(name)}: {formatting.sig(v)}</title></rect>")
            acc += v
        out.append(f'<text x="{x(acc) + 4:.1f}" y="{y0 + h / 2 + 4:.1f}"{weight}{_HALO}>'
                   f"{escape(total_texts[i])}</text>")
    if marker is not None and math.isfinite(marker):
        out.append(f'<line x1="{x(marker):.1f}" x2="{x(marker):.1f}" y1="{top - 6:g}" '
                   f'y2="{bottom:g}" stroke="black" stroke-width="2" stroke-dasharray="6,4"/>')
        if marker_label:
            out.append(_marker_text(x(marker), top - 8, marker_label, marker > 0.6 * xmax,
                                    left=4, right=width - 4))
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{bottom + 34:g}" '
                   f'text-anchor="middle">{escape(xlabel)}</text>')
    out += _legend(legend_items, left, width, bottom + (53 if xlabel else 39))
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
    """A tick label of either axis: :func:`scaleout.formatting.axis_tick` (no exponents)."""
    return formatting.axis_tick(v)


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
    xtick_format: Callable[[float], str] = formatting.axis_tick,
    ytick_format: Callable[[float], str] = formatting.axis_tick,
    xticks: Sequence[float] | None = None,
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
    xtick_format, ytick_format
        Tick labels (default :func:`scaleout.formatting.axis_tick`; e.g.
        :func:`scaleout.formatting.bytes_iec` for sizes, :func:`~scaleout.formatting.duration`
        for times in seconds).
    xticks
        Tick positions of the x axis instead of the automatic ones (e.g. powers of 1,024
        for sizes in bytes).

    The left margin fits the widest y tick label, so the y axis title never overlaps
    them; the legend wraps onto as many rows as it needs (the chart grows to hold them).
    """
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
    if xticks is not None:
        xt = sorted(float(t) for t in xticks if not logx or t > 0)
        if logx:
            x_lo, x_hi = min(x_lo, xt[0]), max(x_hi, xt[-1])
        else:
            x_lo, x_hi = 0.0, max(x_hi, xt[-1])
    elif logx:
        xt = _log_ticks(x_lo, x_hi)
        x_lo, x_hi = min(x_lo, xt[0]), max(x_hi, xt[-1])
    else:
        xt = nice_ticks(x_hi)
        x_lo, x_hi = 0.0, xt[-1]
    ytexts = [ytick_format(t) for t in yticks]
    xtexts = [xtick_format(t) for t in xt]
    ytick_w = max((text_width(t) for t in ytexts), default=0.0)
    left = ytick_w + 14 + (24 if ylabel else 4)
    right = max(24.0, text_width(xtexts[-1]) / 2 + 8) if xtexts else 24.0
    title_lines, title_size = _title_lines(title, width) if title else ([], 15.0)
    top = max(16.0, _title_height(title_lines, title_size) + 10)
    plot_w = width - left - right
    legend_items = [(label, color, "dash" if label in dashed else "line")
                    for label, color in colors.items() if label in series]
    n_legend = _legend_rows([(lab, k) for lab, _c, k in legend_items], left, width,
                            bold=highlight)
    bottom_pad = (58 if xlabel else 40) + 20 * n_legend
    height = max(height, int(top + 120 + bottom_pad))
    plot_h = height - top - bottom_pad

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

    out = _open_svg(width, height, title_lines, title_size)
    y0 = top + plot_h
    # x tick labels that would touch their neighbour are left out (every other one, ...)
    every = 1
    if len(xt) > 1:
        gap = min(fx(b) - fx(a) for a, b in itertools.pairwise(xt))
        widest = max(text_width(t) for t in xtexts) + 8
        every = max(1, math.ceil(widest / max(gap, 1e-9)))
    for k, (t, text) in enumerate(zip(xt, xtexts, strict=True)):
        out.append(f'<line x1="{fx(t):.1f}" x2="{fx(t):.1f}" y1="{top:g}" y2="{y0:g}" '
                   'stroke="#ddd"/>')
        if k % every == 0:
            out.append(f'<text x="{fx(t):.1f}" y="{y0 + 16:g}" text-anchor="middle">'
                       f"{escape(text)}</text>")
    for t, text in zip(yticks, ytexts, strict=True):
        out.append(f'<line x1="{left:g}" x2="{left + plot_w:g}" y1="{fy(t):.1f}" '
                   f'y2="{fy(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6:g}" y="{fy(t) + 4:.1f}" text-anchor="end">'
                   f"{escape(text)}</text>")
    out.append(f'<rect x="{left:g}" y="{top:g}" width="{plot_w:g}" height="{plot_h:g}" '
               'fill="none" stroke="#999"/>')
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
                       f'stroke="black"><title>{escape(label)}: {formatting.sig(y)}'
                       "</title></circle>")
            if label_points:
                out.append(_marker_text(fx(xx), fy(yy) - 9, label,
                                        fx(xx) > left + 0.6 * plot_w))
    if marker_x is not None and math.isfinite(marker_x) and (not logx or marker_x > 0):
        mx = fx(min(max(marker_x, x_lo), x_hi))
        out.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top:g}" y2="{y0:g}" stroke="black" '
                   'stroke-width="1.5" stroke-dasharray="5,4"/>')
        if marker_label:
            out.append(_marker_text(mx, y0 - 8, marker_label, mx > left + 0.6 * plot_w,
                                    left=left + 2, right=left + plot_w - 2))
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{y0 + 36:g}" text-anchor="middle">'
                   f"{escape(xlabel)}</text>")
    if ylabel:
        mid = top + plot_h / 2
        room = 2 * min(mid, height - mid) - 8
        ysize = 13.0
        while ysize > 10 and text_width(ylabel, ysize) > room:
            ysize -= 0.5
        out.append(f'<text x="16" y="{mid:.1f}" text-anchor="middle" font-size="{ysize:g}" '
                   f'transform="rotate(-90 16 {mid:.1f})">{escape(ylabel)}</text>')
    out += _legend(legend_items, left, width, y0 + (56 if xlabel else 38), bold=highlight)
    out.append("</svg>")
    return "".join(out).encode()


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
    char_px: float | None = None,
    tick_format: Callable[[float], str] = formatting.axis_tick,
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
        Per bar text drawn inside the bar, e.g. a micro-batch number; ``None`` for
        none. Labels go by colour: the bars of one colour are all labelled when every
        one of them is wide enough for its text, else none of them is, so a chart never
        shows numbers on some bars and not on their neighbours of the same kind.
    legend
        ``{name: css colour}`` drawn under the axis (wrapped onto rows as needed).
    marker
        An x value drawn as a dashed vertical line (a deadline, an ideal time).
    char_px
        Width allowed per label character (default: measured in the label's font).
    """
    n_lanes = len(lane_names)
    left = max(50.0, max((text_width(str(n), 12) for n in lane_names), default=0.0) + 14)
    right = 16
    title_lines, title_size = _title_lines(title, width, 14) if title else ([], 14.0)
    top = max(16.0, _title_height(title_lines, title_size) + 14)
    plot_w = width - left - right
    bottom = top + lane_height * n_lanes
    items = [(name, color, "box") for name, color in (legend or {}).items()]
    n_legend = _legend_rows([(n, "box") for n, _c, _k in items], left, width, 12) \
        if items else 0
    height = bottom + (42 if xlabel or not items else 28) + 19 * n_legend
    ends_l = [float(e) for e in ends]
    xmax = max([*ends_l, marker or 0.0, 1e-12])
    scale = plot_w / xmax
    out = _open_svg(width, height, title_lines, title_size, font_size=12)
    for i, name in enumerate(lane_names):
        y = top + i * lane_height
        out.append(f'<rect x="{left:g}" y="{y + 1:g}" width="{plot_w:g}" '
                   f'height="{lane_height - 2}" fill="#eeeeee"/><text x="{left - 6:g}" '
                   f'y="{y + lane_height / 2 + 4:.1f}" text-anchor="end">'
                   f"{escape(str(name))}</text>")
    ticks = [t for t in nice_ticks(xmax) if t <= xmax * (1 + 1e-9)]
    for t in ticks:
        x = left + t * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top:g}" y2="{bottom:g}" stroke="#ccc" '
                   f'stroke-width="0.6"/><text x="{x:.1f}" y="{bottom + 15:g}" '
                   f'text-anchor="middle">{escape(tick_format(t))}</text>')
    h = lane_height - 4
    font = min(11, h - 3)
    # One <path> per colour, a closed sub-path per bar, in whole tenths of a pixel (drawn
    # at scale 0.1): a third of the bytes of <rect>s and half the time of float formatting.
    x0, sx = 10.0 * left, 10.0 * scale
    lane_y = [f" {10 * (top + i * lane_height + 2):g}h" for i in range(n_lanes)]
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
        texts = [str(t) for t in labels]
        digit_w = char_px if char_px is not None else font * 0.64
        fits = [(e - s) * scale >= digit_w * len(t) + 4
                for s, e, t in zip(starts, ends_l, texts, strict=True)]
        misfit_fills = {f for f, ok in zip(fills, fits, strict=True) if not ok}
        for k, s, e, t, f in zip(lanes, starts, ends_l, texts, fills, strict=True):
            if f not in misfit_fills:
                out.append(f'<text x="{left + (s + e) / 2 * scale:.1f}" '
                           f'y="{top + k * lane_height + 2 + h / 2 + font / 2 - 1:.1f}" '
                           f'text-anchor="middle" font-size="{font}" fill="white">'
                           f"{escape(t)}</text>")
    if marker is not None and math.isfinite(marker):
        x = left + marker * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 4:g}" y2="{bottom:g}" '
                   'stroke="black" stroke-width="1.5" stroke-dasharray="5,4"/>')
        if marker_label:
            out.append(_marker_text(x, top - 6, marker_label, marker > 0.6 * xmax,
                                    left=4, right=width - 4, size=11))
    if xlabel:
        out.append(f'<text x="{left + plot_w / 2:.1f}" y="{bottom + 31:g}" '
                   f'text-anchor="middle">{escape(xlabel)}</text>')
    if items:
        out += _legend(items, left, width, bottom + (53 if xlabel else 39), size=12)
    out.append("</svg>")
    return "".join(out).encode()
