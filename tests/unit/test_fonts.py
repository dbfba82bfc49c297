"""Korean in matplotlib figures: a CJK font is found and Hangul draws with it."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pytest
from matplotlib import rcParams
from scaleout import fonts, plotting


def _need_font() -> str:
    """The Korean font; CI installs one (fonts-noto-cjk), so there its absence fails."""
    family = fonts.korean_font()
    if family is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install a CJK font: {fonts.NO_FONT_NOTE}", pytrace=False)
        pytest.skip(fonts.NO_FONT_NOTE)
    return family


def _draw(text: str) -> np.ndarray:
    """``text`` drawn alone by Agg on a workbook figure, as a greyscale array (white page)."""
    fig, ax = plotting.new_figure(1.2, 0.6)
    ax.set_axis_off()
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=20)
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=100)
    w, h = fig.canvas.get_width_height()
    return np.frombuffer(buf.getvalue(), dtype=np.uint8).reshape(h, w, 4)[..., :3].mean(axis=2)


def test_a_korean_label_renders_with_a_cjk_font():
    family = _need_font()
    assert fonts.font_has_hangul(family)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = _draw("한"), _draw("국")
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing
    # real glyphs: ink on the page, and two syllables look different (a missing glyph's box
    # would look the same for both)
    assert (first < 128).sum() > 20 and (second < 128).sum() > 20
    assert np.abs(first - second).sum() > 1000


def test_only_texts_with_hangul_get_the_cjk_font():
    family = _need_font()
    fig, ax = plotting.new_figure()
    ax.set_title("버블 (bubble)")
    ax.set_xlabel("micro-batches")
    assert fonts.fit_korean_texts(fig) == 1
    assert ax.title.get_fontfamily()[-1] == family
    assert family not in ax.xaxis.label.get_fontfamily()  # Latin-only text: no fallback cost
    assert family not in rcParams["font.family"]


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # the boxes this test expects
def test_without_a_cjk_font_figures_still_draw_and_a_note_says_what_to_install(monkeypatch):
    monkeypatch.setattr(fonts, "korean_font", lambda: None)
    fonts._warn_once.cache_clear()
    before = list(rcParams["font.family"])
    with pytest.warns(UserWarning, match="fonts-noto-cjk"):
        assert fonts.use_korean_font(warn=True) is None
    assert list(rcParams["font.family"]) == before
    assert fonts.use_korean_font() is None  # quiet unless asked
    fig, ax = plotting.new_figure()
    ax.set_title("버블")
    with pytest.warns(UserWarning, match="fonts-noto-cjk"):
        fig.savefig(io.BytesIO(), format="png")
    fonts._warn_once.cache_clear()
