"""Every notebook's explorer in a real browser: served by Voila, driven in headless Chromium.

For each widget notebook without a dedicated browser test of its own (02, 05, 09, 11, 12,
13, 14 and 15 have one beside this file), the page loads, each main control listed below is
moved in turn, the figure and the readout change after every move, the status line stays
empty, and the page never shows a Python traceback nor logs a browser console error. At
least one move per explorer sets a value whose readout is known without the library (a
published figure or a hand calculation, :mod:`.known`): the readout must show it, and the
chart's texts and shapes must agree with it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest
from playwright.sync_api import Page

from . import known as K
from .pages import (
    NOTEBOOKS,
    Known,
    assert_control_redraws,
    assert_known,
    open_explorer,
    set_int_text,
)
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


class Move(NamedTuple):
    """One control moved: what it is, how to move it, and what the page must then show."""

    what: str
    move: Callable[[Page], None]
    known: Known | None = None


#: notebook -> the main controls moved, in order (each move must redraw)
MOVES: dict[str, list[Move]] = {
    "00_start_here.ipynb": [
        Move("search box", type_text("query", "올 리듀스"), K.GLOSSARY_ALL_REDUCE),
        Move("search box", type_text("query", "parallelism")),
        Move("notebook menu", select("notebook", "04 · Tensor parallelism")),
    ],
    "01_scale_up_limits.ipynb": [
        Move("recipe menu", select("recipe", "megatron-bf16"), K.SCALE_UP_BF16_GPT3),
        Move("model box", type_text("model", "llama3-70b"), K.SCALE_UP_BF16_LLAMA70),
    ],
    "03_data_parallelism.ipynb": [
        Move("GPU-count slider", slide("n_gpus", 2)),
        Move("link menu", select("link", "RoCE v2 400GbE")),
        Move("overlap tick box", tick("overlap")),
        # 25 -> 100 -> 400 -> 1,600 -> 6,400 MiB: one bucket holds all the gradients
        Move("bucket slider", slide("bucket_mib", 4), K.DP_ONE_BUCKET_ROCE_4096),
    ],
    "04_tensor_parallelism.ipynb": [
        Move("t menu", select("t", "2"), K.TP_2),
        Move("micro-batch slider", slide("micro_batch", 1)),
        Move("sequence-length menu", select("seq_len", "4096")),
    ],
    "06_zero_stages.ipynb": [
        Move("ZeRO stage menu", select("zero_stage", "1"), K.zero_stage(1, 64)),
        Move("data-parallel slider", slide("dp", 1), K.zero_stage(1, 128)),
    ],
    "07_all_reduce_cost.ipynb": [
        Move("message-size slider", slide("size_bytes", 2, "ArrowLeft"), K.ALL_REDUCE_64MIB_NDR),
        Move("link menu", select("link", "RoCE v2 400GbE"), K.ALL_REDUCE_64MIB_ROCE),
        Move("collective menu", select("op", "broadcast"),
             K.broadcast_bound(2**26, "RoCE v2 400GbE")),
    ],
    "08_3d_parallelism_planner.ipynb": [
        Move("GPU menu", select("gpu", "H200-SXM-141GB"), K.PLANNER_H200),
        Move("GPUs-per-node menu", select("gpus_per_node", "4")),
        Move("GPU-count menu", select("n_gpus", "1536")),
        Move("network menu", select("network", "RoCE v2 400GbE")),
    ],
    "10_optical_modules.ipynb": [
        Move("technology menu", select("technology", "DSP"), K.OPTICS_DSP),
        Move("module speed menu", select("speed_gbps", "1.6T")),
    ],
}

#: what the page shows before any move, known as well
AT_LOAD: dict[str, Known] = {
    "06_zero_stages.ipynb": K.zero_stage(3, 64),
}


def test_every_explorer_has_a_known_move():
    assert all(any(m.known for m in moves) for moves in MOVES.values())


@pytest.mark.parametrize("notebook", list(MOVES))
def test_main_controls_redraw_without_errors(
    notebook: str, serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage
) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOKS / notebook)
    if notebook in AT_LOAD:
        assert_known(app, AT_LOAD[notebook])
    for what, move, known in MOVES[notebook]:
        assert_control_redraws(app, lambda move=move: move(app.page), f"figure after the {what}")
        if known is not None:
            assert_known(app, known)
