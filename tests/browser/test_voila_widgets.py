"""Notebook 02's memory explorer as a lecturer sees it: served by Voila, driven in Chromium.

Checks that a control change redraws the figure and the readout, that an invalid input
shows a one-line status (no traceback) and that a valid input clears it again, and that
the page never shows a Python error nor logs a browser console error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "02_gpu_memory_math.ipynb"

# CSS hooks set by scaleout.widgets.common.Explorer (the Image widget is the <img> itself)
FIGURE = "img.so-figure, .so-figure img"
READOUT = ".so-readout-box"
STATUS = ".so-status"
SLIDER_HANDLE = ".so-ctl-micro_batch .noUi-handle"  # an IntSlider
TP_INPUT = ".so-ctl-tp input"  # a BoundedIntText
BAD_TP, GOOD_TP = 7, 8  # 7 divides no head count of the default model (96 heads); 8 does

RENDER_TIMEOUT_MS = 120_000  # Voila runs the whole notebook before the widget shows
EVENT_TIMEOUT_MS = 20_000  # one control change: kernel round trip and redraw
# What Voila prints for a failing cell, with and without --show_tracebacks
ERROR_TEXTS = ("Traceback", "There was an error when executing cell")
ERROR_OUTPUTS = (
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'
)

pytestmark = pytest.mark.browser


def figure_src(page: Page) -> str:
    """The figure's current ``src`` (a new blob URL on every redraw)."""
    return page.locator(FIGURE).first.get_attribute("src") or ""


def text_of(page: Page, selector: str) -> str:
    """Visible text of the first element matching ``selector``, stripped."""
    return page.locator(selector).first.inner_text().strip()


def wait_for_js(page: Page, what: str, expression: str, arg: object) -> None:
    """Wait until ``expression`` (a JS function of ``arg``) is truthy; fail saying ``what``."""
    try:
        page.wait_for_function(expression, arg=arg, timeout=EVENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        pytest.fail(f"timed out after {EVENT_TIMEOUT_MS} ms waiting for {what}; status: "
                    f"{text_of(page, STATUS)!r}", pytrace=False)


def wait_for_text(page: Page, selector: str, what: str, predicate_js: str) -> None:
    """Wait until ``predicate_js`` (a JS function of the element's text) holds."""
    wait_for_js(
        page, what,
        "([sel, pred]) => { const e = document.querySelector(sel);"
        " return e !== null && eval(pred)(e.innerText.trim()); }",
        [selector, predicate_js],
    )


def set_int_text(page: Page, selector: str, value: int) -> None:
    """Type a number into an IntText-like control and commit it (Enter)."""
    box = page.locator(selector).first
    box.fill(str(value))
    box.press("Enter")


def assert_page_clean(app: WatchedPage) -> None:
    """No Python traceback or error output on the page, no console error, no page error."""
    body = app.page.locator("body").inner_text()
    for text in ERROR_TEXTS:
        at = body.find(text)
        assert at < 0, f"the page shows a Python error:\n{body[max(at - 300, 0):at + 2000]}"
    errors = app.page.locator(ERROR_OUTPUTS).all_inner_texts()
    assert not errors, "stderr/error output on the page:\n" + "\n---\n".join(errors)
    assert not app.problems(), "the browser complained:\n" + "\n".join(app.problems())


@pytest.fixture
def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
    """Notebook 02 open in Chromium, its explorer drawn once."""
    server = serve_voila(NOTEBOOK)
    page = watched_page.page
    try:
        page.goto(server.url, timeout=RENDER_TIMEOUT_MS)
        page.locator(FIGURE).first.wait_for(state="visible", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_function(
            "sel => { const e = document.querySelector(sel);"
            " return e !== null && e.innerText.trim() !== ''; }",
            arg=READOUT, timeout=EVENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        body = page.locator("body").inner_text() if page.locator("body").count() else ""
        pytest.fail(f"the explorer of {NOTEBOOK.name} did not render.\n--- page text ---\n"
                    f"{body[-3000:]}\n--- browser ---\n" + "\n".join(watched_page.problems())
                    + f"\n--- voila log ---\n{server.log()}", pytrace=False)
    return watched_page


def test_control_change_redraws_figure_and_readout(app: WatchedPage) -> None:
    page = app.page
    assert_page_clean(app)
    src, readout = figure_src(page), text_of(page, READOUT)
    assert src, "the figure has no src"
    page.locator(SLIDER_HANDLE).first.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_for_js(page, "the figure to be redrawn",
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e !== null && e.getAttribute('src') !== old; }", [FIGURE, src])
    wait_for_text(page, READOUT, "the readout to change", f"t => t !== {readout!r}")
    assert text_of(page, STATUS) == ""
    assert_page_clean(app)


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
    assert_page_clean(app)
