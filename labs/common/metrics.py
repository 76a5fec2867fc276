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
    """Total-variation distance ``0.5 * sum |p(x) - q(x)|`` between two distributions (0 = same, 1 = disjoint)."""
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


def nats_to_bits(nats: float) -> float:
    return nats / math.log(2)
