"""Hidden checks for returns and refunds."""
from decimal import Decimal

import pytest

from evaluation.helpers import TODAY


@pytest.fixture
def shipped(service, bob):
    # gold customer: 3 x 7.25 x 0.9 = 19.575 -> 19.58 ; 1 x 12.00 x 0.9 = 10.80
    order = service.place_order(bob.id, [("TEA-002", 3), ("MUG-001", 1)], today=TODAY)
    service.pay(order.id)
    service.ship(order.id)
    return order


def snapshot(order, inventory):
    return (order.status, order.refunded, order.returned_quantity("TEA-002"),
            order.returned_quantity("MUG-001"), inventory.on_hand("TEA-002"),
            inventory.on_hand("MUG-001"), inventory.available("TEA-002"))


def test_new_order_has_no_returns(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 1)], today=TODAY)
    assert order.refunded == Decimal("0.00")
    assert isinstance(order.refunded, Decimal)
    assert order.returned_quantity("MUG-001") == 0
    assert order.returned_quantity("TEA-001") == 0


def test_partial_return(service, inventory, shipped):
    refund = service.return_items(shipped.id, "TEA-002", 1)
    assert refund == Decimal("6.53")
    assert refund.as_tuple().exponent == -2
    assert shipped.status == "shipped"
    assert shipped.refunded == Decimal("6.53")
    assert shipped.returned_quantity("TEA-002") == 1
    assert inventory.on_hand("TEA-002") == 18
    assert inventory.available("TEA-002") == 18
    assert inventory.reserved("TEA-002") == 0


def test_single_unit_returns_add_up_to_line_total(service, shipped):
    refunds = [service.return_items(shipped.id, "TEA-002", 1) for _ in range(3)]
    assert refunds == [Decimal("6.53"), Decimal("6.53"), Decimal("6.52")]
    assert shipped.refunded == Decimal("19.58")


def test_two_then_one(service, shipped):
    assert service.return_items(shipped.id, "TEA-002", 2) == Decimal("13.05")
    assert service.return_items(shipped.id, "TEA-002", 1) == Decimal("6.53")
    assert shipped.refunded == Decimal("19.58")


def test_whole_line_at_once(service, shipped):
    assert service.return_items(shipped.id, "TEA-002", 3) == Decimal("19.58")
    assert shipped.status == "shipped"


def test_full_return_sets_final_status(service, inventory, shipped):
    from src.errors import InvalidTransitionError
    service.return_items(shipped.id, "MUG-001", 1)
    assert shipped.status == "shipped"
    service.return_items(shipped.id, "TEA-002", 3)
    assert shipped.status == "returned"
    assert shipped.refunded == Decimal("30.38")
    assert inventory.on_hand("TEA-002") == 20
    assert inventory.on_hand("MUG-001") == 10
    for action in (service.pay, service.ship, service.cancel):
        with pytest.raises(InvalidTransitionError):
            action(shipped.id)
    with pytest.raises(InvalidTransitionError):
        service.return_items(shipped.id, "MUG-001", 1)
    assert shipped.status == "returned"


@pytest.mark.parametrize("stage", ["pending", "paid", "cancelled"])
def test_only_shipped_orders_accept_returns(service, inventory, alice, stage):
    from src.errors import InvalidTransitionError
    order = service.place_order(alice.id, [("MUG-001", 2)], today=TODAY)
    if stage in ("paid",):
        service.pay(order.id)
    if stage == "cancelled":
        service.cancel(order.id)
    on_hand = inventory.on_hand("MUG-001")
    with pytest.raises(InvalidTransitionError):
        service.return_items(order.id, "MUG-001", 1)
    assert inventory.on_hand("MUG-001") == on_hand
    assert order.refunded == Decimal("0.00")


def test_unknown_order(service):
    from src.errors import UnknownOrderError
    with pytest.raises(UnknownOrderError):
        service.return_items(99, "MUG-001", 1)


@pytest.mark.parametrize("sku, quantity", [
    ("POT-001", 1),     # not on the order
    ("MUG-001", 2),     # bought only 1
    ("TEA-002", 0),
    ("TEA-002", -1),
    ("TEA-002", 1.5),
])
def test_invalid_returns_change_nothing(service, inventory, shipped, sku, quantity):
    from src.errors import ValidationError
    before = snapshot(shipped, inventory)
    with pytest.raises(ValidationError):
        service.return_items(shipped.id, sku, quantity)
    assert snapshot(shipped, inventory) == before


def test_cumulative_limit(service, inventory, shipped):
    from src.errors import ValidationError
    service.return_items(shipped.id, "TEA-002", 2)
    before = snapshot(shipped, inventory)
    with pytest.raises(ValidationError):
        service.return_items(shipped.id, "TEA-002", 2)
    assert snapshot(shipped, inventory) == before
    assert service.return_items(shipped.id, "TEA-002", 1) == Decimal("6.53")


def test_coupon_discount_not_refunded(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon="FIVEOFF", today=TODAY)
    service.pay(order.id)
    service.ship(order.id)
    assert service.return_items(order.id, "MUG-001", 1) == Decimal("12.00")


def test_revenue_total_after_refunds(service, alice, shipped):
    from src.reports import revenue_total
    other = service.place_order(alice.id, [("POT-001", 1)], today=TODAY)
    service.pay(other.id)
    assert revenue_total([shipped, other]) == Decimal("70.28")
    service.return_items(shipped.id, "TEA-002", 1)
    assert revenue_total([shipped, other]) == Decimal("63.75")
    service.return_items(shipped.id, "TEA-002", 2)
    service.return_items(shipped.id, "MUG-001", 1)
    assert shipped.status == "returned"
    assert revenue_total([shipped, other]) == Decimal("39.90")


def test_partly_returned_order_with_coupon(service, catalog, inventory, customers, alice):
    from src.coupons import Coupon, CouponBook
    from src.orders import OrderService
    from src.reports import revenue_total
    service = OrderService(catalog, inventory, customers, CouponBook([Coupon("HALF", percent_off=Decimal("50"))]))
    order = service.place_order(alice.id, [("MUG-001", 1), ("TEA-001", 2)], coupon="HALF", today=TODAY)
    service.pay(order.id)
    service.ship(order.id)
    service.return_items(order.id, "TEA-001", 2)
    # net 10.50 (21.00 - 10.50 coupon), 9.00 refunded
    assert revenue_total([order]) == Decimal("1.50")
