"""Notebook 11's checkpoint-interval explorer as a lecturer sees it: Voila, driven in Chromium.

The readout shows Llama 3's MTBF (419 interruptions in 54 days on 16,384 GPUs), its
checkpoint's write time at 2 TB/s and Young's √(2δM), all worked out by hand (:mod:`.known`).
Moving the interval slider redraws the goodput chart and the readout; an empty cluster
(0 GPUs) and a typed MTBF of zero each show a one-line status (no traceback) that a valid
value clears, restoring the same readout; half the GPUs double the MTBF; a typed MTBF of a day
with a 1 TB checkpoint gives one failure a day and Young's interval √(2 × 0.5 s × 24 h); the
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
    set_int_text,
    text_of,
    wait_for_text,
)
from .voila_app import WatchedPage

INTERVAL_HANDLE = ".so-ctl-interval_min .noUi-handle"  # FloatLogSlider: minutes
GPUS_INPUT = ".so-ctl-n_gpus input"  # BoundedIntText
MTBF_FROM_SELECT = ".so-ctl-mtbf_from select"  # Dropdown
MTBF_INPUT = ".so-ctl-mtbf_h input"  # FloatText, hours
MODEL_SELECT = ".so-ctl-model select"  # Dropdown: a model, or the typed checkpoint size

pytestmark = pytest.mark.browser


# notebook 11 open in Chromium, its explorer drawn once
app = explorer_app("11_fault_tolerance.ipynb", "t => t.includes('goodput at')")


def test_interval_slider_redraws_chart_and_readout(app: WatchedPage) -> None:
    def longer_interval() -> None:
        app.page.locator(INTERVAL_HANDLE).first.focus()
        for _ in range(10):
            app.page.keyboard.press("ArrowRight")

    assert_known(app, K.llama3_mtbf(16384))
    before = assert_control_redraws(app, longer_interval, "goodput chart")
    after = text_of(app.page, READOUT)
    assert "Daly" in before and "failures a day" in before
    # the interval moved away from the optimum; the optimum itself did not change
    assert before.split("goodput at τ")[0] == after.split("goodput at τ")[0]
    assert_known(app, K.llama3_mtbf(16384))


def test_empty_cluster_shows_a_status_and_recovers(app: WatchedPage) -> None:
    page = app.page
    gpus = int(page.locator(GPUS_INPUT).first.input_value())
    assert_bad_value_recovers(app, lambda: set_int_text(page, GPUS_INPUT, 0),
                              lambda: set_int_text(page, GPUS_INPUT, gpus), "an empty cluster")
    assert_known(app, K.llama3_mtbf(16384))
    set_int_text(page, GPUS_INPUT, 8192)  # half the GPUs, half the failures
    assert_known(app, K.llama3_mtbf(8192))


def test_zero_mtbf_shows_a_status_and_a_valid_mtbf_clears_it(app: WatchedPage) -> None:
    page = app.page
    before = text_of(page, READOUT)
    page.locator(MTBF_FROM_SELECT).first.select_option(label="MTBF (hours)")
    wait_for_text(page, READOUT, "the typed-MTBF readout", f"t => t !== {before!r}")
    assert_bad_value_recovers(app, lambda: set_int_text(page, MTBF_INPUT, 0),
                              lambda: set_int_text(page, MTBF_INPUT, 3),
                              "MTBF (hours) must be a finite number > 0")
    set_int_text(page, MTBF_INPUT, 24)
    wait_for_text(page, READOUT, "the readout for a 24-hour MTBF", "t => t.includes('24 h')")
    page.locator(MODEL_SELECT).first.select_option(label="(checkpoint size below)")  # 1 TB
    assert_known(app, K.CHECKPOINT_1TB_DAILY)
