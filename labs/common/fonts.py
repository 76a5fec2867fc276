"""A Thai-capable font for matplotlib, so that attention heatmaps never show empty boxes.

Matplotlib's default font (DejaVu Sans) has no Thai glyphs. :func:`use_thai_font` finds one
(a system font with Thai glyphs, or Noto Sans Thai from the ``fontpkg-noto-sans-thai`` package
in ``requirements.txt``) and puts it behind DejaVu Sans in matplotlib's fallback list: Latin
characters keep their look, Thai characters come from the Thai font. :func:`thai_web_font` gives
the same font, cut to its Thai letters, for a web page to embed.
"""

from __future__ import annotations

import glob
import io
import os
import warnings
from functools import lru_cache

THAI_SAMPLE = "กขคงจมยรลวสหอะาิีึืุู่้เแโใไ๑๒"
INSTALL_HINT = (
    "no Thai-capable font was found, so Thai labels are shown as code points (U+0E01). "
    "Install one with `pip install fontpkg-noto-sans-thai` (it is in requirements.txt) "
    "or `sudo apt install fonts-thai-tlwg`, then restart Python."
)


def _covers_thai(path: str) -> bool:
    try:
        from fontTools.ttLib import TTFont

        cmap = TTFont(path, fontNumber=0, lazy=True).getBestCmap() or {}
    except Exception:  # a broken or unreadable font file: not usable
        return False
    return all(ord(c) in cmap for c in THAI_SAMPLE)


def _packaged_font_files() -> list[str]:
    try:
        import fontpkg_noto_sans_thai
    except ImportError:
        return []
    return sorted(glob.glob(os.path.join(os.path.dirname(fontpkg_noto_sans_thai.__file__), "files", "*.ttf")))


@lru_cache(maxsize=1)
def use_thai_font() -> str | None:
    """Make matplotlib draw Thai; return the Thai font's family name, or None (with a warning) if none
    exists."""
    import matplotlib
    from matplotlib import font_manager

    for path in _packaged_font_files():
        font_manager.fontManager.addfont(path)
    candidates = [f for f in font_manager.fontManager.ttflist if f.fname.lower().endswith((".ttf", ".otf"))]
    preferred = sorted(candidates, key=lambda f: ("Noto Sans Thai" not in f.name, f.name))
    for font in preferred:
        if _covers_thai(font.fname):
            family = [name for name in matplotlib.rcParams["font.family"] if name != font.name]
            matplotlib.rcParams["font.family"] = [
                "DejaVu Sans",
                font.name,
                *[f for f in family if f != "DejaVu Sans"],
            ]
            return font.name
    warnings.warn(INSTALL_HINT, stacklevel=2)
    return None


@lru_cache(maxsize=1)
def thai_web_font() -> bytes | None:
    """Noto Sans Thai as a TrueType file for a page's ``@font-face``; None without the font package.

    The packaged font holds every weight and width (a variable font, 220 kB); a page needs one:
    the regular weight at normal width, and only the Thai block (U+0E00-U+0E7F, with the glyphs
    its marks and ligatures reach) and the dotted circle U+25CC, about 18 kB. The same package gives
    the same bytes (no timestamp is written).
    """
    files = _packaged_font_files()
    if not files:
        return None
    from fontTools import subset
    from fontTools.ttLib import TTFont
    from fontTools.varLib import instancer

    font = TTFont(files[0], recalcTimestamp=False)
    if "fvar" in font:
        font = instancer.instantiateVariableFont(
            font, {axis.axisTag: axis.defaultValue for axis in font["fvar"].axes}
        )
    subsetter = subset.Subsetter(subset.Options())
    subsetter.populate(unicodes=[*range(0x0E00, 0x0E80), 0x25CC])  # and ◌, which carries a mark shown alone
    subsetter.subset(font)
    buffer = io.BytesIO()
    font.save(buffer)
    return buffer.getvalue()


def printable_label(character: str, thai_font: str | None) -> str:
    """``character`` itself, or its code point when it is Thai and no Thai font exists."""
    if thai_font is None and "\u0e00" <= character <= "\u0e7f":
        return f"U+{ord(character):04X}"
    return {" ": "␣"}.get(character, character)
