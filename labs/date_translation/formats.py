"""The catalogue of human date formats that lab 2 translates to ISO 8601.

Each format is a CLDR date pattern, rendered by babel for its locale, plus a few fields of the
kit's own that CLDR lacks, written in braces:

- ``{ordinal}``: the day with an English ordinal suffix (``1st``, ``2nd``, ``3rd``, ``11th``,
  ``22nd``);
- ``{be}`` and ``{be2}``: the Buddhist-era year (CE + 543) in four or two digits. Thai CLDR
  data uses the Buddhist calendar, but babel formats only the Gregorian one, so the kit adds
  the era itself.

After babel, a format may change letter case (``upper``, ``lower``, or ``mixed`` where each
letter's case is drawn at random, as in ``maY``) and may write its digits as Thai digits
(``๒๗``).

Only calendar-year pattern letters are used (``y``, ``yy``), never ``Y``: in CLDR, ``Y`` is the
ISO week-numbering year, so ``d MMM YYY`` writes 31 December 2018 as "31 Dec 2019". A widely
copied course generator has exactly that label noise; a test here renders every format on
the first and last days of many years and checks the year.

**Ambiguity-free by construction.** No source string can mean two dates:

1. Four-digit years are Common Era in 1900..2099 or Buddhist Era in 2443..2642: the ranges
   do not overlap, so a four-digit year always tells which calendar it is.
2. Two-digit years are written only for dates in one 100-year window, 1950-01-01 ..
   2049-12-31. In English formats they are Common Era (``'18`` = 2018); in Thai formats they
   are Buddhist Era (``61`` = 2561 BE = 2018) and always come with Thai month names or Thai
   digits, so they never share a shape with an English format.
3. All-numeric formats with ``/`` are day-first when the year has four digits (en_GB
   ``27/01/2018``, th_TH ``27/1/2561``) and month-first only with a two-digit year (en_US
   ``1/27/18``). Dotted and dashed numeric formats are day-first.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import date

from babel.dates import format_date

LOCALES = ("en_US", "en_GB", "th_TH")
YEAR_STYLES = ("ce", "ce2", "be", "be2")
CASES = ("as-is", "upper", "lower", "mixed")
DIGITS = ("arabic", "thai")

BUDDHIST_ERA_OFFSET = 543
TWO_DIGIT_WINDOW = (date(1950, 1, 1), date(2049, 12, 31))
_THAI_DIGITS = str.maketrans("0123456789", "๐๑๒๓๔๕๖๗๘๙")


@dataclass(frozen=True)
class DateFormat:
    """One way of writing a date: a CLDR pattern for a locale, plus the kit's transforms.

    ``year`` says how the year is written: ``ce`` (Common Era, four digits), ``ce2`` (two
    digits), ``be`` (Buddhist Era, four digits) or ``be2``.
    """

    id: str
    locale: str
    pattern: str
    year: str = "ce"
    case: str = "as-is"
    digits: str = "arabic"

    def __post_init__(self):
        for field, allowed in (
            ("locale", LOCALES),
            ("year", YEAR_STYLES),
            ("case", CASES),
            ("digits", DIGITS),
        ):
            if getattr(self, field) not in allowed:
                raise ValueError(
                    f"format {self.id!r}: {field} {getattr(self, field)!r} is not one of {allowed}"
                )

    @property
    def two_digit_year(self) -> bool:
        return self.year in ("ce2", "be2")

    def allows(self, day: date) -> bool:
        """Whether this format may write ``day`` (two-digit years only inside their window)."""
        if self.two_digit_year:
            return TWO_DIGIT_WINDOW[0] <= day <= TWO_DIGIT_WINDOW[1]
        return True


def _f(id, locale, pattern, year="ce", case="as-is", digits="arabic") -> DateFormat:
    return DateFormat(id, locale, pattern, year, case, digits)


FORMATS: tuple[DateFormat, ...] = (
    # en_US: CLDR full, long, medium and short, then the kit's own.
    _f("us_full", "en_US", "EEEE, MMMM d, y"),
    _f("us_long", "en_US", "MMMM d, y"),
    _f("us_medium", "en_US", "MMM d, y"),
    _f("us_short", "en_US", "M/d/yy", year="ce2"),
    _f("us_short_padded", "en_US", "MM/dd/yy", year="ce2"),
    _f("us_apostrophe_year", "en_US", "MMM d, ''yy", year="ce2"),
    _f("us_ordinal", "en_US", "MMMM {ordinal}, y"),
    _f("us_weekday_ordinal", "en_US", "EEEE, MMMM {ordinal}, y"),
    _f("us_weekday_medium", "en_US", "EEE, MMM d, y"),
    _f("us_upper", "en_US", "MMM d y", case="upper"),
    _f("us_lower", "en_US", "MMMM d y", case="lower"),
    _f("us_mixed", "en_US", "MMM d, y", case="mixed"),
    # en_GB: CLDR full, long, medium and short, then the kit's own.
    _f("gb_full", "en_GB", "EEEE, d MMMM y"),
    _f("gb_long", "en_GB", "d MMMM y"),
    _f("gb_medium", "en_GB", "d MMM y"),
    _f("gb_short", "en_GB", "dd/MM/y"),
    _f("gb_numeric", "en_GB", "d/M/y"),
    _f("gb_dotted", "en_GB", "dd.MM.y"),
    _f("gb_dashed", "en_GB", "dd-MM-y"),
    _f("gb_two_digit_year", "en_GB", "d MMM yy", year="ce2"),
    _f("gb_ordinal", "en_GB", "{ordinal} MMMM y"),
    _f("gb_ordinal_of", "en_GB", "{ordinal} 'of' MMMM y"),
    _f("gb_weekday_ordinal", "en_GB", "EEE {ordinal} MMM y"),
    _f("gb_upper", "en_GB", "dd MMM y", case="upper"),
    _f("gb_lower", "en_GB", "d MMMM y", case="lower"),
    _f("gb_mixed", "en_GB", "d MMMM y", case="mixed"),
    # th_TH: CLDR patterns with the Gregorian era babel knows (ค.ศ.), and with the Buddhist era.
    _f("th_full_ce", "th_TH", "EEEEที่ d MMMM G y"),
    _f("th_long_ce", "th_TH", "d MMMM G y"),
    _f("th_medium_ce", "th_TH", "d MMM y"),
    _f("th_full_be", "th_TH", "EEEEที่ d MMMM 'พ.ศ.' {be}", year="be"),
    _f("th_long_be", "th_TH", "d MMMM {be}", year="be"),
    _f("th_long_be_era", "th_TH", "d MMMM 'พ.ศ.' {be}", year="be"),
    _f("th_medium_be", "th_TH", "d MMM {be}", year="be"),
    _f("th_medium_be2", "th_TH", "d MMM {be2}", year="be2"),
    _f("th_weekday_be2", "th_TH", "EEE d MMM {be2}", year="be2"),
    _f("th_short_be", "th_TH", "d/M/{be}", year="be"),
    _f("th_digits_full_be", "th_TH", "EEEEที่ d MMMM 'พ.ศ.' {be}", year="be", digits="thai"),
    _f("th_digits_long_be_era", "th_TH", "d MMMM 'พ.ศ.' {be}", year="be", digits="thai"),
    _f("th_digits_medium_be", "th_TH", "d MMM {be}", year="be", digits="thai"),
    _f("th_digits_short_be2", "th_TH", "d/M/{be2}", year="be2", digits="thai"),
)

FORMATS_BY_ID: dict[str, DateFormat] = {f.id: f for f in FORMATS}


def ordinal(day: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th`` ... ``11th``, ``12th``, ``13th`` ... ``21st``, ``22nd``."""
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


