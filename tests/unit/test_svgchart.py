"""scaleout.svgchart: the widgets' SVG charts."""

from itertools import pairwise

from scaleout import svgchart
from scaleout.svgchart import _tick_label


def test_tick_labels_have_one_style_without_exponents():
    assert [_tick_label(v) for v in (10, 1e5, 1e6, 1e10, 2e-3)] == [
        "10", "100k", "1M", "10B", "0.002"]


def test_nice_ticks_cover_the_range_with_round_steps():
    ticks = svgchart.nice_ticks(87.0)
    assert ticks[0] == 0 and ticks[-1] >= 87.0
    steps = {round(b - a, 9) for a, b in pairwise(ticks)}
    assert steps == {20.0}


def test_integer_ticks_for_counts():
    assert svgchart.nice_ticks(2, integer=True) == [0, 1, 2]
    assert all(float(t).is_integer() for t in svgchart.nice_ticks(7, integer=True))
    assert svgchart.nice_ticks(2) == [0, 0.5, 1.0, 1.5, 2.0]


def test_stacked_hbars_legend_names_only_segments_some_row_has():
    from scaleout import svgchart

    svg = svgchart.stacked_hbars(
        {"a": {"x": 1.0, "y": 0.0, "z": 2.0}, "b": {"x": 0.5, "y": 0.0}},
        {"x": "#111111", "y": "#222222", "z": "#333333"}).decode()
    assert ">x</text>" in svg and ">z</text>" in svg
    assert ">y</text>" not in svg and "#222222" not in svg
