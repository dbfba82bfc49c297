"""The ring all-reduce stepper of notebook 07 in a real browser: it steps, and its picture fits.

Served by Voila, driven in headless Chromium at 1400 and at 1024 px wide: moving the step
slider redraws the picture (the step bar and the readout follow), the inline SVG is no wider
than its container, and every text of the drawing lies inside its viewBox as the browser
measures it. After two steps of a ring on n = 4 GPUs, worked out by hand: each GPU has sent
2 of its 4 chunks (0.5 of the buffer) of the 2(n − 1)/n = 1.5 it sends in all, the ring is at
step 2 of 2(n − 1) = 6, and every one of the 4 chunks has one GPU holding the sum of 3 GPUs'
gradients (its own and the two received), none yet the full sum.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .pages import NOTEBOOKS, Chart, assert_page_clean, open_explorer, wait_for_text
from .voila_app import VoilaServer, WatchedPage

pytestmark = pytest.mark.browser

STEP_HANDLE = ".so-stepper-step .noUi-handle"
SVG = ".so-stepper-figure svg"
READOUT = ".so-stepper-readout"

# every <text> of the stepper's SVG whose box (as the browser lays it out) leaves the viewBox
TEXT_OUTSIDE_JS = """(sel) => {
  const svg = document.querySelector(sel); const vb = svg.viewBox.baseVal; const out = [];
  for (const t of svg.querySelectorAll('text')) { const b = t.getBBox();
    if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5
        || b.y + b.height > vb.y + vb.height + 0.5) out.push(t.textContent); }
  return out; }"""


def test_ring_stepper_steps_and_fits(serve_voila: Callable[[Path], VoilaServer],
                                     watched_page: WatchedPage) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOKS / "07_all_reduce_cost.ipynb")
    page = app.page
    page.locator(SVG).first.wait_for(state="visible")
    for width in (1400, 1024):
        page.set_viewport_size({"width": width, "height": 1000})
        before = page.locator(READOUT).first.inner_text().strip()
        page.locator(STEP_HANDLE).first.focus()
        page.keyboard.press("ArrowRight")
        wait_for_text(page, READOUT, "the stepper's readout to change",
                      f"t => t !== {before!r}")
        svg_box = page.locator(SVG).first.bounding_box()
        container = page.locator(".so-stepper-figure").first.bounding_box()
        assert svg_box and container and svg_box["width"] <= container["width"] + 1
        assert page.evaluate(TEXT_OUTSIDE_JS, SVG) == []
    # two steps from the start (one at each width): the reduce-scatter's third and last step
    assert "Reduce-scatter, step 3 of 3" in (page.locator(SVG).first.text_content() or "")
    n, steps = 4, 2
    assert (f"each GPU has sent {steps / n:.3g} × the buffer so far, of {2 * (n - 1) / n:.3g} "
            "in all") in page.locator(READOUT).first.inner_text()
    chart = Chart(page.locator(SVG).first.evaluate("e => e.outerHTML"))
    assert f"Ring all-reduce on {n} GPUs, step {steps} of {2 * (n - 1)}" in chart.texts
    assert chart.texts.count(f"sum of {steps + 1}") == n, chart.texts
    assert chart.texts.count("full sum") == 1, "only the legend says 'full sum' yet"
    assert_page_clean(app)
