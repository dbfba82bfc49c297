"""HTML tables for explorers' readouts and notebooks' tables (rendering only, no model logic)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from .. import formatting

__all__ = ["html_table"]


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *,
               align: Sequence[str] | None = None,
               col_styles: Sequence[str] | None = None) -> str:
    """An HTML table (cells escaped) for readouts and notebook tables.

    ``align`` gives ``"left"`` or ``"right"`` per column (default: text left,
    numbers right). Right-aligned cells hold numbers and never wrap, nor does a single
    word (``endpoint-leaf`` stays whole); other cells and headers wrap between words
    (Korean too: ``word-break: keep-all`` keeps a word whole). ``col_styles`` adds CSS per
    column (e.g. ``"min-width:16em"``); a header of empty strings draws no header row (a
    key-value table). Numbers that are not already text are formatted by
    :func:`scaleout.formatting.sig` (``int`` with separators).
    """
    def text(value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return str(value)
        return formatting.count(value) if isinstance(value, int) else formatting.sig(value)

    def cell(tag: str, value: Any, a: str, extra: str) -> str:
        shown = text(value)
        one_word = shown.strip() and not any(ch.isspace() for ch in shown.strip())
        wrap = ("white-space:nowrap" if (a == "right" and tag == "td") or one_word
                else "word-break:keep-all")
        return (f'<{tag} style="text-align:{a};padding:3px 9px;vertical-align:top;{wrap}'
                f'{";" + extra if extra else ""}">{html.escape(shown)}</{tag}>')

    if align is None:
        first = rows[0] if rows else [""] * len(header)
        align = ["right" if isinstance(v, int | float) else "left" for v in first]
    styles = list(col_styles) if col_styles is not None else [""] * len(header)
    head = "".join(cell("th", h, a, st) for h, a, st in zip(header, align, styles, strict=True))
    body = "".join(
        "<tr>" + "".join(cell("td", v, a, st) for v, a, st in zip(r, align, styles, strict=True))
        + "</tr>" for r in rows
    )
    head_row = f"<tr>{head}</tr>" if any(str(h).strip() for h in header) else ""
    return f'<table class="so-table" style="border-collapse:collapse">{head_row}{body}</table>'
