from datetime import date

import pytest

from src.bookings import overlaps_closure, price
from src.date_range import days_in_range, is_within, nights_between


def test_last_day_is_within_range():
    assert is_within(date(2024, 5, 10), date(2024, 5, 1), date(2024, 5, 10))


def test_first_day_is_within_range():
    assert is_within(date(2024, 5, 1), date(2024, 5, 1), date(2024, 5, 10))


def test_day_after_is_outside():
    assert not is_within(date(2024, 5, 11), date(2024, 5, 1), date(2024, 5, 10))


def test_nights_between():
    assert nights_between(date(2024, 5, 3), date(2024, 5, 5)) == 2


def test_price_counts_nights():
    assert price(date(2024, 5, 3), date(2024, 5, 6)) == 240


def test_departure_on_closure_start_overlaps():
    assert overlaps_closure(date(2024, 5, 1), date(2024, 5, 10), date(2024, 5, 10), date(2024, 5, 12))


def test_days_in_range_includes_both_ends():
    assert days_in_range(date(2024, 5, 1), date(2024, 5, 3)) == [date(2024, 5, 1), date(2024, 5, 2), date(2024, 5, 3)]


def test_empty_range_rejected():
    with pytest.raises(ValueError):
        is_within(date(2024, 5, 1), date(2024, 5, 3), date(2024, 5, 2))
