"""Human date -> ISO 8601 pairs for lab 2.

A row is ``source`` (a human date in one of the formats of :mod:`.formats`), ``target`` (the same day as
``YYYY-MM-DD``), ``format_id`` and ``locale``, so that accuracy can be broken down per format and per locale.

**Splits are by date, not by row.** Every calendar day from 1900-01-01 to 2099-12-31 belongs
to exactly one split, fixed by a hash of the date: about 80 % train, 10 % dev, 10 % test. A
date in the test split never appears in training under any format, so a model cannot pass by
remembering dates. The partition does not depend on the seed or on how many rows are drawn;
the seed only chooses which rows.

**Sampling.** Each row draws a format uniformly from the chosen formats, then a day uniformly
from the split's days that the format may write (two-digit-year formats only write days in
1950..2049), so every format is equally represented. Rows within one file are distinct
source strings.
"""

from __future__ import annotations

import bisect
from datetime import date, timedelta
from functools import lru_cache
from typing import Iterable, Sequence

from labs.common.errors import InputError
from labs.common.seeding import rng_for, stable_bucket
from labs.common.validation import check_choices, check_row_count
from labs.common.vocab import Vocabulary
from labs.date_translation.formats import (
    FORMATS,
    FORMATS_BY_ID,
    LOCALES,
    TWO_DIGIT_WINDOW,
    DateFormat,
    render,
)
from labs.date_translation.task import TASK

COLUMNS = ("source", "target", "format_id", "locale")
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(2099, 12, 31)
SPLITS = ("train", "dev", "test")
SPLIT_PERCENT = {"train": range(0, 80), "dev": range(80, 90), "test": range(90, 100)}


def split_of(day: date) -> str:
    """Which split a calendar day belongs to, the same on every machine."""
    bucket = stable_bucket(f"date:{day.isoformat()}", 100)
    return next(name for name, buckets in SPLIT_PERCENT.items() if bucket in buckets)


@lru_cache(maxsize=None)
def split_days(split: str) -> tuple[date, ...]:
    """All days of ``split``, in calendar order."""
    check_choices([split], SPLITS, "split")
    days = (FIRST_DAY + timedelta(days=i) for i in range((LAST_DAY - FIRST_DAY).days + 1))
    return tuple(d for d in days if split_of(d) == split)


@lru_cache(maxsize=None)
def _window_bounds(split: str) -> tuple[int, int]:
    """Index range of ``split_days(split)`` inside the two-digit-year window."""
    days = split_days(split)
    return bisect.bisect_left(days, TWO_DIGIT_WINDOW[0]), bisect.bisect_right(days, TWO_DIGIT_WINDOW[1])


def select_formats(
    locales: Iterable[str] | None = None, format_ids: Iterable[str] | None = None
) -> list[DateFormat]:
    """The formats matching ``locales`` and ``format_ids`` (all of them when both are None)."""
    formats = list(FORMATS)
    if locales is not None:
        chosen = set(check_choices(locales, LOCALES, "locale"))
        formats = [f for f in formats if f.locale in chosen]
    if format_ids is not None:
        chosen = set(check_choices(format_ids, list(FORMATS_BY_ID), "format"))
        formats = [f for f in formats if f.id in chosen]
    if not formats:
        raise InputError(
            "no format matches both the chosen locales and the chosen formats; "
            "see `python -m labs formats` for which format belongs to which locale"
        )
    return formats


def sample_pairs(
    n: int,
    seed: int,
    split: str = "train",
    locales: Sequence[str] | None = None,
    format_ids: Sequence[str] | None = None,
) -> list[dict]:
    """``n`` distinct (source, target, format_id, locale) rows from ``split``; same seed, same rows."""
    check_row_count(n)
    formats = select_formats(locales, format_ids)
    days = split_days(split)
    window = _window_bounds(split)
    rng = rng_for(seed, f"{TASK.name}/{split}")
    rows, seen = [], set()
    attempts, max_attempts = 0, 20 * n + 1000
    while len(rows) < n:
        attempts += 1
        if attempts > max_attempts:
            raise InputError(
                f"could only find {len(rows):,} distinct {split} pairs for the chosen formats; ask for fewer "
                f"rows"
            )
        fmt = rng.choice(formats)
        low, high = window if fmt.two_digit_year else (0, len(days))
        day = days[rng.randrange(low, high)]
        source = render(fmt, day, rng)
        if source in seen:
            continue
        seen.add(source)
        rows.append({"source": source, "target": day.isoformat(), "format_id": fmt.id, "locale": fmt.locale})
    return rows


def hidden_rows(n: int, seed: int, public: set[str]) -> list[dict]:
    """``n`` pairs of the test split's days for a hidden set, none of whose sources is in ``public``."""
    return [dict(p) for p in sample_pairs(2 * n, seed, split="test") if p["source"] not in public][:n]


def generate(
    n: int,
    seed: int,
    split: str = "train",
    locales: Sequence[str] | None = None,
    format_ids: Sequence[str] | None = None,
) -> list[dict]:
    """Rows for a CSV file (see :func:`sample_pairs`)."""
    return sample_pairs(n, seed, split=split, locales=locales, format_ids=format_ids)


def source_characters() -> set[str]:
    """Every character any format can write.

    Rendered from every format on every day of two years (all months, weekdays and day
    numbers) with upper and lower case added for the formats that change case, and all
    digits in both scripts.
    """
    characters = set("0123456789๐๑๒๓๔๕๖๗๘๙")
    days = [date(2018, 1, 1) + timedelta(days=i) for i in range(2 * 365)]
    for fmt in FORMATS:
        for day in days:
            text = render(fmt, day, rng=_FixedCase())
            characters.update(text)
            characters.update(text.upper())
            characters.update(text.lower())
    return characters


class _FixedCase:
    """A stand-in rng for mixed case: every letter lower (upper and lower are added anyway)."""

    def random(self) -> float:
        return 1.0


def vocabularies() -> dict[str, Vocabulary]:
    """The task's fixed vocabularies: every character the formats can write, and ISO targets."""
    return {
        "source": Vocabulary.from_characters(source_characters(), name=f"{TASK.name} source"),
        "target": Vocabulary.from_characters("0123456789-", name=f"{TASK.name} target"),
    }
