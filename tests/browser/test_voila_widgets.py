"""Notebook 02's memory explorer as a lecturer sees it: served by Voila, driven in Chromium.

Checks that a control change redraws the figure and the readout and that both show the
activations Korthikanti et al.'s Table 2 gives for the new micro-batch (worked out by hand in
:mod:`.known`), that an invalid input shows a one-line status (no traceback) and that a valid
input clears it again, back to the known figures, and that the page never shows a Python error
nor logs a browser console error.
"""

from __future__ import annotations

import pytest

from . import known as K
from .pages import (
    READOUT,
    STATUS,
    assert_control_redraws,
    assert_known,
    assert_page_clean,
    explorer_app,
    set_int_text,
    text_of,
    wait_for_text,
)
from .voila_app import WatchedPage

SLIDER_HANDLE = ".so-ctl-micro_batch .noUi-handle"  # an IntSlider
TP_INPUT = ".so-ctl-tp input"  # a BoundedIntText
BAD_TP, GOOD_TP = 7, 8  # 7 divides no head count of the default model (96 heads); 8 does

pytestmark = pytest.mark.browser


# notebook 02 open in Chromium, its explorer drawn once
app = explorer_app("02_gpu_memory_math.ipynb")


def test_control_change_redraws_figure_and_readout(app: WatchedPage) -> None:
    page = app.page

    def move() -> None:
        page.locator(SLIDER_HANDLE).first.focus()
        for _ in range(3):
            page.keyboard.press("ArrowRight")

    assert_known(app, K.memory_micro_batch(1))
    assert_control_redraws(app, move, "figure")
    assert_known(app, K.memory_micro_batch(4))


def test_invalid_input_shows_status_and_valid_input_clears_it(app: WatchedPage) -> None:
    page = app.page
    readout = text_of(page, READOUT)
    set_int_text(page, TP_INPUT, BAD_TP)
    wait_for_text(page, STATUS, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert "tp" in text_of(page, STATUS).lower(), "the message should name the bad control"
    assert_page_clean(app)
    set_int_text(page, TP_INPUT, GOOD_TP)
    wait_for_text(page, STATUS, "the status to clear", "t => t === ''")
    assert text_of(page, READOUT) == readout, "the same valid input should give the same readout"
    assert_known(app, K.memory_micro_batch(1))
