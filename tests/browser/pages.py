"""Helpers for the browser tests: open a notebook's explorer in Voila, drive it, check the page.

Selectors are the CSS hooks that :class:`scaleout.widgets.common.Explorer` sets.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .voila_app import VoilaServer, WatchedPage

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# CSS hooks set by scaleout.widgets.common.Explorer (the Image widget is the <img> itself)
FIGURE = "img.so-figure, .so-figure img"
READOUT = ".so-readout-box"
STATUS = ".so-status"

RENDER_TIMEOUT_MS = 120_000  # Voila runs the whole notebook before the widget shows
EVENT_TIMEOUT_MS = 20_000  # one control change: kernel round trip and redraw
# What Voila prints for a failing cell, with and without --show_tracebacks
ERROR_TEXTS = ("Traceback", "There was an error when executing cell")
ERROR_OUTPUTS = (
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]'
)



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


def wait_for_redraw(page: Page, old_src: str, what: str = "the figure to be redrawn") -> None:
    """Wait until the figure's ``src`` differs from ``old_src`` (a new image arrived)."""
    wait_for_js(page, what,
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e !== null && e.getAttribute('src') !== old; }", [FIGURE, old_src])


def assert_control_redraws(app: WatchedPage, move: Callable[[], None], figure: str) -> str:
    """Snapshot figure and readout, ``move`` a control, and wait until both have changed.

    Checks the page is clean before and after and the status line stays empty; returns the
    readout as it was before the move.
    """
    page = app.page
    assert_page_clean(app)
    src, readout = figure_src(page), text_of(page, READOUT)
    assert src, f"the {figure} has no src"
    move()
    wait_for_redraw(page, src, f"the {figure} to be redrawn")
    wait_for_text(page, READOUT, "the readout to change", f"t => t !== {readout!r}")
    assert text_of(page, STATUS) == ""
    assert_page_clean(app)
    return readout


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


def open_explorer(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage,
                  notebook: Path, ready_js: str = "t => t !== ''") -> WatchedPage:
    """Serve ``notebook`` with Voila, open it, and wait until its explorer has drawn once.

    ``ready_js`` is a JS predicate on the readout's text that says the explorer is ready.
    Fails (never skips) with the page text, the browser's complaints and Voila's log.
    """
    server = serve_voila(notebook)
    page = watched_page.page
    try:
        page.goto(server.url, timeout=RENDER_TIMEOUT_MS)
        page.locator(FIGURE).first.wait_for(state="visible", timeout=RENDER_TIMEOUT_MS)
        page.wait_for_function(
            "([sel, pred]) => { const e = document.querySelector(sel);"
            " return e !== null && eval(pred)(e.innerText.trim()); }",
            arg=[READOUT, ready_js], timeout=EVENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        body = page.locator("body").inner_text() if page.locator("body").count() else ""
        pytest.fail(f"the explorer of {notebook.name} did not render.\n--- page text ---\n"
                    f"{body[-3000:]}\n--- browser ---\n" + "\n".join(watched_page.problems())
                    + f"\n--- voila log ---\n{server.log()}", pytrace=False)
    return watched_page


def assert_bad_value_recovers(app: WatchedPage, set_bad: Callable[[], None],
                              set_good: Callable[[], None], message: str) -> None:
    """``set_bad`` shows a ⚠ status containing ``message`` (page clean); ``set_good`` clears it.

    The readout after ``set_good`` must equal the readout before ``set_bad``: the same valid
    input gives the same result, and a bad one leaves no trace.
    """
    page = app.page
    readout = text_of(page, READOUT)
    set_bad()
    wait_for_text(page, STATUS, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert message in text_of(page, STATUS), text_of(page, STATUS)
    assert_page_clean(app)
    set_good()
    wait_for_text(page, STATUS, "the status to clear", "t => t === ''")
    assert text_of(page, READOUT) == readout, "the same valid input should give the same readout"
    assert_page_clean(app)
