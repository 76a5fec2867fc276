"""Checks on arguments a user gives, for the generators, the command line, decoding and the explorer."""

from __future__ import annotations

from numbers import Integral
from typing import Iterable, Sequence

from labs.common.errors import InputError

MAX_ROWS = 10_000_000


def check_row_count(n: int) -> None:
    """Reject a negative or absurd number of rows with a message that states the limits."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise InputError(f"n must be a whole number, got {n!r}")
    if n < 0:
        raise InputError(f"n must be 0 or more, got {n}")
    if n > MAX_ROWS:
        raise InputError(
            f"n={n:,} is more than the {MAX_ROWS:,} rows a generator writes at once; use a smaller n"
        )


def check_whole_number(value, what: str, minimum: int, note: str = "") -> int:
    """``value`` as an int; InputError unless it is a whole number (not a bool) of ``minimum`` or more.

    ``note`` follows the rule in the message, e.g. " (1: greedy)"."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise InputError(f"{what} must be a whole number of {minimum} or more{note}, got {value!r}")
    return int(value)


def check_choices(values: Iterable[str], allowed: Sequence[str], what: str) -> list[str]:
    """Return ``values`` as a list, raising InputError naming the first one not in ``allowed``."""
    values = list(values)
    for value in values:
        if value not in allowed:
            raise InputError(f"unknown {what} {value!r}; choose one of: {', '.join(allowed)}")
    if not values:
        raise InputError(f"choose at least one {what} from: {', '.join(allowed)}")
    return values
