"""Korean in matplotlib figures: a CJK font is found and Hangul draws with it."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pytest
from matplotlib import rcParams
from matplotlib.figure import Figure
from scaleout import fonts


def _need_font() -> str:
    """The Korean font; CI installs one (fonts-noto-cjk), so there its absence fails."""
    family = fonts.korean_font()
    if family is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install a CJK font: {fonts.NO_FONT_NOTE}", pytrace=False)
        pytest.skip(fonts.NO_FONT_NOTE)
    return family


def _draw(text: str) -> np.ndarray:
    """``text`` drawn alone by Agg, as a greyscale array (white background)."""
    fig = Figure(figsize=(1.2, 0.6), dpi=100)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=20)
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=100)
    w, h = fig.canvas.get_width_height()
    return np.frombuffer(buf.getvalue(), dtype=np.uint8).reshape(h, w, 4)[..., :3].mean(axis=2)


def test_a_korean_label_renders_with_a_cjk_font():
    family = _need_font()
    assert fonts.font_has_hangul(family)
    import scaleout.plotting  # noqa: F401  (importing it sets the fallback up)

    assert rcParams["font.family"][-1] == family
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = _draw("한"), _draw("국")
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, missing
    # real glyphs: ink on the page, and two syllables look different (a missing glyph's box
    # would look the same for both)
    assert (first < 128).sum() > 20 and (second < 128).sum() > 20
    assert np.abs(first - second).sum() > 1000


def test_latin_text_keeps_the_default_font():
    family = _need_font()
    fonts.use_korean_font()
    assert rcParams["font.family"][0] != family  # the CJK font only fills in missing glyphs


def test_without_a_cjk_font_figures_still_draw_and_a_note_says_what_to_install(monkeypatch):
    monkeypatch.setattr(fonts, "korean_font", lambda: None)
    before = list(rcParams["font.family"])
    with pytest.warns(UserWarning, match="fonts-noto-cjk"):
        assert fonts.use_korean_font(warn=True) is None
    assert list(rcParams["font.family"]) == before
    assert fonts.use_korean_font() is None  # quiet unless asked
