"""The shared explorer layout without a browser: controls sized to their text, tables tidy.

The browser tests (tests/browser/test_voila_fit.py) check the same in Chromium; these
check the numbers the layout is built from, for every explorer, in milliseconds.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ipywidgets as W
import pytest
import scaleout.widgets as widgets
from scaleout.render import html_table
from scaleout.svgchart import text_width
from scaleout.widgets.common import Explorer, control_column_px
from scaleout.widgets.scale_up import GlossaryExplorer


def explorer_classes() -> list[type[Explorer]]:
    found = {}
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"scaleout.widgets.{info.name}")
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Explorer) and cls is not Explorer:
                found[cls.__name__] = cls
    return [found[k] for k in sorted(found)]


@pytest.fixture(scope="module", params=explorer_classes(), ids=lambda c: c.__name__)
def explorer(request) -> Explorer:
    return request.param()


def test_every_menu_entry_and_description_fits_its_column(explorer):
    desc_px, column_px = control_column_px(explorer.controls)
    assert column_px == explorer._column_px
    for name, c in explorer.controls.items():
        if isinstance(c, W.Checkbox):
            continue
        assert c.style.description_width == f"{desc_px}px", name
        assert text_width(c.description) <= desc_px - 8, (name, c.description)
        if isinstance(c, W.Dropdown):
            longest = max(text_width(str(label)) for label in c._options_labels)
            assert desc_px + longest + 30 <= column_px, (name, longest, column_px)
        assert c.layout.width == "auto", name  # the grid cell decides the width


def test_the_view_carries_the_layout_hooks(explorer):
    classes = explorer.view._dom_classes
    assert "so-explorer" in classes and "so-body" in explorer.body._dom_classes
    assert explorer.body.layout.flex_flow == "row wrap"  # readout beside or under the chart
    assert explorer.body.layout.align_items == "flex-start"  # chart top-aligned
    assert "auto-fill" in explorer._layout_controls().layout.grid_template_columns
    assert ("so-stacked" in explorer.body._dom_classes) == explorer.readout_below


def test_the_glossary_puts_its_table_under_the_chart():
    assert GlossaryExplorer.readout_below


def test_html_tables_format_numbers_keep_words_whole_and_skip_empty_headers():
    rows = [("switches", 16384), ("share", 0.123456), ("link", "endpoint-leaf")]
    out = html_table(["", ""], rows, align=["left", "right"])
    assert "<th" not in out  # a key-value table has no empty header row
    assert ">16,384<" in out and ">0.123<" in out
    leaf = out[out.index("endpoint-leaf") - 200:out.index("endpoint-leaf")]
    assert "white-space:nowrap" in leaf.rsplit("<td", 1)[1]  # one word never wraps
    table = html_table(["term", "한국어"], [("bubble", "파이프라인 버블")], align=["left", "left"])
    assert "word-break:keep-all" in table  # Korean wraps between words, not syllables
    assert "<th" in table


def test_typed_number_boxes_show_four_significant_figures():
    from scaleout.widgets.reliability import CheckpointExplorer

    e = CheckpointExplorer(restart_min=10.547349562026666)
    assert e.controls["restart_min"].value == 10.55


def test_paragraphs_wrap_between_words_one_per_line_escaped():
    from scaleout import plan
    from scaleout.render import paragraphs

    assert paragraphs("a <b> & c\n\n  d  \n") == (
        '<p class="so-lines">a &lt;b&gt; &amp; c</p><p class="so-lines">d</p>')
    text = plan.explain(plan.search("gpt3-175b", "A100-SXM4-80GB", 1024, global_batch=1536), k=2)
    out = paragraphs(text)
    assert out.count("<p") == len([line for line in text.splitlines() if line.strip()])
    assert "<pre" not in out
    with pytest.raises(TypeError, match="text must be a str"):
        paragraphs(None)
