"""Generator 2: human dates -> ISO, ambiguity-free, split by date, every format right on year ends."""

import collections
import random
import re
from datetime import date

import pytest

from labs.common.errors import InputError
from labs.common.files import read_csv
from labs.common.isodate import is_iso_date
from labs.date_translation.data import SPLITS, sample_pairs, select_formats, split_of
from labs.date_translation.formats import (
    FORMATS,
    FORMATS_BY_ID,
    LOCALES,
    TWO_DIGIT_WINDOW,
    ordinal,
    pattern_fields,
    render,
)
from tests.conftest import DATASETS

THAI_TO_ARABIC = str.maketrans("๐๑๒๓๔๕๖๗๘๙", "0123456789")


def test_at_least_thirty_formats_over_the_three_locales():
    assert len(FORMATS) >= 30
    assert len(FORMATS_BY_ID) == len(FORMATS)
    assert {f.locale for f in FORMATS} == set(LOCALES)
    assert all(sum(f.locale == loc for f in FORMATS) >= 10 for loc in LOCALES)


def test_a_mistyped_format_definition_fails_at_once():
    from labs.date_translation.formats import DateFormat

    with pytest.raises(ValueError, match="year 'be3' is not one of"):
        DateFormat("x", "th_TH", "d MMM {be}", year="be3")
    with pytest.raises(ValueError, match="locale 'th_XX'"):
        DateFormat("x", "th_XX", "d MMM y")


def test_no_format_uses_the_week_based_year_letter():
    for fmt in FORMATS:
        fields = pattern_fields(fmt.pattern)
        assert not any(field.startswith("Y") for field in fields), fmt.id
        assert not any(field.startswith(("u", "r")) for field in fields), fmt.id  # other year kinds


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.id)
def test_every_format_writes_the_right_year_on_the_first_and_last_days_of_many_years(fmt):
    rng = random.Random(0)
    years = sorted(set(range(1900, 2100, 3)) | {1950, 1999, 2000, 2018, 2020, 2049, 2099})
    for year in years:
        for day in (date(year, 1, 1), date(year, 12, 31), date(year, 12, 29), date(year, 1, 3)):
            if not fmt.allows(day):
                continue
            text = render(fmt, day, rng).translate(THAI_TO_ARABIC)
            expected = {
                "ce": str(year),
                "ce2": f"{year % 100:02d}",
                "be": str(year + 543),
                "be2": f"{(year + 543) % 100:02d}",
            }[fmt.year]
            assert re.findall(r"\d+", text)[-1] == expected, (fmt.id, day, text)


def test_known_renderings():
    day = date(2018, 1, 27)
    rng = random.Random(0)
    expected = {
        "us_full": "Saturday, January 27, 2018",
        "us_short": "1/27/18",
        "us_apostrophe_year": "Jan 27, '18",
        "gb_medium": "27 Jan 2018",
        "gb_short": "27/01/2018",
        "gb_ordinal_of": "27th of January 2018",
        "gb_upper": "27 JAN 2018",
        "th_long_ce": "27 มกราคม ค.ศ. 2018",
        "th_long_be_era": "27 มกราคม พ.ศ. 2561",
        "th_medium_be": "27 ม.ค. 2561",
        "th_medium_be2": "27 ม.ค. 61",
        "th_digits_medium_be": "๒๗ ม.ค. ๒๕๖๑",
        "th_digits_short_be2": "๒๗/๑/๖๑",
        "th_full_be": "วันเสาร์ที่ 27 มกราคม พ.ศ. 2561",
    }
    for format_id, text in expected.items():
        assert render(FORMATS_BY_ID[format_id], day, rng) == text


def test_ordinals_single_digit_days_and_mixed_case():
    assert [ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "31st",
    ]
    assert render(FORMATS_BY_ID["gb_ordinal"], date(2018, 5, 22)) == "22nd May 2018"
    assert render(FORMATS_BY_ID["gb_numeric"], date(2018, 5, 2)) == "2/5/2018"
    assert render(FORMATS_BY_ID["gb_short"], date(2018, 5, 2)) == "02/05/2018"
    mixed = {render(FORMATS_BY_ID["us_mixed"], date(2018, 5, 2), random.Random(s)) for s in range(40)}
    assert len(mixed) > 2 and {m.lower() for m in mixed} == {"may 2, 2018"}


