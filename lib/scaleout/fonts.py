"""Korean in matplotlib figures: find a font with Hangul and let matplotlib fall back to it.

Matplotlib's default font (DejaVu Sans) has no Hangul, so a Korean label draws as empty
boxes. :func:`korean_font` finds a CJK font through matplotlib's font manager (Noto Sans CJK
from Debian's ``fonts-noto-cjk``, Nanum Gothic, Malgun Gothic, Apple SD Gothic Neo ...).
:func:`fit_korean_texts` gives the texts of a figure that hold Hangul that font as a
fallback: Latin glyphs keep DejaVu Sans, and matplotlib (3.6 and later) takes each glyph
DejaVu Sans lacks from the CJK font. The figures of :func:`scaleout.plotting.new_figure` do
it whenever they are drawn; :func:`use_korean_font` does it for every text of every figure.

Matplotlib caches its font list when it first runs; a font installed later is missing from
that cache, so the font files on disk are looked at too. When no such font exists the figures
still draw (Hangul as boxes) and a warning, :data:`NO_FONT_NOTE`, says what to install.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

__all__ = ["KOREAN_FAMILIES", "NO_FONT_NOTE", "fit_korean_texts", "font_has_hangul",
           "has_hangul", "korean_font", "use_korean_font"]

#: Font families with Hangul, in order of preference.
KOREAN_FAMILIES = ("Noto Sans CJK KR", "Noto Sans KR", "NanumGothic", "Nanum Gothic",
                   "Source Han Sans KR", "Malgun Gothic", "Apple SD Gothic Neo", "AppleGothic",
                   "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC")
#: What to do when no font with Hangul is installed.
NO_FONT_NOTE = ("No font with Hangul was found for matplotlib, so Korean text in figures "
                "shows as empty boxes. On Debian or Ubuntu install one with "
                "`sudo apt-get install fonts-noto-cjk` (./workbook test does it together "
                "with Chromium), then restart the kernel.")
_FILE_HINTS = ("CJK", "Nanum", "KR", "Malgun", "Gothic", "SourceHan")


def _known_families() -> set[str]:
    from matplotlib import font_manager

    return {f.name for f in font_manager.fontManager.ttflist}


@functools.cache
def korean_font() -> str | None:
    """The family name of an installed font with Hangul (first of :data:`KOREAN_FAMILIES`),
    or ``None``. Fonts installed after matplotlib built its cache are added from disk."""
    from matplotlib import font_manager

    names = _known_families()
    found = next((f for f in KOREAN_FAMILIES if f in names), None)
    if found is not None:
        return found
    added = False
    for path in font_manager.findSystemFonts():
        name = Path(path).name
        if ("Sans" in name and any(hint in name for hint in _FILE_HINTS)) or "Nanum" in name:
            try:
                font_manager.fontManager.addfont(path)
                added = True
            except (OSError, RuntimeError, ValueError):  # a font matplotlib cannot read
                continue
    if added:  # remember them, so the next kernel does not read the files again
        import matplotlib

        cache = Path(matplotlib.get_cachedir(),
                     f"fontlist-v{font_manager.FontManager.__version__}.json")
        try:
            font_manager.json_dump(font_manager.fontManager, cache)
        except OSError:
            pass
    names = _known_families()
    return next((f for f in KOREAN_FAMILIES if f in names), None)


def font_has_hangul(family: str) -> bool:
    """True if matplotlib's font file for ``family`` has glyphs for Hangul syllables."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    path = font_manager.findfont(font_manager.FontProperties(family=family),
                                 fallback_to_default=False)
    face = FT2Font(path)
    return all(face.get_char_index(ord(ch)) != 0 for ch in "한국어")


def has_hangul(text: str) -> bool:
    """True if ``text`` holds a Hangul syllable or letter."""
    return any("\uac00" <= ch <= "\ud7a3" or "\u1100" <= ch <= "\u11ff"
               or "\u3130" <= ch <= "\u318f" for ch in text)


def fit_korean_texts(figure) -> int:
    """Give every text of ``figure`` that holds Hangul the CJK font as a fallback.

    Only those texts: a fallback font on every text of every figure would make each one
    about a third slower to draw. Returns how many texts were changed; with no CJK font
    installed, warns once with :data:`NO_FONT_NOTE` (the figure still draws, Hangul as boxes).
    """
    from matplotlib import rcParams
    from matplotlib.text import Text

    korean = [t for t in figure.findobj(Text) if has_hangul(t.get_text())]
    if not korean:
        return 0
    family = korean_font()
    if family is None:
        _warn_once()
        return 0
    for t in korean:
        current = [f for f in t.get_fontfamily() if f != family] or list(rcParams["font.family"])
        t.set_fontfamily([*current, family])
    return len(korean)


@functools.cache
def _warn_once() -> None:
    warnings.warn(NO_FONT_NOTE, stacklevel=3)


def use_korean_font(*, warn: bool = False) -> str | None:
    """Let matplotlib draw Hangul in every figure: the CJK font goes after the default in
    ``font.family`` (each text then carries a fallback font and draws about a third slower;
    :func:`fit_korean_texts` does it for the texts with Hangul only).

    Returns the family used, or ``None`` (with :data:`NO_FONT_NOTE` as a warning when
    ``warn``) if no font with Hangul is installed.
    """
    from matplotlib import rcParams

    family = korean_font()
    if family is None:
        if warn:
            warnings.warn(NO_FONT_NOTE, stacklevel=2)
        return None
    families = [f for f in rcParams["font.family"] if f != family]
    rcParams["font.family"] = [*families, family]  # after the default: only Hangul falls back
    return family
