"""ISO dates for lab 1: a known distribution, so that the lab can print the true lower bound.

Dates are drawn uniformly over ``[start, end]`` (default 1800-01-01 .. 2199-12-31) and written
as ``YYYY-MM-DD``. The default span is exactly one 400-year Gregorian cycle (146,097 days), so
every leap-year rule appears in its true proportion: 29 February in 2000 (divisible by 400)
but not in 1800, 1900 or 2100 (divisible by 100). The span is also wide enough that 10,000
samples from a perfect model are ~96.6 % unique.

Because the distribution is uniform over N dates, its entropy is exactly ``log2(N)`` bits per
date. A language model that reads ``<s> 2018-03-19 </s>`` predicts 11 tokens per date (ten
characters and ``</s>``), so no model can beat ``log2(N) / 11`` bits per predicted token on
held-out data: lab 1 prints its cross-entropy beside that bound.

Nothing here depends on the day the code runs: only the seed and the range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

from labs.common.errors import InputError
from labs.common.seeding import rng_for
from labs.common.validation import check_row_count
from labs.common.vocab import Vocabulary
from labs.date_generation.task import TASK

COLUMNS = ("date",)
DEFAULT_START = date(1800, 1, 1)
DEFAULT_END = date(2199, 12, 31)
ISO_LENGTH = len("YYYY-MM-DD")


@dataclass(frozen=True)
class IsoDateDistribution:
    """The uniform distribution over the calendar days from ``start`` to ``end`` inclusive."""

    start: date = DEFAULT_START
    end: date = DEFAULT_END

    def __post_init__(self):
        if self.start > self.end:
            raise InputError(f"start {self.start.isoformat()} is after end {self.end.isoformat()}; swap them")
        if self.start.year < 1000:
            raise InputError(
                f"start {self.start.isoformat()} is before year 1000; ISO dates here have four-digit years"
            )

    @property
    def n_days(self) -> int:
        """How many distinct dates the distribution can produce."""
        return (self.end - self.start).days + 1

    @property
    def entropy_bits(self) -> float:
        """Exact entropy of one date, in bits: ``log2(n_days)``."""
        return math.log2(self.n_days)

    @property
    def entropy_bits_per_token(self) -> float:
        """The lower bound on a language model's cross-entropy per predicted token.

        Each date is predicted as ten characters plus ``</s>``: 11 tokens.
        """
        return self.entropy_bits / (ISO_LENGTH + 1)

    def sample(self, n: int, seed: int) -> list[str]:
        """``n`` dates as ``YYYY-MM-DD`` strings, i.i.d. uniform; the same seed gives the same list."""
        check_row_count(n)
        rng = rng_for(seed, f"{TASK.name}/{self.start.isoformat()}/{self.end.isoformat()}")
        return [(self.start + timedelta(days=rng.randrange(self.n_days))).isoformat() for _ in range(n)]


def generate(n: int, seed: int, start: date = DEFAULT_START, end: date = DEFAULT_END) -> list[dict]:
    """Rows for a CSV file: ``{"date": "YYYY-MM-DD"}``."""
    return [{"date": d} for d in IsoDateDistribution(start, end).sample(n, seed)]


def public_split(n: int, seed: int, split: str) -> list[dict]:
    """A public split's rows: dates have no split of their own, the seed alone tells them apart."""
    return generate(n, seed)


def hidden_rows(n: int, seed: int, public: set[str]) -> list[dict]:
    """``n`` distinct dates for a hidden set, none of them in ``public``: ``{"source": d, "target": d}``."""
    dates = [d for d in IsoDateDistribution().sample(3 * n, seed) if d not in public]
    return [{"source": d, "target": d} for d in dict.fromkeys(dates)][:n]


def vocabularies() -> dict[str, Vocabulary]:
    """The task's fixed vocabulary: digits and the hyphen, after the special tokens."""
    return {"target": Vocabulary.from_characters("0123456789-", name=f"{TASK.name} target")}