def test_two_digit_years_only_inside_the_window():
    rows = sample_pairs(20_000, seed=4)
    for row in rows:
        if FORMATS_BY_ID[row["format_id"]].two_digit_year:
            assert TWO_DIGIT_WINDOW[0].isoformat() <= row["target"] <= TWO_DIGIT_WINDOW[1].isoformat()


def test_ambiguity_free_on_more_than_200000_pairs():
    """No source string (even ignoring letter case) maps to two different targets."""
    targets: dict[str, str] = {}
    count = 0
    for split, n in (("train", 140_000), ("dev", 35_000), ("test", 35_000)):
        for row in sample_pairs(n, seed=11, split=split):
            key = row["source"].lower()
            assert targets.setdefault(key, row["target"]) == row["target"], (row, targets[key])
            count += 1
    assert count >= 200_000


def test_ambiguity_free_where_day_and_month_could_swap():
    """Every format on every day <= 12 of every month, in years where two-digit forms collide."""
    targets: dict[str, str] = {}
    rng = random.Random(0)
    for year in (1950, 1961, 1999, 2000, 2012, 2018, 2049):
        for month in range(1, 13):
            for day_number in range(1, 13):
                day = date(year, month, day_number)
                for fmt in FORMATS:
                    if fmt.allows(day):
                        key = render(fmt, day, rng).lower()
                        assert targets.setdefault(key, day.isoformat()) == day.isoformat(), (fmt.id, key)


def test_rows_record_format_and_locale_and_cover_all_formats():
    rows = sample_pairs(8_000, seed=2)
    assert all(is_iso_date(r["target"]) for r in rows)
    assert all(FORMATS_BY_ID[r["format_id"]].locale == r["locale"] for r in rows)
    counts = collections.Counter(r["format_id"] for r in rows)
    assert set(counts) == set(FORMATS_BY_ID)
    assert max(counts.values()) < 2 * min(counts.values())  # formats drawn uniformly
    assert len({r["source"] for r in rows}) == len(rows)


def test_same_seed_same_rows():
    assert sample_pairs(2_000, seed=9, split="dev") == sample_pairs(2_000, seed=9, split="dev")
    assert sample_pairs(2_000, seed=9, split="dev") != sample_pairs(2_000, seed=10, split="dev")


def test_splits_are_by_date():
    for split in SPLITS:
        assert all(
            split_of(date.fromisoformat(r["target"])) == split for r in sample_pairs(3_000, 1, split=split)
        )
    dates = {
        split: {r["target"] for r in read_csv(DATASETS / "date-pairs" / f"{split}.csv")} for split in SPLITS
    }
    assert (
        not dates["train"] & dates["dev"]
        and not dates["train"] & dates["test"]
        and not dates["dev"] & dates["test"]
    )


def test_locale_and_format_selection():
    rows = sample_pairs(500, seed=1, locales=["th_TH"])
    assert {r["locale"] for r in rows} == {"th_TH"}
    assert {r["format_id"] for r in sample_pairs(50, seed=1, format_ids=["gb_short"])} == {"gb_short"}
    with pytest.raises(InputError, match="unknown locale 'th_XX'; choose one of: en_US, en_GB, th_TH"):
        select_formats(locales=["th_XX"])
    with pytest.raises(InputError, match="unknown format 'd MMM YYY'"):
        select_formats(format_ids=["d MMM YYY"])
    with pytest.raises(InputError, match="no format matches"):
        select_formats(locales=["en_US"], format_ids=["gb_short"])
    with pytest.raises(InputError, match="unknown split"):
        sample_pairs(5, seed=1, split="validation")


def test_asking_for_more_distinct_pairs_than_exist_is_an_error_not_a_hang():
    with pytest.raises(InputError, match="could only find"):
        sample_pairs(20_000, seed=1, split="dev", format_ids=["gb_short"])  # ~7,400 dev days
