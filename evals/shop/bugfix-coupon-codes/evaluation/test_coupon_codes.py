"""Hidden checks: coupon code normalisation, inclusive expiry, InvalidCouponError at checkout."""
from datetime import date
from decimal import Decimal

import pytest

from evaluation.helpers import TODAY


@pytest.mark.parametrize("typed", ["SAVE10", "save10", " Save10 ", "\tsave10\n"])
def test_lookup_normalises_code(coupons, typed):
    assert coupons.get(typed).code == "SAVE10"


def test_lookup_unknown_code_raises_invalid_coupon(coupons):
    from src.errors import InvalidCouponError, ValidationError
    with pytest.raises(InvalidCouponError) as info:
        coupons.get("SAVE11")
    assert isinstance(info.value, ValidationError)


def test_discount_for_unknown_code(coupons):
    from src.errors import InvalidCouponError
    with pytest.raises(InvalidCouponError):
        coupons.discount_for("NOPE", Decimal("50.00"), TODAY)


def test_valid_through_expiry_day(coupons):
    from src.errors import InvalidCouponError
    assert coupons.discount_for("save10", Decimal("50.00"), date(2024, 6, 30)) == Decimal("5.00")
    with pytest.raises(InvalidCouponError):
        coupons.discount_for("SAVE10", Decimal("50.00"), date(2024, 7, 1))


@pytest.mark.parametrize("typed", ["save10", "  SAVE10", "Save10 "])
def test_checkout_accepts_any_case(service, alice, typed):
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon=typed, today=TODAY)
    assert order.discount == Decimal("2.40")
    assert order.net_total == Decimal("21.60")
    assert order.coupon_code == "SAVE10"


def test_checkout_on_expiry_day(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 1)], coupon="SAVE10", today=date(2024, 6, 30))
    assert order.discount == Decimal("1.20")


@pytest.mark.parametrize("code, items, today", [
    ("SAVE100", [("MUG-001", 2)], TODAY),            # unknown
    ("SAVE10", [("MUG-001", 2)], date(2024, 7, 1)),  # expired
    ("fiveoff", [("BIS-001", 2)], TODAY),            # minimum spend not reached
])
def test_checkout_rejects_bad_coupon(service, inventory, alice, code, items, today):
    from src.errors import InvalidCouponError
    with pytest.raises(InvalidCouponError):
        service.place_order(alice.id, items, coupon=code, today=today)
    assert service.all_orders() == []
    for sku in ("MUG-001", "BIS-001"):
        assert inventory.reserved(sku) == 0


def test_no_coupon_still_full_price(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], today=TODAY)
    assert order.discount == Decimal("0.00")
    assert order.coupon_code is None


def test_amount_coupon_capped_at_subtotal(alice, catalog, inventory, customers):
    from src.coupons import Coupon, CouponBook
    from src.orders import OrderService
    book = CouponBook([Coupon("BIGGIFT", amount_off=Decimal("100.00"))])
    service = OrderService(catalog, inventory, customers, book)
    order = service.place_order(alice.id, [("BIS-001", 2)], coupon="biggift", today=TODAY)
    assert order.discount == Decimal("5.00")
    assert order.net_total == Decimal("0.00")
