"""ipywidgets front ends: each builds its UI from library calls and holds no model logic.

Every explorer is a :class:`~scaleout.widgets.common.Explorer`: ``.view`` is the
widget tree to display, ``.controls`` the named inputs, ``.status`` the line
where a bad input's message appears (no traceback; the next valid input works
again). Tests set ``explorer.controls["tp"].value = 4`` and read
``explorer.result`` and ``explorer.image.value`` without a browser.
"""

from .common import Explorer, answer, figure_png

__all__ = ["Explorer", "answer", "figure_png"]
