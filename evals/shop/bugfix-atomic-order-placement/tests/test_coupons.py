from datetime import date
from decimal import Decimal

import pytest

from src.errors import InvalidCouponError
from tests.conftest import TODAY


def test_percentage_coupon(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon="SAVE10", today=TODAY)
    assert order.discount == Decimal("2.40")
    assert order.net_total == Decimal("21.60")
    assert order.coupon_code == "SAVE10"


def test_amount_coupon(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon="FIVEOFF", today=TODAY)
    assert order.net_total == Decimal("19.00")


def test_minimum_spend(coupons):
    with pytest.raises(InvalidCouponError):
        coupons.discount_for("FIVEOFF", Decimal("19.99"), TODAY)


def test_expired_coupon(coupons):
    with pytest.raises(InvalidCouponError):
        coupons.discount_for("SAVE10", Decimal("50.00"), date(2024, 7, 1))
