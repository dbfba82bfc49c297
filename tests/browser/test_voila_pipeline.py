"""Notebook 05's pipeline explorer as a lecturer sees it: served by Voila, driven in Chromium.

Moving the micro-batches slider redraws the Gantt chart and the readout, which show the
1F1B iteration, bubble and passes worked out by hand (:mod:`.known`); an interleaved
schedule shows the published bubble (p − 1)/(v·m), and with a number of micro-batches that is
not a multiple of the stages a one-line status (no traceback) that a valid value clears; the
page never shows a Python error nor logs a browser console error. Helpers and timeouts are
those of tests/browser/pages.py.
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
    text_of,
    wait_for_text,
)
from .voila_app import WatchedPage

M_HANDLE = ".so-ctl-m .noUi-handle"  # IntSlider: micro-batches
SCHEDULE_SELECT = ".so-ctl-schedule select"  # Dropdown

pytestmark = pytest.mark.browser


# notebook 05 open in Chromium, its explorer drawn once
app = explorer_app("05_pipeline_parallelism.ipynb", "t => t.includes('bubble')")


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
    # the notebook's default m is a multiple of p; m + 1 is not
    assert_bad_value_recovers(app, lambda: press_on_m(app, "ArrowRight"),
                              lambda: press_on_m(app, "ArrowLeft"), "multiple of p")
