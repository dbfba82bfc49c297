"""Rendering shared by the explorers and the notebooks: drawing and formatting, no model logic.

==========  ==========================================================
``table``   :func:`html_table`, the workbook's HTML table (escaped cells,
            numbers formatted by :mod:`scaleout.formatting`)
``text``    :func:`paragraphs`, multi-line explanations as HTML paragraphs
==========  ==========================================================

Figures are drawn by :mod:`scaleout.plotting` (matplotlib and SVG figures) and
:mod:`scaleout.svgchart` (tiny SVG charts for fast widget redraws).
"""

from __future__ import annotations

from .table import html_table
from .text import paragraphs

__all__ = ["html_table", "paragraphs"]
