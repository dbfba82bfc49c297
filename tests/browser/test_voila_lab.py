"""Notebook 15's sharding explorer as a lecturer sees it: Voila, driven in headless Chromium.

The whole notebook runs first (JAX on 8 CPU devices, the MPI benchmark under mpiexec). Then:
another sharding redraws the chart and the readout; a mesh the sharding cannot use shows a
one-line status (no traceback) that the former mesh clears, restoring the same readout; the
page never shows a Python error nor logs a browser console error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .pages import (
    NOTEBOOKS,
    READOUT,
    assert_bad_value_recovers,
    assert_control_redraws,
    open_explorer,
    text_of,
)
from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = NOTEBOOKS / "15_measure_it_yourself.ipynb"
SHARDING = ".so-ctl-sharding select"
SP = "sp: Megatron tensor + sequence parallel"  # the sharding menu's label
MESH = ".so-ctl-mesh select"

pytestmark = pytest.mark.browser


@pytest.fixture
def app(serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage) -> WatchedPage:
    """Notebook 15 open in Chromium, its sharding explorer drawn once (tensor parallel, 1 × 4)."""
    return open_explorer(serve_voila, watched_page, NOTEBOOK, "t => t.includes('GPT 2 × 64')")


def test_sharding_menu_and_a_mesh_it_cannot_use(app: WatchedPage) -> None:
    page = app.page
    assert "all-reduces of b·s·h" in text_of(page, READOUT)
    assert_bad_value_recovers(
        app, lambda: page.locator(MESH).first.select_option(label="2 × 4"),
        lambda: page.locator(MESH).first.select_option(label="1 × 4"),
        "splits over the model axis only")
    before = assert_control_redraws(
        app, lambda: page.locator(SHARDING).first.select_option(label=SP),
        "chart after choosing sequence parallelism")
    assert "reduce-scatter" not in before
    assert "reduce-scatters of b·s·h" in text_of(page, READOUT)
