"""Every explorer fits the screen at 1400 px and at 1024 px (a projector at about 137 %).

For each notebook with an explorer: the page loads in Voila at 1400 px, then is narrowed to
1024 px, one main control is moved (the chart and readout are redrawn) and the page is
widened again; at every step no label, menu entry, typed value, readout or chart text may
overflow its box (:func:`fit.overflow_problems`), the page stays clean, and at 1024 px the
readout sits under the chart rather than beside it. The move sets a value whose readout is
known without the library (:mod:`.known`), and the redrawn readout and chart must show it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page

from . import known as K
from .fit import overflow_problems
from .pages import (
    FIGURE,
    NOTEBOOKS,
    READOUT,
    Known,
    assert_known,
    assert_page_clean,
    figure_src,
    open_explorer,
    wait_for_redraw,
)
from .test_voila_every_explorer import number, select, slide, type_text
from .voila_app import VoilaServer, WatchedPage

pytestmark = pytest.mark.browser

WIDTHS = (1400, 1024)
HEIGHT = 1000

#: notebook -> one control moved between the checks (a long menu entry where there is one),
#: and what the first explorer then shows
MOVES: dict[str, tuple[Callable[[Page], None], Known]] = {
    "00_start_here.ipynb": (type_text("query", "올 리듀스"), K.GLOSSARY_ALL_REDUCE),
    "01_scale_up_limits.ipynb": (select("recipe", "megatron-bf16"), K.SCALE_UP_BF16_GPT3),
    "02_gpu_memory_math.ipynb": (slide("micro_batch", 3), K.memory_micro_batch(4)),
    "03_data_parallelism.ipynb": (slide("bucket_mib", 4), K.DP_ONE_BUCKET_NDR),
    "04_tensor_parallelism.ipynb": (select("t", "16"), K.TP_16),
    "05_pipeline_parallelism.ipynb": (slide("m", 8), K.pipeline_1f1b(8, 24)),
    "06_zero_stages.ipynb": (slide("dp", 2), K.zero_stage(3, 256)),
    "07_all_reduce_cost.ipynb": (select("op", "broadcast"),
                                 K.broadcast_bound(2**28, "InfiniBand NDR")),
    "08_3d_parallelism_planner.ipynb": (select("gpu", "H200-SXM-141GB"), K.PLANNER_H200),
    "09_clos_fabrics.ipynb": (slide("planes", 3), K.clos_planes(4)),
    "10_optical_modules.ipynb": (select("technology", "auto (cheapest that reaches)"),
                                 K.OPTICS_AUTO),
    "11_fault_tolerance.ipynb": (number("n_gpus", 8192), K.llama3_mtbf(8192)),
    "12_scale_up_vs_scale_out.ipynb": (select("domain", "8"), K.domain_design(8)),
    "13_mixture_of_experts.ipynb": (select("ep", "8"), K.moe_ep(8)),
    "14_long_context_and_precision.ipynb": (select("cp", "8"), K.context_activations(131072, 8)),
    "15_measure_it_yourself.ipynb": (select("sharding", "sp: Megatron tensor + sequence parallel"),
                                     K.LAB_SP),
}


def test_every_notebook_with_an_explorer_is_checked():
    with_explorer = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")
                           if "Explorer(" in p.read_text(encoding="utf-8"))
    assert sorted(MOVES) == with_explorer


def assert_fits(app: WatchedPage, when: str) -> None:
    problems = overflow_problems(app.page)
    assert not problems, f"{when}: text does not fit its box:\n" + "\n".join(problems)
    assert_page_clean(app)


def readout_is_below_chart(page: Page) -> bool:
    """True when the (first) explorer's readout starts below its chart's bottom edge."""
    return page.evaluate(
        """([fig, out]) => { const f = document.querySelector(fig).getBoundingClientRect();
            const r = document.querySelector(out).getBoundingClientRect();
            return r.top >= f.bottom - 1; }""", [FIGURE, READOUT])


@pytest.mark.parametrize("notebook", list(MOVES))
def test_text_fits_at_1400_and_1024_px(
    notebook: str, serve_voila: Callable[[Path], VoilaServer], watched_page: WatchedPage
) -> None:
    app = open_explorer(serve_voila, watched_page, NOTEBOOKS / notebook)
    page = app.page
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    page.wait_for_timeout(300)
    assert_fits(app, f"{WIDTHS[0]} px, as loaded")
    page.set_viewport_size({"width": WIDTHS[1], "height": HEIGHT})
    page.wait_for_timeout(300)
    assert_fits(app, f"{WIDTHS[1]} px, as loaded")
    assert readout_is_below_chart(page), f"at {WIDTHS[1]} px the readout should sit under the chart"
    src = figure_src(page)
    move, known = MOVES[notebook]
    move(page)
    wait_for_redraw(page, src, "the chart to be redrawn after the move")
    assert_known(app, known)
    page.wait_for_timeout(300)
    assert_fits(app, f"{WIDTHS[1]} px, after a redraw")
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    page.wait_for_timeout(300)
    assert_fits(app, f"{WIDTHS[0]} px, after a redraw")
