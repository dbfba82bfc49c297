"""Drawing primitives shared by the diagrams: a canvas, a palette, text that fits its box.

Every diagram is one ``<svg>`` with a ``viewBox`` and ``width="100%"``, so it scales to
the width of the notebook, the Voilà page or the report; sizes below are viewBox units
(about pixels at 1,000 px wide). Text uses the charts' font (:mod:`scaleout.svgchart`)
at projector sizes (16 and up for labels) and never a rotation, so its extent can be
estimated, and checked, from its length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from ..svgchart import _FONT

# Okabe & Ito (2008), "Color Universal Design": eight colours told apart under the common
# forms of colour blindness. Every colour below also carries a label in words.
BLACK = "#000000"
ORANGE = "#E69F00"
SKY = "#56B4E9"
GREEN = "#009E73"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
GREY = "#7A7A7A"
#: One colour per item when items need telling apart (GPUs, rails, planes), in this order
#: (yellow is left out: thin yellow lines vanish on white).
PALETTE = (BLUE, ORANGE, GREEN, VERMILLION, SKY, PURPLE, BLACK, GREY)
#: Pale fills for boxes that hold text.
PALE = {"blue": "#DCEBF7", "orange": "#FCEBC8", "green": "#D5F0E7", "grey": "#EEEEEE",
        "vermillion": "#F8DCCB", "purple": "#F5E1EC", "sky": "#E1F1FB", "yellow": "#FBF7C8"}
LINE = "#333333"

#: A diagram grows with its container up to this many pixels per viewBox unit.
MAX_SCALE = 1.3
#: Font sizes (viewBox units) for a projector.
TITLE, LABEL, SMALL = 21, 17, 15
#: No text is drawn smaller than this (viewBox units).
MIN_FONT = 11


def _char_em(ch: str, bold: bool) -> float:
    """Width of one character in ems: at least DejaVu Sans' own (its letters average 0.56 em,
    its space 0.32), so text measured this way never comes out narrower than it is drawn."""
    if ch == " ":
        w = 0.35
    elif ch in "mwMW—…":
        w = 0.95
    elif ch.isupper() or ch.isdigit() or ch in "#%&@+=<>≥≤×→←↔↑↓ΣΨ✓":
        w = 0.7
    else:
        w = 0.62
    return w * (1.115 if bold else 1.0)


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Estimated width of ``text`` at ``size`` (viewBox units), slightly generous."""
    return size * sum(_char_em(c, bold) for c in text)


def fit_size(text: str, width: float, size: float, bold: bool = False,
             smallest: float = 12.0) -> float:
    """The largest size up to ``size`` at which ``text`` fits ``width`` (``smallest`` at least)."""
    need = text_width(text, size, bold)
    if need <= width:
        return size
    return max(smallest, math.floor(size * width / need * 10) / 10)


