"""Notebook 09's fabric explorer as a lecturer sees it: served by Voila, driven in Chromium.

Moving the planes slider redraws the chart and the readout, which show the switches, links,
transceivers and bisection of a radix-64 folded Clos counted by hand (:mod:`.known`); an odd
radix shows a one-line status (no traceback) that an even radix clears, restoring the same
readout; the page never shows a Python error nor logs a browser console error. Helpers are
tests/browser/pages.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from . import known as K
from .pages import (
    NOTEBOOKS,
    READOUT,
    STATUS,
    assert_control_redraws,
    assert_known,
    assert_page_clean,
    open_explorer,
    set_int_text,
    text_of,
    wait_for_text,
)
from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = NOTEBOOKS / "09_clos_fabrics.ipynb"
PLANES_HANDLE = ".so-ctl-planes .noUi-handle"  # IntSlider: planes
RADIX_INPUT = ".so-ctl-radix input"  # BoundedIntText: radix

pytestmark = pytest.mark.browser


@pytest.fixture
def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
    """Notebook 09 open in Chromium, its fabric explorer drawn once."""
    return open_explorer(serve_voila, watched_page, NOTEBOOK, "t => t.includes('bisection')")


def test_planes_slider_redraws_chart_and_readout(app: WatchedPage) -> None:
    def add_a_plane() -> None:
        app.page.locator(PLANES_HANDLE).first.focus()
        app.page.keyboard.press("ArrowRight")

    assert_known(app, K.clos_planes(1))
    before = assert_control_redraws(app, add_a_plane, "fabric chart")
    assert "1 × 400G" in before
    assert "2 × 400G = 800 Gb/s" in text_of(app.page, READOUT)
    assert_known(app, K.clos_planes(2))


def test_odd_radix_shows_a_status_and_recovers(app: WatchedPage) -> None:
    page = app.page
    readout = text_of(page, READOUT)
    set_int_text(page, RADIX_INPUT, 63)
    wait_for_text(page, STATUS, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert "radix must be an even whole number" in text_of(page, STATUS)
    assert_page_clean(app)
    set_int_text(page, RADIX_INPUT, 64)
    wait_for_text(page, STATUS, "the status to clear", "t => t === ''")
    assert text_of(page, READOUT) == readout, "the same valid input should give the same readout"
    assert_known(app, K.clos_planes(1))
