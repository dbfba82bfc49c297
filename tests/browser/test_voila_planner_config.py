"""Notebook 08's planner explorer loads a pasted config.json and writes the best plan out.

Served by Voila, driven in headless Chromium: the text of the shipped Llama-3.1-8B
``config.json`` is pasted into the "load a config" box and loaded; the readout must then
name that model with the parameter count of its model card (8.03B, data/configs/SOURCES.md),
the model menu must show it, and the "copy as" box must hold the Megatron-LM flags of the
best plan the readout shows, and the model's shape as the file states it. A malformed
config shows the library's message in the status line and leaves the page as it was. The
page must fit at 1400 and 1024 px with the two new controls filled in, and never show a
Python error or log a browser console error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from .fit import overflow_problems
from .pages import (
    NOTEBOOKS,
    READOUT,
    STATUS,
    assert_page_clean,
    figure_src,
    open_explorer,
    text_of,
    wait_for_js,
    wait_for_redraw,
    wait_for_text,
)
from .voila_app import VoilaServer, WatchedPage

pytestmark = pytest.mark.browser

NOTEBOOK = NOTEBOOKS / "08_3d_parallelism_planner.ipynb"
CONFIG = Path(__file__).resolve().parents[2] / "data" / "configs" / "Llama-3.1-8B.config.json"
PUBLISHED = "8.03 billion"  # Meta's model card: 8.03B parameters (data/configs/SOURCES.md)
TEXT_BOX = ".so-config-text textarea"
LOAD = ".so-config-load"
EXPORT = "textarea.so-export-text"


def export_text(page) -> str:
    """The text of the "copy as" box (a read-only textarea)."""
    return page.locator(EXPORT).first.input_value()


def wait_for_export(page, what: str, needle: str) -> None:
    """Wait until the "copy as" box holds ``needle``."""
    wait_for_js(page, what, "([sel, text]) => { const e = document.querySelector(sel);"
                " return e !== null && e.value.includes(text); }", [EXPORT, needle])


def assert_fits(app: WatchedPage, when: str) -> None:
    problems = overflow_problems(app.page)
    assert not problems, f"{when}: text does not fit its box:\n" + "\n".join(problems)
    # the export box itself: no line scrolls sideways (it wraps), and it stays in the window
    wide = app.page.evaluate(
        """(sel) => { const t = document.querySelector(sel);
            return [t.scrollWidth - t.clientWidth, t.getBoundingClientRect().right,
                    document.documentElement.clientWidth]; }""", EXPORT)
    assert wide[0] <= 1 and wide[1] <= wide[2] + 1, f"{when}: the export box overflows: {wide}"
    assert_page_clean(app)


def test_a_pasted_config_becomes_the_model_and_its_flags_can_be_copied(
    serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage
) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOK)
    page = app.page
    assert "--tensor-model-parallel-size" in export_text(page)  # Megatron-LM by default
    text = CONFIG.read_text()
    shape = json.loads(text)

    # a malformed config: the library's message, and nothing else changes
    readout = text_of(page, READOUT)
    page.locator(TEXT_BOX).first.fill(text[: len(text) // 2])
    page.locator(LOAD).first.click()
    wait_for_text(page, STATUS, "a ⚠ status message", "t => t.startsWith('⚠')")
    assert "config not loaded" in text_of(page, STATUS) and "JSON" in text_of(page, STATUS)
    assert text_of(page, READOUT) == readout
    assert_page_clean(app)

    # the whole file: the model changes to it
    src = figure_src(page)
    page.locator(TEXT_BOX).first.fill(text)
    page.locator(LOAD).first.click()
    wait_for_redraw(page, src, "the chart to be redrawn for the loaded model")
    wait_for_text(page, READOUT, "the readout to name the loaded config",
                  "t => t.includes('Model from a config.json')")
    shown = text_of(page, READOUT)
    assert f"{PUBLISHED} parameters" in shown, shown[:400]
    assert page.locator(".so-ctl-model select").first.input_value().startswith("config: ")
    assert "loaded config:" in text_of(page, STATUS)

    # the export box holds the plan the readout shows, and the file's shape
    best = re.search(r"Best: (.*?): ", shown).group(1)
    degrees = dict(re.findall(r"\b(TP|PP)(\d+)", best))
    wait_for_export(page, "the export box to follow the loaded model",
                    f"--num-layers {shape['num_hidden_layers']}\n")
    exported = export_text(page)
    assert f"--tensor-model-parallel-size {degrees['TP']}\n" in exported, exported
    assert f"--pipeline-model-parallel-size {degrees['PP']}\n" in exported, exported
    assert f"--hidden-size {shape['hidden_size']}\n" in exported
    assert f"--num-query-groups {shape['num_key_value_heads']}\n" in exported

    # torchtitan's terms for the same plan
    page.locator(".so-export-choice button", has_text="torchtitan").first.click()
    wait_for_export(page, "the export box in torchtitan's terms", "torchtitan")
    titan = export_text(page)
    # the notebook's default framework preset may plan what torchtitan cannot run: then the
    # box says so in one sentence, naming the setting
    assert (f"tensor_parallel_degree = {degrees['TP']}\n" in titan
            or (titan.startswith("torchtitan cannot run ") and titan.count("\n") == 0)), titan

    for width in (1400, 1024):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)
        assert_fits(app, f"{width} px, a config loaded")
