"""Thai name words from the corpora that ship inside pythainlp's wheel, with junk removed.

pythainlp bundles three lists: ``thai_male_names`` (~7,100), ``thai_female_names`` (~5,100)
and ``thai_family_names`` (~9,800). They are scraped lists and hold a little junk, which is
dropped here:

- entries with anything but Thai letters, vowels and tone marks (``ป.เสฎฐวุฒิ``; digits,
  ``ๆ``, ``ฯ``, spaces);
- multi-word entries (the family names written ``... ณ อยุธยา``): a name part here is one word;
- entries that do not start as a Thai word can (with a consonant or a leading vowel);
- honorifics listed as names (``นาย``) and honorific + name run together (``นายณัฐ``).

**Dictionary words** (:func:`dictionary_words`) are extra *training* material, not names: a
fixed draw of single words from pythainlp's Thai word list (``thai_words``, CC0) that are no
name word and use only letters that names use (so the vocabularies stay those of the names).
Spelled by the same romanizer and rules, they show the model many more letter patterns than the
~19,000 seen name words, which is what spelling a name word it never saw needs.

Only this module imports pythainlp; everything downstream reads the shipped table instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import labs  # noqa: F401  (sets PYTHAINLP_OFFLINE before pythainlp is imported)

ROLES = ("family", "given-female", "given-male")
DICTIONARY = "word"  # the role of a dictionary word in the table: training material, never a name part
DICTIONARY_WORDS = 24_000  # how many dictionary words the table holds
DICTIONARY_LETTERS = range(3, 13)  # their lengths, like name words' (most have 3 to 12 letters)
HONORIFICS = ("นาย", "นาง", "นางสาว", "เด็กชาย", "เด็กหญิง")

# Thai consonants (U+0E01..U+0E2E), vowels and marks (U+0E30..U+0E3A, U+0E40..U+0E45,
# U+0E47..U+0E4E). Excludes ฯ (U+0E2F), ๆ (U+0E46), Thai digits and punctuation.
_THAI_NAME_WORD = re.compile(
    r"[\u0e01-\u0e2e\u0e40-\u0e44][\u0e01-\u0e2e\u0e30-\u0e3a\u0e40-\u0e45\u0e47-\u0e4e]+"
)


@dataclass
class CorpusReport:
    """What :func:`name_words` kept and dropped, for the datasheet."""

    raw: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, list[str]] = field(default_factory=dict)


def is_name_word(word: str, known_names: frozenset[str] = frozenset()) -> bool:
    """True for a single Thai word that can be a name part (see the module docstring)."""
    if not _THAI_NAME_WORD.fullmatch(word):
        return False
    if word in HONORIFICS:
        return False
    return not any(word.startswith(h) and word[len(h) :] in known_names for h in HONORIFICS)


def name_words(report: CorpusReport | None = None) -> dict[str, set[str]]:
    """Map each kept word to its roles: a subset of ``family``, ``given-female``, ``given-male``."""
    from pythainlp.corpus import thai_family_names, thai_female_names, thai_male_names

    lists = {
        "family": thai_family_names(),
        "given-female": thai_female_names(),
        "given-male": thai_male_names(),
    }
    given = frozenset(lists["given-female"]) | frozenset(lists["given-male"])
    roles: dict[str, set[str]] = {}
    for role, words in lists.items():
        kept = [w for w in words if is_name_word(w, given)]
        if report is not None:
            report.raw[role] = len(words)
            report.kept[role] = len(kept)
            report.dropped[role] = sorted(set(words) - set(kept))
        for word in kept:
            roles.setdefault(word, set()).add(role)
    return roles


def dictionary_words(names: Iterable[str], count: int = DICTIONARY_WORDS) -> list[str]:
    """``count`` Thai dictionary words, sorted, that are not in ``names`` and use only the letters of
    ``names``.

    A fixed draw (by a hash of each word, no seed): the same pythainlp word list gives the same words."""
    from pythainlp.corpus import thai_words

    from labs.common.seeding import stable_bucket

    names = set(names)
    letters = {c for name in names for c in name}
    candidates = [
        w
        for w in sorted(set(thai_words()))
        if w not in names and len(w) in DICTIONARY_LETTERS and set(w) <= letters and is_name_word(w)
    ]
    candidates.sort(key=lambda w: stable_bucket(f"dictionary:{w}", 2**62))
    return sorted(candidates[:count])
