"""Notebook 15's sharding explorer as a lecturer sees it: Voila, driven in headless Chromium.

The whole notebook runs first (JAX on 8 CPU devices, the MPI benchmark under mpiexec). Then:
tensor parallelism shows Megatron's four all-reduces of b·s·h per layer, sized by hand
(:mod:`.known`); another sharding redraws the chart and the readout, and sequence parallelism
shows a reduce-scatter and an all-gather of b·s·h in place of each all-reduce; a mesh the
sharding cannot use shows a one-line status (no traceback) that the former mesh clears,
restoring the same readout; the page never shows a Python error nor logs a browser console
error.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from . import known as K
from .pages import (
    NOTEBOOKS,
    READOUT,
    assert_bad_value_recovers,
    assert_control_redraws,
    assert_known,
    open_explorer,
    text_of,
)
from .voila_app import VoilaServer, WatchedPage

NOTEBOOK = NOTEBOOKS / "15_measure_it_yourself.ipynb"
SHARDING = ".so-ctl-sharding select"
SP = "sp: Megatron tensor + sequence parallel"  # the sharding menu's label
MESH = ".so-ctl-mesh select"

pytestmark = pytest.mark.browser


# The notebook's layouts compiled once before Voila starts, into JAX's persistent cache that
# the kernel reads: on a busy machine a first compile of all of them can outlast the page's
# render timeout, which is not what this test is about.
WARM_UP = """
from scaleout.lab import devices, engine
from scaleout.lab.model import LabModel
devices.use_devices(8)
dense, moe = LabModel(), LabModel(n_experts=8)
for s, mesh in [("dp", (8, 1)), ("zero1", (8, 1)), ("zero2", (8, 1)), ("zero3", (8, 1)),
                ("tp", (1, 4)), ("sp", (1, 4)), ("tp_dp", (2, 4)), ("tp", (1, 2))]:
    engine.compile_step(dense, s, mesh)
engine.compile_step(moe, "ep", (8, 1))
engine.reference_losses(dense); engine.reference_losses(moe)
"""


@pytest.fixture(scope="module")
def warm_cache() -> None:
    subprocess.run([sys.executable, "-c", WARM_UP], check=True, timeout=900,
                   capture_output=True)


@pytest.fixture
def app(warm_cache: None, serve_voila: Callable[[Path], VoilaServer],
        watched_page: WatchedPage) -> WatchedPage:
    """Notebook 15 open in Chromium, its sharding explorer drawn once (tensor parallel, 1 × 4)."""
    return open_explorer(serve_voila, watched_page, NOTEBOOK, "t => t.includes('GPT 2 × 64')")


def test_sharding_menu_and_a_mesh_it_cannot_use(app: WatchedPage) -> None:
    page = app.page
    assert "all-reduces of b·s·h" in text_of(page, READOUT)
    assert_known(app, K.LAB_TP)
    assert_bad_value_recovers(
        app, lambda: page.locator(MESH).first.select_option(label="2 × 4"),
        lambda: page.locator(MESH).first.select_option(label="1 × 4"),
        "splits over the model axis only")
    before = assert_control_redraws(
        app, lambda: page.locator(SHARDING).first.select_option(label=SP),
        "chart after choosing sequence parallelism")
    assert "reduce-scatter" not in before
    assert "reduce-scatters of b·s·h" in text_of(page, READOUT)
    assert_known(app, K.LAB_SP)
