"""Notebook 05's pipeline explorer as a lecturer sees it: served by Voila, driven in Chromium.

Moving the micro-batches slider redraws the Gantt chart and the readout, which show the
1F1B iteration, bubble and passes worked out by hand (:mod:`.known`); an interleaved
schedule shows the published bubble (p − 1)/(v·m), and with a number of micro-batches that is
not a multiple of the stages a one-line status (no traceback) that a valid value clears; the
page never shows a Python error nor logs a browser console error. Helpers and timeouts are
those of tests/browser/pages.py.
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
    text_of,
    wait_for_text,
)
from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = NOTEBOOKS / "05_pipeline_parallelism.ipynb"
M_HANDLE = ".so-ctl-m .noUi-handle"  # IntSlider: micro-batches
SCHEDULE_SELECT = ".so-ctl-schedule select"  # Dropdown

pytestmark = pytest.mark.browser


@pytest.fixture
def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
    """Notebook 05 open in Chromium, its explorer drawn once."""
    return open_explorer(serve_voila, watched_page, NOTEBOOK, "t => t.includes('bubble')")


def press_on_m(app: WatchedPage, key: str, times: int = 1) -> None:
    """Move the micro-batches slider with the keyboard (each press is one step)."""
    app.page.locator(M_HANDLE).first.focus()
    for _ in range(times):
        app.page.keyboard.press(key)


def test_micro_batches_slider_redraws_chart_and_readout(app: WatchedPage) -> None:
    assert_known(app, K.pipeline_1f1b(8, 16))  # the notebook's p = 8, m = 16
    readout = assert_control_redraws(app, lambda: press_on_m(app, "ArrowRight", 3),
                                     "Gantt chart")
    assert "bubble, simulated" in readout and "bubble, formula" in readout
    assert_known(app, K.pipeline_1f1b(8, 19))


def test_interleaving_needs_a_multiple_of_p_and_recovers(app: WatchedPage) -> None:
    page = app.page
    before = text_of(page, READOUT)
    page.locator(SCHEDULE_SELECT).first.select_option(label="interleaved 1F1B")
    # wait for the interleaved result itself: every schedule's readout names the iteration
    wait_for_text(page, READOUT, "the interleaved readout", f"t => t !== {before!r}")
    assert_known(app, K.PIPELINE_INTERLEAVED)
    readout = text_of(page, READOUT)
    press_on_m(app, "ArrowRight")  # the notebook's default m is a multiple of p; m + 1 is not
    wait_for_text(page, STATUS, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert "multiple of p" in text_of(page, STATUS)
    assert_page_clean(app)
    press_on_m(app, "ArrowLeft")
    wait_for_text(page, STATUS, "the status to clear", "t => t === ''")
    assert text_of(page, READOUT) == readout, "the same valid input should give the same readout"
    assert_page_clean(app)
