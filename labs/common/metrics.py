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

    >>> edit_distance("Somchai", "Somchay")
    1
    """
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def lcs_length(a: str, b: str) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (characters in order, gaps allowed).

    >>> lcs_length("Chaidee", "Jaidee")
    5
    """
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]
