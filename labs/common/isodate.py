"""Strict ISO 8601 calendar dates (``YYYY-MM-DD``), shared by generators and metrics."""

from __future__ import annotations

import re
from datetime import date

_ISO = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")  # ASCII digits only: \d also matches ٢ and ๒


def parse_iso_date(text: str) -> date | None:
    """The date ``text`` names in strict ``YYYY-MM-DD`` form, or None.

    Strict means exactly four, two and two ASCII digits and a real calendar day: ``2019-02-29``
    is None (2019 is not a leap year), ``2000-02-29`` is a date, ``1900-02-29`` is None.
    """
    match = _ISO.fullmatch(text)
    if not match:
        return None
    year, month, day = (int(part) for part in match.groups())
    try:
        return date(year, month, day)
    except ValueError:
        return None


def is_iso_date(text: str) -> bool:
    """True when ``text`` is a real calendar date in strict ``YYYY-MM-DD`` form."""
    return parse_iso_date(text) is not None


def parse_date_argument(text: str, name: str) -> date:
    """Parse a user's ``YYYY-MM-DD`` argument, raising an error that names the argument."""
    from labs.common.errors import InputError

    parsed = parse_iso_date(text)
    if parsed is None:
        raise InputError(f"{name} {text!r} is not a calendar date in YYYY-MM-DD form, e.g. 2018-03-19")
    return parsed
