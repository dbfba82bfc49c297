"""The explorers of notebooks 13 (experts) and 14 (context parallelism, the roofline) in a real
browser: served by Voila, driven in headless Chromium. Each main control redraws the figure and
the readout, and one move per explorer sets a value whose readout is worked out by hand from
the papers and datasheets (:mod:`.known`): DeepSeek-V3's experts and their state per GPU at
EP 32, and no network traffic once the EP group fits in the domain; Llama 3 405B's
activations per GPU (Korthikanti et al.'s accounting for its shape, split by TP and CP), on the
readout and on the chart's lines;
H100's FP8 peak and ridge points. A bad value (an EP size that does not divide the experts, a
CP size above the key/value heads, EP on a dense model) shows a one-line status, the widget
keeps working, and a good value clears it. No traceback on the page, no console error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

from . import known as K
from .pages import (
    FIGURE,
    NOTEBOOKS,
    READOUT,
    STATUS,
    assert_bad_value_recovers,
    assert_control_redraws,
    assert_known,
    assert_page_clean,
    open_explorer,
    set_int_text,
    wait_for_js,
)
from .voila_app import VoilaServer, WatchedPage

pytestmark = pytest.mark.browser


def select(page: Page, name: str, label: str) -> None:
    page.locator(f".so-ctl-{name} select").first.select_option(label=label)


def test_moe_explorer_controls_and_bad_ep(serve_voila: Callable[[Path], VoilaServer],
                                          watched_page: WatchedPage) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOKS / "13_mixture_of_experts.ipynb")
    page = app.page
    assert_control_redraws(app, lambda: select(page, "network", "RoCE v2 400GbE"),
                           "figure after the network menu")
    assert_control_redraws(app, lambda: select(page, "ep", "32"), "figure after the EP menu")
    assert_known(app, K.moe_ep(32))
    assert_control_redraws(app, lambda: select(page, "domain", "72"),
                           "figure after the domain menu")
    assert_known(app, K.MOE_EP32_IN_NVL72)
    assert_bad_value_recovers(
        app, lambda: set_int_text(page, ".so-ctl-experts input", 100),
        lambda: set_int_text(page, ".so-ctl-experts input", 256), "must divide experts")
    assert_known(app, K.moe_ep(32))


def _nth(page: Page, selector: str, i: int):
    return page.locator(selector).nth(i)


def test_context_explorer_controls_and_bad_cp(serve_voila: Callable[[Path], VoilaServer],
                                              watched_page: WatchedPage) -> None:
    app = open_explorer(serve_voila, watched_page,
                        NOTEBOOKS / "14_long_context_and_precision.ipynb")
    page = app.page
    assert_known(app, K.context_activations(131072, 16))
    assert_control_redraws(app, lambda: select(page, "cp", "8"), "figure after the CP menu")
    assert_known(app, K.context_activations(131072, 8))
    assert_control_redraws(app, lambda: select(page, "seq_len", "32768"),
                           "figure after the sequence menu")
    assert_known(app, K.context_activations(32768, 8))
    assert_control_redraws(app, lambda: select(page, "cp", "16"), "figure after CP 16")
    assert_known(app, K.context_activations(32768, 16))
    assert_bad_value_recovers(app, lambda: select(page, "variant", "all-to-all"),
                              lambda: select(page, "variant", "ring"),
                              "must divide key/value heads")


def test_roofline_explorer_redraws_and_refuses_ep_on_a_dense_model(
        serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> None:
    app = open_explorer(serve_voila, watched_page,
                        NOTEBOOKS / "14_long_context_and_precision.ipynb")
    page = app.page
    figure, readout, status = (_nth(page, FIGURE, 1), _nth(page, READOUT, 1),
                               _nth(page, STATUS, 1))
    figure.wait_for(state="visible")
    assert_known(app, K.roofline_h100("bf16", 989))
    for name, label in (("fmt", "fp8"), ("micro_batches", "64")):
        src, text = figure.get_attribute("src"), readout.inner_text()
        select(page, name, label)
        wait_for_js(page, f"the roofline to redraw after {name}",
                    "([sel, old]) => document.querySelectorAll(sel)[1].getAttribute('src') !== old",
                    [FIGURE, src])
        wait_for_js(page, f"the roofline readout to change after {name}",
                    "([sel, old]) => document.querySelectorAll(sel)[1].innerText.trim() !== old",
                    [READOUT, text.strip()])
        assert status.inner_text().strip() == ""
        assert_known(app, K.roofline_h100("fp8", 1979))
    select(page, "ep", "16")
    wait_for_js(page, "a ⚠ status in the roofline explorer",
                "sel => document.querySelectorAll(sel)[1].innerText.trim().startsWith('⚠')",
                STATUS)
    assert "has no experts" in status.inner_text()
    assert_page_clean(app)
    select(page, "ep", "1")
    wait_for_js(page, "the roofline status to clear",
                "sel => document.querySelectorAll(sel)[1].innerText.trim() === ''", STATUS)
    assert_page_clean(app)
