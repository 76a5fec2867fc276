"""Generator 1: ISO dates from a documented uniform distribution with an exact entropy."""

import collections
import math
from datetime import date

import pytest

from labs.common.errors import InputError
from labs.common.isodate import is_iso_date, parse_iso_date
from labs.date_generation.data import IsoDateDistribution, generate


def test_default_range_is_one_gregorian_cycle_with_exact_entropy():
    dist = IsoDateDistribution()
    assert (dist.start, dist.end) == (date(1800, 1, 1), date(2199, 12, 31))
    assert dist.n_days == 146_097  # 400 Gregorian years
    assert dist.entropy_bits == pytest.approx(math.log2(146_097))
    assert dist.entropy_bits_per_token == pytest.approx(math.log2(146_097) / 11)


def test_entropy_of_a_small_range_counts_its_days():
    dist = IsoDateDistribution(date(2020, 2, 1), date(2020, 2, 29))  # 2020 is a leap year
    assert dist.n_days == 29
    assert dist.entropy_bits == pytest.approx(math.log2(29))


def test_same_seed_same_dates_other_seed_other_dates():
    dist = IsoDateDistribution()
    assert dist.sample(500, seed=7) == dist.sample(500, seed=7)
    assert dist.sample(500, seed=7) != dist.sample(500, seed=8)
    assert dist.sample(5, seed=7) == dist.sample(500, seed=7)[:5]


def test_every_sample_is_a_valid_iso_date_in_range():
    dist = IsoDateDistribution()
    samples = dist.sample(50_000, seed=1)
    parsed = [parse_iso_date(s) for s in samples]
    assert all(p is not None and dist.start <= p <= dist.end for p in parsed)
    assert all(len(s) == 10 for s in samples)


def test_leap_days_only_in_leap_years_and_at_their_true_rate():
    samples = IsoDateDistribution().sample(300_000, seed=3)
    leap_days = [s for s in samples if s.endswith("-02-29")]
    years = {int(s[:4]) for s in leap_days}
    assert all(y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) for y in years)
    assert 2000 in years and not {1800, 1900, 2100} & years
    # 97 leap days in 146,097: expect ~199 in 300,000 draws.
    assert 150 < len(leap_days) < 250


def test_distribution_is_uniform_over_months():
    samples = IsoDateDistribution().sample(120_000, seed=5)
    months = collections.Counter(int(s[5:7]) for s in samples)
    for month, count in months.items():
        days_in_month = {2: 28.2425}.get(month, 31 if month in (1, 3, 5, 7, 8, 10, 12) else 30)
        expected = 120_000 * days_in_month / 365.2425
        assert abs(count - expected) < 5 * math.sqrt(expected)


def test_strict_iso_validity():
    assert is_iso_date("2000-02-29") and is_iso_date("2018-03-19")
    for bad in (
        "2019-02-29",
        "1900-02-29",
        "2018-3-19",
        "2018-13-01",
        "2018-04-31",
        " 2018-03-19",
        "2018/03/19",
        "٢٠١٨-03-19",
        "20180319",
        "",
    ):
        assert not is_iso_date(bad), bad


@pytest.mark.parametrize(
    "start,end,message",
    [
        (date(2000, 1, 2), date(2000, 1, 1), "after end"),
        (date(900, 1, 1), date(2000, 1, 1), "before year 1000"),
    ],
)
def test_bad_ranges_are_refused(start, end, message):
    with pytest.raises(InputError, match=message):
        IsoDateDistribution(start, end)


@pytest.mark.parametrize("n", [-1, 10**9, 2.5, True])
def test_bad_row_counts_are_refused(n):
    with pytest.raises(InputError, match="n"):
        generate(n, seed=0)
