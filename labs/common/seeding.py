"""Seeded randomness that gives the same bytes on every machine and Python version.

The kit uses :class:`random.Random` rather than NumPy's generators or faker's providers for
data generation: CPython documents that seeding from an int or a str and calling
``random()``, ``randrange()`` and ``choice()`` reproduce the same sequence across releases,
which is what "the same seed gives the same bytes" needs. Independent streams are derived
from one seed and a purpose string, so adding a new use of randomness never shifts the
numbers an existing one draws.
"""

from __future__ import annotations

import hashlib
import random


def rng_for(seed: int, purpose: str) -> random.Random:
    """A generator for one ``purpose`` (for example ``"date-pairs/train"``) under ``seed``."""
    return random.Random(f"attention-lab:{purpose}:{int(seed)}")


def stable_bucket(key: str, buckets: int) -> int:
    """A bucket in ``range(buckets)`` for ``key``, the same on every machine.

    Used to partition a population (dates, names, words) into splits once and for all,
    independently of the seed and of how many rows are drawn.
    """
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % buckets
