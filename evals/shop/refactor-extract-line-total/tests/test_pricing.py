from decimal import Decimal

import pytest

from src.errors import ValidationError
from src.money import to_money
from src.pricing import tier_discount, vat


def test_to_money_rounds_to_cents():
    assert to_money("4.5") == Decimal("4.50")
    assert to_money(3) == Decimal("3.00")


def test_tier_discounts():
    assert tier_discount("standard") == Decimal("0.00")
    assert tier_discount("gold") == Decimal("0.10")


def test_unknown_tier():
    with pytest.raises(ValidationError):
        tier_discount("platinum")


def test_vat():
    assert vat(Decimal("100.00")) == Decimal("21.00")
