"""Notebook 09's incast explorer as a lecturer sees it: served by Voila, driven in Chromium.

Moving the senders slider redraws the chart and the readout, which show the incast's ideal time
(senders × 2 MB at 400 Gb/s, by hand: :mod:`.known`), and the chart's victim line under
receiver credits ends when 32 MB at 400 Gb/s would; a pause threshold of zero or less
shows a one-line status (no traceback) that a good value clears, restoring the same readout;
the page never shows a Python error nor logs a browser console error. The incast explorer is
the third of the notebook's explorers, so every selector is scoped to its container.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from . import known as K
from .pages import (
    NOTEBOOKS,
    assert_bad_value_recovers,
    assert_known,
    assert_page_clean,
    open_explorer,
    set_int_text,
    text_of,
    wait_for_js,
    wait_for_text,
)
from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = NOTEBOOKS / "09_clos_fabrics.ipynb"
BOX = ".so-explorer-incast"
FIGURE = f"{BOX} img.so-figure, {BOX} .so-figure img"
READOUT = f"{BOX} .so-readout-box"
STATUS = f"{BOX} .so-status"
SENDERS_HANDLE = f"{BOX} .so-ctl-senders .noUi-handle"
XOFF_INPUT = f"{BOX} .so-ctl-xoff_kb input"

pytestmark = pytest.mark.browser


def _src(app: WatchedPage) -> str:
    return app.page.locator(FIGURE).first.get_attribute("src") or ""


@pytest.fixture
def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
    """Notebook 09 open in Chromium, its incast explorer drawn once."""
    opened = open_explorer(serve_voila, watched_page, NOTEBOOK)
    wait_for_text(opened.page, READOUT, "the incast explorer's readout",
                  "t => t.includes('victim slowed')")
    return opened


def test_senders_slider_redraws_chart_and_readout(app: WatchedPage) -> None:
    page = app.page
    assert_page_clean(app)
    src, readout = _src(app), text_of(page, READOUT)
    assert src and "DCQCN" in readout and "credits" in readout
    assert_known(app, K.incast(16))
    page.locator(SENDERS_HANDLE).first.focus()
    page.keyboard.press("ArrowRight")
    wait_for_js(page, "the incast chart to be redrawn",
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e !== null && e.getAttribute('src') !== old; }", [FIGURE, src])
    wait_for_text(page, READOUT, "the readout to change", f"t => t !== {readout!r}")
    assert text_of(page, STATUS) == ""
    assert_known(app, K.incast(17))


def test_a_bad_threshold_shows_a_status_and_recovers(app: WatchedPage) -> None:
    page = app.page
    assert_bad_value_recovers(app, lambda: set_int_text(page, XOFF_INPUT, -1),
                              lambda: set_int_text(page, XOFF_INPUT, 1000),
                              "xoff_bytes must be a finite number > 0",
                              readout=READOUT, status=STATUS)
    assert_known(app, K.incast(16))
