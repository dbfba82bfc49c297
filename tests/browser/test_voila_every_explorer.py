"""Every notebook's explorer in a real browser: served by Voila, driven in headless Chromium.

For each widget notebook without a dedicated browser test of its own (02, 05, 09 and 11 have
one beside this file), the page loads, each main control listed below is moved in turn, the
figure and the readout change after every move, the status line stays empty, and the page
never shows a Python traceback nor logs a browser console error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

from .pages import NOTEBOOKS, assert_control_redraws, open_explorer, set_int_text
from .voila_app import VoilaServer, WatchedPage

pytestmark = pytest.mark.browser


def select(name: str, label: str) -> Callable[[Page], None]:
    """Choose ``label`` in the Dropdown control ``name``."""
    return lambda page: page.locator(f".so-ctl-{name} select").first.select_option(label=label)


def slide(name: str, presses: int = 1, key: str = "ArrowRight") -> Callable[[Page], None]:
    """Move the slider control ``name`` by ``presses`` steps with the keyboard."""
    def move(page: Page) -> None:
        page.locator(f".so-ctl-{name} .noUi-handle").first.focus()
        for _ in range(presses):
            page.keyboard.press(key)
    return move


def tick(name: str) -> Callable[[Page], None]:
    """Toggle the Checkbox control ``name``."""
    return lambda page: page.locator(f".so-ctl-{name} input[type=checkbox]").first.click()


def type_text(name: str, text: str) -> Callable[[Page], None]:
    """Type ``text`` into the Text/Combobox control ``name`` and commit it (Enter)."""
    def move(page: Page) -> None:
        box = page.locator(f".so-ctl-{name} input").first
        box.fill(text)
        box.press("Enter")
    return move


def number(name: str, value: float) -> Callable[[Page], None]:
    """Type ``value`` into the number box ``name`` and commit it."""
    return lambda page: set_int_text(page, f".so-ctl-{name} input", value)


#: notebook -> the main controls moved, in order (each move must redraw)
MOVES: dict[str, list[tuple[str, Callable[[Page], None]]]] = {
    "00_start_here.ipynb": [
        ("search box", type_text("query", "parallelism")),
        ("notebook menu", select("notebook", "04 · Tensor parallelism")),
    ],
    "01_scale_up_limits.ipynb": [
        ("recipe menu", select("recipe", "megatron-bf16")),
        ("model box", type_text("model", "llama3-70b")),
    ],
    "03_data_parallelism.ipynb": [
        ("GPU-count slider", slide("n_gpus", 2)),
        ("link menu", select("link", "RoCE v2 400GbE")),
        ("overlap tick box", tick("overlap")),
    ],
    "04_tensor_parallelism.ipynb": [
        ("t menu", select("t", "2")),
        ("micro-batch slider", slide("micro_batch", 1)),
        ("sequence-length menu", select("seq_len", "4096")),
    ],
    "06_zero_stages.ipynb": [
        ("ZeRO stage menu", select("zero_stage", "1")),
        ("data-parallel slider", slide("dp", 1)),
    ],
    "07_all_reduce_cost.ipynb": [
        ("message-size slider", slide("size_bytes", 2, "ArrowLeft")),
        ("link menu", select("link", "RoCE v2 400GbE")),
        ("collective menu", select("op", "broadcast")),
    ],
    "08_3d_parallelism_planner.ipynb": [
        ("GPUs-per-node menu", select("gpus_per_node", "4")),
        ("GPU-count menu", select("n_gpus", "1536")),
        ("network menu", select("network", "RoCE v2 400GbE")),
    ],
    "10_optical_modules.ipynb": [
        ("technology menu", select("technology", "DSP")),
        ("module speed menu", select("speed_gbps", "1.6T")),
    ],
}


@pytest.mark.parametrize("notebook", list(MOVES))
def test_main_controls_redraw_without_errors(
    notebook: str, serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage
) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOKS / notebook)
    for what, move in MOVES[notebook]:
        assert_control_redraws(app, lambda move=move: move(app.page), f"figure after the {what}")
