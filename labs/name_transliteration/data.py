"""Thai full name -> English full name pairs for homework 3.1.

A row is ``source`` (``สมชาย ใจดี``), ``target`` (``Somchai Jaidee``), ``alternatives``
(other accepted spellings, ``|``-separated), ``gender`` (of the given name) and ``stratum``.

Names are built from the word table ``datasets/thai_names/romanization.csv`` (see
:mod:`.romanization`), never from pythainlp directly, so the data is the same whatever
pythainlp version a student has. A name is a given name of one gender and a family name.

**Splits** are fixed by hashes, independent of the seed and of how many rows are drawn:

- About 9 % of all words are *held out*: they never occur in training under any role. A third
  of them belong to dev, a third to test, and a third to the grader's **hidden** pool: no
  public file holds a name with one of those, and the student kit's table leaves them out
  (:func:`tools.release.release_homework`), so the hidden test set's ``unseen`` stratum asks
  for spellings that no file a student has contains. They are not secret, though: pythainlp's
  name lists and :func:`word_group` rebuild them. An instructor's private word list
  (:mod:`.private_words`, ``hidden-set --words``) gives an unseen stratum that students cannot rebuild.
- Every other name (both words seen) belongs to one split by a hash of the full name:
  about 90 % train, 5 % dev, 5 % test. So splits are disjoint by full name.

**Dictionary words** (:func:`labs.name_transliteration.corpus.dictionary_words`) stand in the
table beside the names, as training material only: with ``dictionary_share``, that share of the
training rows puts a dictionary word in place of the given or the family name (stratum
``dictionary``). They are no name word, so no split, pool or hidden set changes with them.

Dev and test rows are half ``seen`` (both words occur in training, the full name does not)
and half ``unseen`` (the given name, the family name or both are held-out words), so that
generalisation to words never seen in training can be measured separately. Training rows
are all ``seen`` and walk through every seen word before repeating one, so any training set
of 12,000 names or more contains every word of the ``seen`` stratum. The gender of a training
row is that of its given name (drawn at random for the few names listed for both). Names
within one file are distinct.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.paths import DATASETS_DIR
from labs.common.seeding import rng_for, stable_bucket
from labs.common.validation import check_choices, check_row_count
from labs.common.vocab import Vocabulary
from labs.name_transliteration.corpus import DICTIONARY
from labs.name_transliteration.private_words import ROLES as PRIVATE_ROLES
from labs.name_transliteration.private_words import read_private_words
from labs.name_transliteration.romanization import TABLE_COLUMNS, base_spelling, spelling_variants
from labs.name_transliteration.task import TASK

COLUMNS = ("source", "target", "alternatives", "gender", "stratum")
SPLITS = ("train", "dev", "test")
HIDDEN = "hidden"  # the grader's split: seen names like test's, unseen ones from the hidden words
GENDERS = ("female", "male")
DEFAULT_TABLE = DATASETS_DIR / "thai-names" / "romanization.csv"
HELD_OUT_PERCENT = {"dev": range(0, 3), "test": range(3, 6), HIDDEN: range(6, 9)}
NAME_SPLIT_PERCENT = {"train": range(0, 90), "dev": range(90, 95), "test": range(95, 100)}
TARGET_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz -"
NAMES_PER_PRIVATE_WORD = (
    10  # a private word list needs a word per 10 unseen names: the unseen score rests on many
)


def word_group(word: str) -> str:
    """``dev``, ``test`` or ``hidden`` for a held-out word, ``seen`` for a word that may occur in training."""
    bucket = stable_bucket(f"word:{word}", 100)
    return next((split for split, buckets in HELD_OUT_PERCENT.items() if bucket in buckets), "seen")


def name_split(given: str, family: str) -> str:
    """The split of a full name whose words are both ``seen``."""
    bucket = stable_bucket(f"name:{given} {family}", 100)
    return next(split for split, buckets in NAME_SPLIT_PERCENT.items() if bucket in buckets)


@dataclass(frozen=True)
class NameWord:
    """One Thai word with its roles and accepted English spellings (main spelling first)."""

    thai: str
    roles: frozenset[str]
    spellings: tuple[str, ...]


class Lexicon:
    """The word table, read once and grouped into sampling pools by split group and role."""

    def __init__(self, words: dict[str, NameWord], unromanizable: tuple[str, ...]):
        self.words = words
        self.unromanizable = unromanizable
        pools: dict[tuple[str, str], list[str]] = {}
        for word in sorted(words):
            for role in words[word].roles:
                pools.setdefault((DICTIONARY if role == DICTIONARY else word_group(word), role), []).append(
                    word
                )
        self._pools = {key: tuple(pool) for key, pool in pools.items()}
        self.dictionary = self.pool(DICTIONARY, DICTIONARY)  # training material, in no split

    def is_dictionary_word(self, word: str) -> bool:
        """True for a dictionary word (training material), False for a name word."""
        return self.words[word].roles == {DICTIONARY}

    @property
    def source_characters(self) -> set[str]:
        """The letters of the name words, and the space (dictionary words use no others)."""
        return {c for w in self.words if not self.is_dictionary_word(w) for c in w} | {" "}

    def pool(self, group: str, role: str) -> tuple[str, ...]:
        """Words of ``role`` (``family``, ``given-female``, ``given-male``) in ``group`` (``seen``, ``dev``,
        ``test``)."""
        return self._pools.get((group, role), ())


@lru_cache(maxsize=4)
def _load_lexicon(path: str) -> Lexicon:
    rows = read_csv(path)
    if rows and tuple(rows[0]) != TABLE_COLUMNS:
        raise InputError(f"{path!r} is not a romanization table: expected columns {', '.join(TABLE_COLUMNS)}")
    words, unromanizable = {}, []
    for row in rows:
        base = base_spelling(row)
        if base is None:
            unromanizable.append(row["word"])
            continue
        words[row["word"]] = NameWord(
            row["word"], frozenset(row["roles"].split("|")), tuple(spelling_variants(row["word"], base))
        )
    if not words:
        raise InputError(f"{path!r} holds no usable words")
    return Lexicon(words, tuple(unromanizable))


def load_lexicon(table: str | Path = DEFAULT_TABLE) -> Lexicon:
    """Read the romanization table (default: the one shipped in ``datasets/thai-names``)."""
    path = Path(table)
    if not path.is_file():
        raise InputError(
            f"no romanization table at {str(path)!r}; build it with `python -m labs data romanization-table`"
        )
    return _load_lexicon(str(path.resolve()))


def _row(words: dict[str, NameWord], given: str, family: str, gender: str, stratum: str) -> dict:
    given_word, family_word = words[given], words[family]
    spellings = [f"{g} {f}" for g, f in itertools.product(given_word.spellings, family_word.spellings)]
    main = spellings[0]
    return {
        "source": f"{given} {family}",
        "target": main,
        "alternatives": "|".join(sorted(set(spellings[1:]))),
        "gender": gender,
        "stratum": stratum,
    }


def _covering_training_names(lexicon: Lexicon, n: int, rng) -> list[tuple[str, str, str]]:
    """``n`` distinct (given, family, gender) training names that use every seen word early.

    Walks seeded permutations of the seen given names and family names, so that every seen
    word occurs once before any occurs twice: with ``n`` at least the number of seen given
    names (about 11,500), every word of the ``seen`` dev/test stratum occurs in training.
    """
    givens = sorted(set(lexicon.pool("seen", "given-female")) | set(lexicon.pool("seen", "given-male")))
    rng.shuffle(givens)
    families = list(lexicon.pool("seen", "family"))
    rng.shuffle(families)
    # A queue of family names: the first one that makes a training name with this given name
    # moves to the back. One that does not (its full name hashes to dev or test) stays near the
    # front for the next given name, so no family name is skipped for good.
    queue = collections.deque(families)
    names, taken = [], set()
    for i in range(100 * n + 1000):
        if len(names) == n:
            return names
        given = givens[i % len(givens)]
        for k, family in enumerate(queue):
            if name_split(given, family) == "train" and (given, family) not in taken:
                del queue[k]
                queue.append(family)
                break
        else:
            continue
        taken.add((given, family))
        roles = sorted(r for r in lexicon.words[given].roles if r.startswith("given-"))
        names.append((given, family, rng.choice(roles).removeprefix("given-")))
    raise InputError(f"could only find {len(names):,} distinct train names; ask for fewer rows")


def _dictionary_names(lexicon: Lexicon, n: int, rng) -> list[tuple[str, str, str]]:
    """``n`` distinct training rows with a dictionary word as the given name or as the family name.

    Each dictionary word is used once before any is used twice; the other word is a seen name word."""
    if not n:
        return []  # and draws nothing: rows without dictionary words are those of a table without them
    if not lexicon.dictionary:
        raise InputError(
            "this name table has no dictionary words; rebuild it with `python -m labs data "
            "romanization-table`, or train with dictionary_share=0"
        )
    words = list(lexicon.dictionary)
    rng.shuffle(words)
    givens = sorted(set(lexicon.pool("seen", "given-female")) | set(lexicon.pool("seen", "given-male")))
    families = lexicon.pool("seen", "family")
    names, taken = [], set()
    for i in range(100 * n + 1000):
        if len(names) == n:
            return names
        word = words[i % len(words)]
        given, family = (word, rng.choice(families)) if rng.random() < 0.5 else (rng.choice(givens), word)
        if (given, family) not in taken:
            taken.add((given, family))
            names.append((given, family, rng.choice(GENDERS)))
    raise InputError(f"could only find {len(names):,} distinct dictionary rows; ask for fewer")


def _held_out_names(
    lexicon: Lexicon, split: str, n_seen: int, n_unseen: int, rng
) -> list[tuple[str, str, str, str]]:
    """Distinct dev/test/hidden names: ``n_seen`` of two seen words, then ``n_unseen`` with a held-out word.

    The hidden split's seen names are test names (full names never in training); its unseen
    names use the hidden words.
    """
    if n_unseen and not all(lexicon.pool(split, role) for role in ("family", "given-female", "given-male")):
        raise InputError(
            f"this kit's name table has no {split} words; hidden sets are drawn in the instructor's "
            "kit, whose table still holds them"
        )
    names, taken = [], set()
    seen_split = "test" if split == HIDDEN else split
    attempts, max_attempts = 0, 100 * (n_seen + n_unseen) + 1000
    for stratum in ["seen"] * n_seen + ["unseen"] * n_unseen:
        while True:
            attempts += 1
            if attempts > max_attempts:
                raise InputError(f"could only find {len(names):,} distinct {split} names; ask for fewer rows")
            gender = rng.choice(GENDERS)
            if stratum == "seen":
                given = rng.choice(lexicon.pool("seen", f"given-{gender}"))
                family = rng.choice(lexicon.pool("seen", "family"))
                if name_split(given, family) != seen_split:
                    continue
            else:
                held_out = rng.choice(("given", "family", "both"))
                given = rng.choice(lexicon.pool(split if held_out != "family" else "seen", f"given-{gender}"))
                family = rng.choice(lexicon.pool(split if held_out != "given" else "seen", "family"))
            if (given, family) not in taken:
                break
        taken.add((given, family))
        names.append((given, family, gender, stratum))
    return names


def sample_names(
    n: int, seed: int, split: str = "train", table: str | Path = DEFAULT_TABLE, dictionary_share: float = 0.0
) -> list[dict]:
    """``n`` distinct names from ``split``; same seed, same rows.

    Training names cover every seen word before repeating one (see
    :func:`_covering_training_names`); with ``dictionary_share``, that share of them instead has a
    dictionary word for one of its two words (stratum ``dictionary``). Dev, test and hidden names
    are half ``seen``, half ``unseen``.
    """
    check_row_count(n)
    check_choices([split], SPLITS + (HIDDEN,), "split")
    if not 0 <= dictionary_share < 1 or (dictionary_share and split != "train"):
        raise InputError(
            f"dictionary_share must be at least 0 and below 1, and 0 outside the train split; "
            f"got {dictionary_share} for {split}"
        )
    lexicon = load_lexicon(table)
    rng = rng_for(seed, f"{TASK.name}/{split}")
    if split == "train":
        n_dictionary = round(n * dictionary_share)
        names = [
            (g, f, gender, "seen")
            for g, f, gender in _covering_training_names(lexicon, n - n_dictionary, rng)
        ]
        names += [
            (g, f, gender, "dictionary") for g, f, gender in _dictionary_names(lexicon, n_dictionary, rng)
        ]
    else:
        names = _held_out_names(lexicon, split, n - n // 2, n // 2, rng)
    rows = [_row(lexicon.words, *name) for name in names]
    rng.shuffle(rows)
    return rows


def _private_names(
    lexicon: Lexicon, private: tuple[str, ...], n: int, rng
) -> list[tuple[str, str, str, str]]:
    """``n`` distinct unseen names made as the kit makes its own, with ``private`` words as the held-out ones.

    The given name, the family name or both are private words, taken in a seeded order that uses
    every word once before any twice; the other word, if any, is a seen one.
    """
    order = list(private)
    rng.shuffle(order)
    turns = itertools.cycle(order)
    names, taken = [], set()
    for _ in range(100 * n + 1000):
        if len(names) == n:
            return names
        gender = rng.choice(GENDERS)
        held_out = rng.choice(("given", "family", "both"))
        given = next(turns) if held_out != "family" else rng.choice(lexicon.pool("seen", f"given-{gender}"))
        family = next(turns) if held_out != "given" else rng.choice(lexicon.pool("seen", "family"))
        if given != family and (given, family) not in taken:
            taken.add((given, family))
            names.append((given, family, gender, "unseen"))
    raise InputError(
        f"could only find {len(names):,} distinct names with the private words; ask for fewer rows"
    )


def _private_word_rows(
    n_seen: int, n_unseen: int, seed: int, words: str | Path, public: set[str]
) -> list[dict]:
    """Hidden-set rows: ``n_seen`` seen names as the kit draws them, ``n_unseen`` from a private word list."""
    lexicon = load_lexicon()
    known = set(lexicon.words) | {word for name in public for word in name.split(" ")}
    # Two words and the space must fit the decoder's output (its last step writes </s>).
    listed = read_private_words(
        words,
        characters=lexicon.source_characters - {" "},
        known=known,
        max_spelling=(TASK.max_output_length - 2) // 2,
    )
    shown = ", ".join(listed.known[:5]) + (", ..." if len(listed.known) > 5 else "")
    if listed.known:
        warnings.warn(
            f"left out {len(listed.known):,} of the {len(listed.known) + len(listed.spellings):,} words of "
            f"{words}: the kit's name table or public data already holds them, so they are not unseen "
            f"({shown})",
            stacklevel=2,
        )
    needed = max(2, math.ceil(n_unseen / NAMES_PER_PRIVATE_WORD))
    if len(listed.spellings) < needed:
        known_ones = f": {shown}" if listed.known else ""
        raise InputError(
            f"{words} holds {len(listed.spellings):,} new word(s) ({len(listed.known):,} more that the "
            f"kit already knows{known_ones}); {n_unseen:,} unseen names need at least {needed:,} (one per "
            f"{NAMES_PER_PRIVATE_WORD} names): add words, or ask for a smaller --n"
        )
    private = {word: NameWord(word, PRIVATE_ROLES, spellings) for word, spellings in listed.spellings.items()}
    rng = rng_for(seed, f"{TASK.name}/{HIDDEN}/private-words")
    names = _held_out_names(lexicon, HIDDEN, n_seen, 0, rng) + _private_names(
        lexicon, tuple(sorted(private)), n_unseen, rng
    )
    words_by_thai = lexicon.words | private
    rows = [_row(words_by_thai, *name) for name in names]
    rng.shuffle(rows)
    return rows


def hidden_rows(n: int, seed: int, public: set[str], words: str | Path | None = None) -> list[dict]:
    """``n`` names for a grader's hidden set, none of them in ``public``: half seen, half unseen.

    The unseen names use the hidden words, or, with ``words``, the words of the instructor's private list
    (:mod:`.private_words`) and no hidden word: words a student cannot rebuild from public tools."""
    if words is None:
        rows = sample_names(2 * n, seed, split=HIDDEN)
    else:
        rows = _private_word_rows(2 * (n - n // 2), n // 2, seed, words, public)
    rows = [r for r in rows if r["source"] not in public]
    halves = [
        [r for r in rows if r["stratum"] == s][: n - n // 2 if s == "seen" else n // 2]
        for s in ("seen", "unseen")
    ]
    return sorted(halves[0] + halves[1], key=lambda r: rows.index(r))


def student_kit(kit: Path, student_kit: Path) -> set[str]:
    """For the student kit: the name table without the grader's hidden words; returns the words left out.

    The vocabularies must not change (the student's model and the grader read the same ones)."""
    from labs.common.files import write_csv
    from labs.name_transliteration.romanization import TABLE_COLUMNS

    source = kit / DEFAULT_TABLE.relative_to(DATASETS_DIR.parent)
    target = student_kit / DEFAULT_TABLE.relative_to(DATASETS_DIR.parent)
    rows = read_csv(source)
    hidden = {row["word"] for row in rows if word_group(row["word"]) == HIDDEN and row["roles"] != DICTIONARY}
    target.parent.mkdir(parents=True, exist_ok=True)
    write_csv(target, TABLE_COLUMNS, [row for row in rows if row["word"] not in hidden])
    if vocabularies(target) != vocabularies(source):
        raise InputError(
            f"without its hidden words, {source} gives other vocabularies; the release was not written"
        )
    return hidden


def generate(n: int, seed: int, split: str = "train", table: str | Path = DEFAULT_TABLE) -> list[dict]:
    """Rows for a CSV file (see :func:`sample_names`)."""
    return sample_names(n, seed, split=split, table=table)


def vocabularies(table: str | Path = DEFAULT_TABLE) -> dict[str, Vocabulary]:
    """Source: every character of the table's Thai words and the space; target: ASCII letters, space,
    hyphen."""
    return {
        "source": Vocabulary.from_characters(
            load_lexicon(table).source_characters, name=f"{TASK.name} source"
        ),
        "target": Vocabulary.from_characters(TARGET_CHARACTERS, name=f"{TASK.name} target"),
    }
