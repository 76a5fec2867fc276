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


def bits_per_token(probabilities: np.ndarray, targets: np.ndarray) -> float:
    """Mean cross-entropy in bits of ``targets`` (batch, time) under ``probabilities`` (batch, time, vocab).

    Padding positions (target 0) are not counted.
    """
    probabilities = np.asarray(probabilities)
    targets = np.asarray(targets)
    picked = np.take_along_axis(probabilities, targets[..., None], axis=-1)[..., 0]  # (batch, time)
    mask = targets != PAD_ID
    return float(-np.log2(np.clip(picked[mask], 1e-30, None)).mean())


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