def _luminance(color: str) -> float | None:
    """WCAG 2 relative luminance of ``#rrggbb`` (None for anything else)."""
    hex_ = color.lstrip("#")
    if len(hex_) != 6:
        return None
    rgb = [int(hex_[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ink(fill: str) -> str:
    """Black or white, whichever contrasts more with ``fill`` (WCAG 2 relative luminance)."""
    lum = _luminance(fill)
    if lum is None:
        return BLACK
    return BLACK if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#FFFFFF"


def readable(color: str, ratio: float = 5.0) -> str:
    """``color`` darkened just enough for text on white to reach ``ratio`` (WCAG AA asks 4.5;
    5 leaves room for the pale fills text also sits on)."""
    lum = _luminance(color)
    if lum is None or 1.05 / (lum + 0.05) >= ratio:
        return color
    rgb = [int(color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)]
    for _ in range(20):
        rgb = [round(c * 0.9) for c in rgb]
        out = "#" + "".join(f"{c:02X}" for c in rgb)
        if 1.05 / (_luminance(out) + 0.05) >= ratio:
            return out
    return BLACK


def _num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


class Canvas:
    """An SVG being drawn: shapes and text appended in order, then :meth:`svg`."""

    def __init__(self, width: float, height: float, title: str = "") -> None:
        self.width, self.height, self.title = float(width), float(height), title
        self.parts: list[str] = []
        self._markers: dict[str, str] = {}
        self._lowest = 0.0  # the lowest text descender or box edge drawn so far

    # -- shapes ---------------------------------------------------------------------
    def rect(self, x: float, y: float, w: float, h: float, *, fill: str = "white",
             stroke: str = LINE, stroke_width: float = 1.5, rx: float = 5, dash: str = "",
             tooltip: str = "") -> None:
        """A rectangle; ``tooltip`` becomes its ``<title>`` (shown on hover)."""
        self._lowest = max(self._lowest, y + h)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        stroke_attr = (f' stroke="{stroke}" stroke-width="{_num(stroke_width)}"'
                       if stroke != "none" else "")
        body = f"><title>{escape(tooltip)}</title></rect>" if tooltip else "/>"
        self.parts.append(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" '
                          f'height="{_num(h)}" rx="{_num(rx)}" fill="{fill}"{stroke_attr}'
                          f"{dash_attr}{body}")

    def circle(self, cx: float, cy: float, r: float, *, fill: str = "white",
               stroke: str = LINE, stroke_width: float = 1.5) -> None:
        """A circle."""
        self.parts.append(f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(r)}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="{_num(stroke_width)}"/>')

    def _marker(self, color: str) -> str:
        if color not in self._markers:
            mid = f"arrow{len(self._markers)}"
            self._markers[color] = (
                f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" '
                f'markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                f'fill="{color}"/></marker>')
        return self._markers[color].split('"', 2)[1]

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str = LINE,
             width: float = 2, dash: str = "", arrow: bool = False,
             both_ends: bool = False) -> None:
        """A straight line, optionally ending (or starting and ending) in an arrowhead."""
        self.path(f"M{_num(x1)},{_num(y1)} L{_num(x2)},{_num(y2)}", stroke=stroke, width=width,
                  dash=dash, arrow=arrow, both_ends=both_ends)

    def path(self, d: str, *, stroke: str = LINE, width: float = 2, dash: str = "",
             fill: str = "none", arrow: bool = False, both_ends: bool = False) -> None:
        """An SVG path (``d`` in path syntax)."""
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        if arrow or both_ends:
            mid = self._marker(stroke)
            extra += f' marker-end="url(#{mid})"'
            if both_ends:
                extra += f' marker-start="url(#{mid})"'
        self.parts.append(f'<path d="{d}" fill="{fill}" stroke="{stroke}" '
                          f'stroke-width="{_num(width)}" stroke-linecap="round"{extra}/>')

    def polyline(self, points: Sequence[tuple[float, float]], **kw) -> None:
        """A path through ``points``; keywords as :meth:`path`."""
        d = "M" + " L".join(f"{_num(x)},{_num(y)}" for x, y in points)
        self.path(d, **kw)

    # -- text -----------------------------------------------------------------------
    def text(self, x: float, y: float, text: str, *, size: float = LABEL,
             anchor: str = "start", bold: bool = False, fill: str = BLACK,
             italic: bool = False) -> None:
        """One line of text; ``y`` is its baseline."""
        self._lowest = max(self._lowest, y + 0.3 * size)
        attrs = f' font-size="{_num(size)}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if bold:
            attrs += ' font-weight="bold"'
        if italic:
            attrs += ' font-style="italic"'
        if fill != BLACK:  # coloured text on the white page is darkened until it reads
            attrs += f' fill="{fill if fill.upper() == "#FFFFFF" else readable(fill)}"'
        self.parts.append(f'<text x="{_num(x)}" y="{_num(y)}"{attrs}>{escape(text)}</text>')

    def lines(self, x: float, y: float, texts: Sequence[str], *, size: float = LABEL,
              gap: float = 1.3, **kw) -> float:
        """Several lines from baseline ``y`` down; returns the baseline after the last."""
        for t in texts:
            self.text(x, y, t, size=size, **kw)
            y += size * gap
        return y

    def box(self, x: float, y: float, w: float, h: float, label: str | Sequence[str], *,
            fill: str = "white", size: float = LABEL, bold: bool = False,
            stroke: str = LINE, stroke_width: float = 1.5, dash: str = "", rx: float = 5,
            tooltip: str = "", text_fill: str | None = None) -> None:
        """A rectangle with one or more centred lines of text, shrunk to fit its width."""
        self.rect(x, y, w, h, fill=fill, stroke=stroke, stroke_width=stroke_width, dash=dash,
                  rx=rx, tooltip=tooltip)
        texts = [label] if isinstance(label, str) else list(label)
        if not texts:
            return
        fs = min(fit_size(t, w - 8, size, bold, smallest=MIN_FONT) for t in texts)
        fs = min(fs, (h - 6) / (1.2 * (len(texts) - 1) + 1.0))
        if fs < MIN_FONT or any(text_width(t, fs, bold) > w - 2 for t in texts):
            raise RuntimeError(f"label {texts!r} does not fit a {w:.0f} × {h:.0f} box at "
                               f"{MIN_FONT} px or more (a drawing bug)")
        step = fs * 1.2
        y0 = y + h / 2 - step * (len(texts) - 1) / 2 + fs * 0.35
        color = text_fill or ink(fill)
        for i, t in enumerate(texts):
            self.text(x + w / 2, y0 + i * step, t, size=fs, anchor="middle", bold=bold,
                      fill=color)

    def legend(self, x: float, y: float, items: Sequence[tuple[str, str]], *,
               size: float = SMALL, max_x: float | None = None, swatch: str = "box",
               dashes: Sequence[str] | None = None) -> float:
        """Colour swatches with their meaning, wrapping at ``max_x``; returns the last row's y."""
        right = self.width - 10 if max_x is None else max_x
        cx = x
        for i, (label, color) in enumerate(items):
            need = 30 + text_width(label, size) + 22
            if cx + need > right and cx > x:
                cx, y = x, y + size * 1.7
            if swatch == "line":
                dash = dashes[i] if dashes else ""
                self.line(cx, y - size * 0.35, cx + 24, y - size * 0.35, stroke=color, width=4,
                          dash=dash)
            else:
                self.rect(cx, y - size * 0.85, 22, size, fill=color, rx=2)
            self.text(cx + 30, y, label, size=size)
            cx += need
        return y

    # -- out ------------------------------------------------------------------------
    def svg(self) -> str:
        """The finished ``<svg>`` element as text, tall enough for everything drawn."""
        self.height = max(self.height, math.ceil(self._lowest + 12))
        w, h = _num(self.width), _num(self.height)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="100%" '
                f'preserveAspectRatio="xMidYMin meet" role="img" {_FONT} font-size="{LABEL}" '
                f'style="max-width:min(100%,{_num(self.width * MAX_SCALE)}px);height:auto;'
                'display:block">')
        label = f"<title>{escape(self.title)}</title>" if self.title else ""
        defs = f"<defs>{''.join(self._markers.values())}</defs>" if self._markers else ""
        bg = f'<rect width="{w}" height="{h}" fill="white"/>'
        return head + label + defs + bg + "".join(self.parts) + "</svg>"


def heading(c: Canvas, text: str, y: float = 30, size: float = TITLE) -> None:
    """A bold title centred at the top, shrunk to fit the width."""
    c.text(c.width / 2, y, text, size=fit_size(text, c.width - 24, size, bold=True),
           anchor="middle", bold=True)


def wrap(text: str, width: float, size: float, bold: bool = False) -> list[str]:
    """Greedy word wrap of ``text`` into lines no wider than ``width`` at ``size``."""
    out: list[str] = []
    line = ""
    for word in text.split():
        trial = f"{line} {word}" if line else word
        if line and text_width(trial, size, bold) > width:
            out.append(line)
            line = word
        else:
            line = trial
    if line:
        out.append(line)
    return out
