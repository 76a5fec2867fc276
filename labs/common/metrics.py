"""Metrics shared by the labs and the autograder (the grader scores with these same functions)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Iterable, Mapping

import numpy as np

from labs.common.vocab import PAD_ID


def distribution(values: Iterable[Hashable]) -> dict[Hashable, float]:
    """The empirical distribution of ``values``: value -> share (sums to 1)."""
    counts = Counter(values)
    total = sum(counts.values())
    return {value: count / total for value, count in counts.items()} if total else {}


def total_variation(p: Mapping[Hashable, float], q: Mapping[Hashable, float]) -> float:
    """Total-variation distance ``0.5 * sum |p(x) - q(x)|`` between two distributions (0 = same, 1 =
    disjoint)."""
    return 0.5 * sum(abs(p.get(x, 0.0) - q.get(x, 0.0)) for x in set(p) | set(q))


SUM_TOLERANCE = 0.01  # how far a position's probabilities may sum from 1 (float16 round-off is far less)


def true_token_probabilities(probabilities: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The probability each position gives its true next token: (batch, time), from the model's output
    (batch, time, vocab) and ``targets`` (batch, time), padding positions (target 0) set to 1.

    Each counted position must be a distribution, values in [0, 1] summing to 1 (within ``SUM_TOLERANCE``),
    and is read divided by its sum: sampling divides so too, and a model that scales its softmax (``p /
    max p``, say) would otherwise claim a cross-entropy below what any distribution can reach. Raises
    ``InputError`` for an output that is no distribution (a last layer without its softmax)."""
    from labs.common.errors import InputError

    probabilities = np.asarray(probabilities, dtype=np.float64)
    targets = np.asarray(targets)
    mask = targets != PAD_ID  # (batch, time)
    counted = probabilities[mask]  # (positions, vocab)
    sums = counted.sum(axis=-1)
    if not (np.isfinite(counted).all() and counted.min(initial=0) >= 0 and counted.max(initial=0) <= 1):
        raise InputError(
            "the model's outputs are not probabilities: each must be in [0, 1] (end with a softmax)"
        )
    if np.abs(sums - 1).max(initial=0) > SUM_TOLERANCE:
        worst = sums[np.abs(sums - 1).argmax()]
        raise InputError(
            f"the model's next-character probabilities sum to {worst:.4g} at a position, not 1: its last "
            "layer must be a softmax over the vocabulary"
        )
    picked = np.take_along_axis(probabilities, targets[..., None], axis=-1)[..., 0]  # (batch, time)
    picked[mask] /= sums
    picked[~mask] = 1.0
    return picked


def bits_per_token(probabilities: np.ndarray, targets: np.ndarray) -> float:
    """Mean cross-entropy in bits of ``targets`` (batch, time) under ``probabilities`` (batch, time, vocab),
    read by :func:`true_token_probabilities`.

    Padding positions (target 0) are not counted.
    """
    targets = np.asarray(targets)
    picked = true_token_probabilities(probabilities, targets)  # (batch, time)
    return float(-np.log2(np.clip(picked[targets != PAD_ID], 1e-30, None)).mean())


def share(flags: Iterable[bool]) -> float:
    """The fraction of true values (0.0 for none)."""
    flags = list(flags)
    return sum(map(bool, flags)) / len(flags) if flags else 0.0


def percent(rate: float) -> str:
    """A rate (a fraction: an accuracy, a character error rate, a share of samples) as the kit shows it, in
    the labs' summaries and in the grader's rubric lines alike: ``0.0337`` -> ``'3.37%'``."""
    return f"{rate:.2%}"


def nats_to_bits(nats: float) -> float:
    return nats / math.log(2)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest insertions, deletions and substitutions that turn ``a`` into ``b``.

    The textbook table has a row per letter of ``b`` and a column per letter of ``a``; going down a column,
    each cell differs from the one above it by -1, 0 or +1. Myers' bit-parallel form (Hyyrö 2001) keeps a
    column as two bit masks, bit j set in ``plus`` where row j is one more than the row above, in ``minus``
    where it is one less, and works out the next column with a few whole-integer operations: one step per
    letter of ``a``, not one per cell. What the grader scores hangs on it (a model that writes 64 letters
    for every name fills 64 x 20 cells per spelling); ``tests/test_metrics.py`` checks it against the
    table, filled cell by cell.

    >>> edit_distance("Somchai", "Somchay")
    1
    """
    if not b:
        return len(a)
    rows = (1 << len(b)) - 1  # one bit per letter of b
    bottom = 1 << (len(b) - 1)  # the last row: the distance so far is its value
    letter_at = {}  # letter -> the rows of b that hold it
    for j, y in enumerate(b):
        letter_at[y] = letter_at.get(y, 0) | (1 << j)
    plus, minus, distance = rows, 0, len(b)  # column 0: 0, 1, 2, ... down the rows
    for x in a:  # the next column
        match = letter_at.get(x, 0)  # rows where x meets its letter of b: the diagonal costs nothing
        x_v = match | minus  # Hyyrö's Xv and Xh: the rows whose cell can take the diagonal's value
        x_h = (((match & plus) + plus) ^ plus) | match
        # each row's cell against the one to its left in the column before: one more, or one less
        more, less = minus | ~(x_h | plus), plus & x_h
        distance += 1 if more & bottom else -1 if less & bottom else 0
        more, less = (more << 1) | 1, less << 1  # the row above the first grows by one a column: D[0][i] = i
        plus, minus = (less | ~(x_v | more)) & rows, more & x_v & rows
    return distance


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (characters in order, gaps allowed).

    The same kind of column as :func:`edit_distance`'s, as one bit mask (Allison and Dix 1986, in Hyyrö's
    form): a row's bit is 0 where the table's value rises by one going down, so the subsequence's length is
    the number of 0 bits once every letter of ``a`` is read.

    >>> lcs_length("Chaidee", "Jaidee")
    5
    """
    rows = (1 << len(b)) - 1
    letter_at = {}
    for j, y in enumerate(b):
        letter_at[y] = letter_at.get(y, 0) | (1 << j)
    column = rows
    for x in a:
        matched = column & letter_at.get(x, 0)
        column = ((column + matched) | (column - matched)) & rows
    return len(b) - column.bit_count()
