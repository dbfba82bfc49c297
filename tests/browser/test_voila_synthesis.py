"""Notebook 12's scale-up vs scale-out explorer as a lecturer sees it: Voila, driven in Chromium.

Choosing another domain size of the design redraws the chart and the readout (the star moves to
that size, the charts highlight it, the cluster splits into 1,152 / 36 domains), and the design
shows what is known without the planner (:mod:`.known`): Llama 3's failure rate on 1,152 GPUs,
the 400G optics' modules and watts, GPT-3's checkpoint at 14 bytes a parameter; an empty
cluster (0 GPUs) shows a one-line status (no traceback) that the former GPU count clears,
restoring the same readout; the page never shows a Python error nor logs a browser console
error. Helpers and timeouts are those of tests/browser/pages.py.
"""

from __future__ import annotations

import pytest

from . import known as K
from .pages import (
    READOUT,
    assert_bad_value_recovers,
    assert_control_redraws,
    assert_known,
    explorer_app,
    set_int_text,
    text_of,
)
from .voila_app import WatchedPage

DOMAIN_SELECT = ".so-ctl-domain select"  # Dropdown of GPUs per scale-up domain
GPUS_INPUT = ".so-ctl-n_gpus input"  # BoundedIntText

pytestmark = pytest.mark.browser


# notebook 12 open in Chromium, its explorer drawn once
app = explorer_app("12_scale_up_vs_scale_out.ipynb", "t => t.includes('the design')")


def test_domain_menu_redraws_chart_and_readout(app: WatchedPage) -> None:
    before = assert_control_redraws(
        app, lambda: app.page.locator(DOMAIN_SELECT).first.select_option(label="36"),
        "domain-size chart")
    assert "★ 72" in before
    assert "★ 36" in text_of(app.page, READOUT)
    assert_known(app, K.domain_design(36))


def test_empty_cluster_shows_a_status_and_recovers(app: WatchedPage) -> None:
    page = app.page
    gpus = int(page.locator(GPUS_INPUT).first.input_value())
    assert_bad_value_recovers(app, lambda: set_int_text(page, GPUS_INPUT, 0),
                              lambda: set_int_text(page, GPUS_INPUT, gpus),
                              "n_gpus must be a whole number >= 1")
    assert_known(app, K.domain_design(72))
