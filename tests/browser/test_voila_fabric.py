"""Notebook 09's fabric explorer as a lecturer sees it: served by Voila, driven in Chromium.

Moving the planes slider redraws the chart and the readout, which show the switches, links,
transceivers and bisection of a radix-64 folded Clos counted by hand (:mod:`.known`); an odd
radix shows a one-line status (no traceback) that an even radix clears, restoring the same
readout; the page never shows a Python error nor logs a browser console error. Helpers are
tests/browser/pages.py's.
"""

from __future__ import annotations

import pytest

from . import known as K
from .pages import (
    READOUT,
    assert_bad_value_recovers,
    assert_control_redraws,
    assert_known,
    explorer_app,
    set_int_text,
    text_of,
)
from .voila_app import WatchedPage

PLANES_HANDLE = ".so-ctl-planes .noUi-handle"  # IntSlider: planes
RADIX_INPUT = ".so-ctl-radix input"  # BoundedIntText: radix

pytestmark = pytest.mark.browser


# notebook 09 open in Chromium, its fabric explorer drawn once
app = explorer_app("09_clos_fabrics.ipynb", "t => t.includes('bisection')")


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
    assert_bad_value_recovers(app, lambda: set_int_text(page, RADIX_INPUT, 63),
                              lambda: set_int_text(page, RADIX_INPUT, 64),
                              "radix must be an even whole number")
    assert_known(app, K.clos_planes(1))
