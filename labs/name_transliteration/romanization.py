"""From Thai name words to the English spellings Thai people use, keyed on the Thai letters.

Two stages:

1. **Base spelling** (:func:`base_spelling`): pythainlp's neural ``thai2rom_onnx`` romanizer
   (a bundled ONNX model, offline), or its rule-based ``royin`` (RTGS) romanizer where the
   neural output is empty or has spaces or anything but ASCII letters and hyphens. Both are
   run once by :func:`build_table`, and their raw outputs are shipped in
   ``datasets/thai_names/romanization.csv``, so that every student gets the same data
   whatever their pythainlp version.

2. **Name spelling** (:func:`name_spelling`): a small, documented rule layer that turns the
   standard RTGS spelling into the one Thai people usually choose for their names. Each
   rule is keyed on Thai letters in the word, so it fires only when the letters that produce
   the sound are there:

   ======================  ==============================  ==========================
   rule                    Thai letters                    example
   ======================  ==============================  ==========================
   ``ch`` -> ``j``         จ (and no ช ฉ ฌ; else only      ใจดี chaidi -> jaidi
                           when จ is the first consonant)
   ``si`` -> ``sri``       ศรี at the start or the end     ศรีสุข sisuk -> srisuk
   ``bun`` -> ``boon``     บุญ                             บุญชม bunchom -> boonchom
   final ``on`` -> ``orn``  final ร after an inherent o     สมพร somphon -> somphorn
   final ``i`` -> ``ee``    final ี (not ศรี)                ใจดี jaidi -> jaidee
   ``ph`` -> ``p``         พ or ภ (and no ผ)               สมพร somphorn -> somporn
   ``th`` -> ``t``         ท or ธ (and no ถ ฐ ฑ ฒ)         ธนากร thanakorn -> tanakorn
   ``kh`` -> ``k``         ค or ข (and no ฆ ฅ ฃ)           ขวัญใจ khwanjai -> kwanjai
   ======================  ==============================  ==========================

   The aspirate rules (the last three) only apply when every letter in the word that could
   make that ``h`` sound maps the same way; otherwise the word keeps its RTGS aspirate.

Spellings vary in real life, so every name also carries **alternatives**: the plain base
(RTGS-style) spelling and the spelling with all rules but the aspirate ones (``Thanakorn``
beside ``Tanakorn``). Grading accepts any of them.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from labs.common.files import write_csv

TABLE_COLUMNS = ("word", "roles", "thai2rom_onnx", "royin")
ENGINES = ("thai2rom_onnx", "royin")
LEADING_VOWELS = "เแโใไ"
_SPELLING = re.compile(r"[a-z]+(?:-[a-z]+)*")
ENGLISH_NAME = re.compile(r"[A-Za-z]+(?:[ -][A-Za-z]+)*")


def is_clean_spelling(spelling: str) -> bool:
    """ASCII letters, optionally joined by hyphens: no spaces, no other characters."""
    return bool(_SPELLING.fullmatch(spelling))


def base_spelling(row: dict) -> str | None:
    """The base (RTGS-style) lowercase spelling of a table row, or None if neither engine gave one."""
    for engine in ENGINES:
        spelling = (row.get(engine) or "").strip().lower()
        if is_clean_spelling(spelling):
            return spelling
    return None


def _first_consonant(word: str) -> str:
    return word.lstrip(LEADING_VOWELS)[:1]


def _rule_j(word: str, spelling: str) -> str:
    if "จ" not in word:
        return spelling
    if not any(c in word for c in "ชฉฌ"):
        return spelling.replace("ch", "j")
    if _first_consonant(word) == "จ" and spelling.startswith("ch"):
        return "j" + spelling[2:]
    return spelling


def _rule_sri(word: str, spelling: str) -> str:
    if word.startswith("ศรี") and spelling.startswith("si") and not spelling.startswith("sri"):
        spelling = "sr" + spelling[1:]
    if len(word) > 3 and word.endswith("ศรี") and spelling.endswith("si") and not spelling.endswith("sri"):
        spelling = spelling[:-2] + "sri"
    return spelling


def _rule_boon(word: str, spelling: str) -> str:
    return spelling.replace("bun", "boon", word.count("บุญ")) if "บุญ" in word else spelling


def _rule_orn(word: str, spelling: str) -> str:
    return spelling[:-2] + "orn" if word.endswith("ร") and spelling.endswith("on") else spelling


def _rule_ee(word: str, spelling: str) -> str:
    if word.endswith("ี") and not word.endswith("ศรี") and spelling.endswith("i") and not spelling.endswith("ee"):
        return spelling[:-1] + "ee"
    return spelling


def _aspirate_rule(letters: str, others: str, aspirate: str, plain: str) -> Callable[[str, str], str]:
    def rule(word: str, spelling: str) -> str:
        if any(c in word for c in letters) and not any(c in word for c in others):
            return spelling.replace(aspirate, plain)
        return spelling
    return rule


SPELLING_RULES: tuple[Callable[[str, str], str], ...] = (_rule_j, _rule_sri, _rule_boon, _rule_orn, _rule_ee)
ASPIRATE_RULES: tuple[Callable[[str, str], str], ...] = (
    _aspirate_rule("พภ", "ผ", "ph", "p"),
    _aspirate_rule("ทธ", "ถฐฑฒ", "th", "t"),
    _aspirate_rule("คข", "ฆฅฃ", "kh", "k"),
)


def _apply(rules: Iterable[Callable[[str, str], str]], word: str, spelling: str) -> str:
    for rule in rules:
        spelling = rule(word, spelling)
    return spelling


def title(spelling: str) -> str:
    """``somchai`` -> ``Somchai``; only the first letter is raised (``Kora-akkharin``)."""
    return spelling[:1].upper() + spelling[1:]


def name_spelling(word: str, base: str) -> str:
    """The main English spelling of one Thai name word, from its base spelling."""
    return title(_apply(SPELLING_RULES + ASPIRATE_RULES, word, base))


def spelling_variants(word: str, base: str) -> list[str]:
    """All accepted spellings of one word, the main one first, without repeats."""
    variants = [name_spelling(word, base), title(_apply(SPELLING_RULES, word, base)), title(base)]
    return list(dict.fromkeys(variants))


def romanize_words(words: Iterable[str], engine: str) -> list[str]:
    """Romanize Thai words with one of pythainlp's offline engines (``thai2rom_onnx``, ``royin``)."""
    import labs  # noqa: F401  (offline mode before pythainlp loads)
    from pythainlp.transliterate import romanize

    return [romanize(word, engine=engine) for word in words]


def build_table(path, progress: bool = True) -> int:
    """Romanize every kept corpus word with both engines and write the table to ``path``.

    Takes under a minute on a laptop CPU. Returns the number of words written.
    """
    from tqdm.auto import tqdm

    import labs  # noqa: F401
    from pythainlp.transliterate import romanize

    from labs.name_transliteration.corpus import name_words

    roles = name_words()
    rows = []
    for word in tqdm(sorted(roles), desc="romanizing name words", unit="word", disable=not progress):
        rows.append({
            "word": word,
            "roles": "|".join(sorted(roles[word])),
            "thai2rom_onnx": romanize(word, engine="thai2rom_onnx"),
            "royin": romanize(word, engine="royin"),
        })
    return write_csv(path, TABLE_COLUMNS, rows)
