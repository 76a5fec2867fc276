"""An instructor's private word list: the words of the hidden set's unseen stratum that no student can
rebuild.

The kit's own hidden words are held out of every public file, but they come from public tools
(pythainlp's name lists and :func:`.data.word_group`), so a determined student can rebuild them.
``python -m autograder hidden-set --words FILE`` builds the unseen names from a list the
instructor keeps private instead. The file is UTF-8 text, one Thai word a line::

    # names collected from past years' rosters (a line starting with # is a comment)
    ทองประกาย
    ภูผาทอง,Phuphathong|Puphatong

A line is a Thai word, optionally followed by a comma and its accepted English spellings, the
main one first, separated by ``|`` (as the homework's ``alternatives`` column) or by commas; so
the CSV that ``python -m labs romanize --file FILE`` prints (``thai,spelling,alternatives``,
header included) is such a file, ready to correct by hand. Spellings are written as the kit
writes its own (``Somchai``: the first letter raised, the rest lowercase). A word given without
spellings gets them as the kit's own words do (:func:`.romanization.romanize_table_or_live`:
pythainlp's offline romanizers, then the kit's repairs, name rules and alternatives).

A private word may stand as a given name (of either gender) or as a family name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labs.common.errors import InputError
from labs.name_transliteration.romanization import is_clean_spelling, romanize_table_or_live, title

ROLES = frozenset({"family", "given-female", "given-male"})
HEADER = ("thai", "spelling", "alternatives")  # the first line of `python -m labs romanize`'s output


@dataclass(frozen=True)
class PrivateWords:
    """What a word list holds: its new words with their spellings, and the words left out as already known."""

    spellings: dict[str, tuple[str, ...]]  # Thai word -> accepted spellings, main first
    known: tuple[str, ...]  # listed words the kit's table or public data already holds


def read_private_words(
    path: str | Path, *, characters: set[str], known: set[str], max_spelling: int
) -> PrivateWords:
    """Read and check an instructor's word list (the format in the module's docstring).

    ``characters``: the letters a word may use (the homework's source vocabulary, without the
    space); ``known``: words a student already has (they are left out and returned in ``known``);
    ``max_spelling``: the longest spelling a word may have, so that a name still fits the decoder.
    Raises InputError, naming the file and line, for anything else that is wrong.
    """
    path = Path(path)
    listed = _parse(path, _read_text(path), characters, max_spelling)
    new = {word: spellings for word, spellings in listed.items() if word not in known}
    for word, spellings in _spell([word for word, spellings in new.items() if not spellings], path):
        if max(map(len, spellings)) > max_spelling:
            raise InputError(
                f"{path}: the kit spells {word!r} as {max(spellings, key=len)!r}, longer than "
                f"{max_spelling} letters; give shorter spellings on its line, or leave it out"
            )
        new[word] = spellings
    return PrivateWords(new, tuple(word for word in listed if word in known))


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise InputError(
            f"no word list at {str(path)!r}; write one Thai word a line (optionally "
            "WORD,Spelling|Alternative) into a private file"
        )
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        reason = (
            "it is not UTF-8 text"
            if isinstance(error, UnicodeDecodeError)
            else (error.strerror or str(error))
        )
        raise InputError(f"cannot read the word list {str(path)!r}: {reason}") from None


def _parse(path: Path, text: str, characters: set[str], max_spelling: int) -> dict[str, tuple[str, ...]]:
    """Thai word -> the spellings its line gives (none: the kit spells it), in the file's order."""
    listed: dict[str, tuple[str, ...]] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split(",")]
        if not listed and tuple(fields) == HEADER:
            continue
        word, where = fields[0], f"{path}, line {number}"
        if not word or any(c.isspace() for c in word):
            raise InputError(
                f"{where}: {line[:60]!r} is not one Thai word; list each word of a name on a line "
                "of its own (WORD or WORD,Spelling|Alternative)"
            )
        outside = sorted({c for c in word if c not in characters})
        if outside:
            raise InputError(
                f"{where}: {word[:40]!r} has {', '.join(map(repr, outside))}, outside the homework's "
                "source vocabulary (the characters of the kit's Thai names): no model could read it"
            )
        given = (s.strip() for field in fields[1:] for s in field.split("|"))
        spellings = tuple(dict.fromkeys(title(s.lower()) for s in given if s))
        bad = next((s for s in spellings if not is_clean_spelling(s.lower()) or len(s) > max_spelling), None)
        if bad is not None:
            raise InputError(
                f"{where}: {bad[:40]!r} is not a spelling the model can write: ASCII letters, "
                f"optionally joined by hyphens, at most {max_spelling} of them"
            )
        if word in listed and listed[word] != spellings:
            raise InputError(
                f"{where}: {word!r} again, with other spellings than on line {first_line[word]}; "
                "keep one line for it"
            )
        listed.setdefault(word, spellings)
        first_line.setdefault(word, number)
    if not listed:
        raise InputError(f"{path} lists no words; write one Thai word a line")
    return listed


def _spell(words: list[str], path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """``(word, spellings)`` made as the kit makes its own words' (live, as ``python -m labs romanize``
    does)."""
    if not words:
        return []
    try:
        rows = romanize_table_or_live(words, {})
    except InputError as error:
        raise InputError(
            f"{path}: {error}; give its spellings on its line (WORD,Spelling|Alternative)"
        ) from None
    return [(row["thai"], (row["spelling"], *filter(None, row["alternatives"].split("|")))) for row in rows]
