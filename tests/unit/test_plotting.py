"""scaleout.plotting's figures print numbers as people write them: no offsets, no exponents."""

from __future__ import annotations

import io

from scaleout import plotting


def _drawn(fig) -> None:
    fig.savefig(io.BytesIO(), format="png")


def test_linear_axes_have_no_offset_and_no_exponent():
    fig, ax = plotting.new_figure()
    ax.plot([0, 1, 2], [0, 1.5e6, 3e6])
    _drawn(fig)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "1.5M" in labels and "3M" in labels
    assert ax.yaxis.get_offset_text().get_text() == ""  # no "1e6" above the axis
    assert not any("e" in label for label in labels)


def test_log_axes_read_as_numbers_and_years_stay_years():
    fig, ax = plotting.new_figure()
    ax.loglog([1, 10, 1e5], [1e-3, 1, 1e6])
    _drawn(fig)
    assert {"1", "100", "10k", "1M"} <= {t.get_text() for t in ax.get_yticklabels()}
    fig, ax = plotting.new_figure()
    ax.plot([2018, 2020, 2024], [1, 2, 3])
    ax.set_xticks([2018, 2020, 2024])
    _drawn(fig)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2018", "2020", "2024"]


def test_labels_set_by_hand_are_kept():
    fig, ax = plotting.new_figure()
    ax.barh([0, 1], [3e6, 4e6])
    ax.set_yticks([0, 1], ["one", "two"])
    _drawn(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["one", "two"]