def _quote(text: str) -> str:
    """A CLDR literal: text between single quotes, with quotes doubled."""
    return "'" + text.replace("'", "''") + "'"


def _kit_fields(day: date) -> dict[str, str]:
    be = day.year + BUDDHIST_ERA_OFFSET
    return {"ordinal": _quote(ordinal(day.day)), "be": _quote(str(be)), "be2": _quote(f"{be % 100:02d}")}


def _mixed_case(text: str, rng: random.Random) -> str:
    """Each cased letter upper or lower at random (``maY``); digits and Thai are untouched."""
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


def render(fmt: DateFormat, day: date, rng: random.Random | None = None) -> str:
    """Write ``day`` in format ``fmt``. ``rng`` is needed only for ``mixed`` case."""
    pattern = fmt.pattern.format(**_kit_fields(day)) if "{" in fmt.pattern else fmt.pattern
    text = format_date(day, pattern, locale=fmt.locale)
    if fmt.case == "upper":
        text = text.upper()
    elif fmt.case == "lower":
        text = text.lower()
    elif fmt.case == "mixed":
        if rng is None:
            raise ValueError(f"format {fmt.id!r} draws letter case at random: pass rng")
        text = _mixed_case(text, rng)
    if fmt.digits == "thai":
        text = text.translate(_THAI_DIGITS)
    return text


_FIELD_LETTERS = re.compile(r"'[^']*'|\{[a-z0-9]+\}|([A-Za-z])\1*")


def pattern_fields(pattern: str) -> list[str]:
    """The CLDR fields in ``pattern`` (for example ``['d', 'MMM', 'y']``), quotes and kit fields skipped."""
    return [m.group(0) for m in _FIELD_LETTERS.finditer(pattern) if m.group(1)]
