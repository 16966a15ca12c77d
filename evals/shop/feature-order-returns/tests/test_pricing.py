from decimal import Decimal

import pytest

from src.errors import ValidationError
from src.money import to_money
from src.pricing import line_total, vat


def test_to_money_rounds_to_cents():
    assert to_money("4.5") == Decimal("4.50")
    assert to_money(3) == Decimal("3.00")


def test_standard_line_total():
    assert line_total(Decimal("4.50"), 3) == Decimal("13.50")


def test_gold_discount():
    assert line_total(Decimal("12.00"), 1, "gold") == Decimal("10.80")


def test_bulk_discount_starts_at_ten_units():
    assert line_total(Decimal("4.50"), 9) == Decimal("40.50")
    assert line_total(Decimal("4.50"), 10) == Decimal("42.75")


def test_unknown_tier():
    with pytest.raises(ValidationError):
        line_total(Decimal("4.50"), 1, "platinum")


def test_vat():
    assert vat(Decimal("100.00")) == Decimal("21.00")
