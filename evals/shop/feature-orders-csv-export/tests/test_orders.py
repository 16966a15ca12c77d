from decimal import Decimal

import pytest

from src.errors import InvalidTransitionError, OutOfStockError, ValidationError
from tests.conftest import TODAY


def test_place_order_reserves_stock(service, inventory, alice):
    order = service.place_order(alice.id, [("TEA-001", 2), ("MUG-001", 1)], today=TODAY)
    assert order.status == "pending"
    assert order.subtotal == Decimal("21.00")
    assert inventory.reserved("TEA-001") == 2
    assert inventory.available("MUG-001") == 9


def test_same_sku_lines_are_merged(service, alice):
    order = service.place_order(alice.id, [("TEA-001", 1), ("TEA-001", 2)], today=TODAY)
    assert [(line.sku, line.quantity) for line in order.lines] == [("TEA-001", 3)]


def test_gold_customer_gets_discount(service, bob):
    order = service.place_order(bob.id, [("MUG-001", 2)], today=TODAY)
    assert order.net_total == Decimal("21.60")


def test_out_of_stock(service, alice):
    with pytest.raises(OutOfStockError):
        service.place_order(alice.id, [("POT-001", 4)], today=TODAY)


def test_empty_order_rejected(service, alice):
    with pytest.raises(ValidationError):
        service.place_order(alice.id, [], today=TODAY)


def test_inactive_product_rejected(service, alice):
    with pytest.raises(ValidationError):
        service.place_order(alice.id, [("OLD-001", 1)], today=TODAY)


def test_life_cycle(service, inventory, alice):
    order = service.place_order(alice.id, [("POT-001", 2)], today=TODAY)
    service.pay(order.id)
    service.ship(order.id)
    assert order.status == "shipped"
    assert inventory.on_hand("POT-001") == 1
    assert inventory.reserved("POT-001") == 0


def test_cancel_releases_stock(service, inventory, alice):
    order = service.place_order(alice.id, [("POT-001", 2)], today=TODAY)
    service.cancel(order.id)
    assert order.status == "cancelled"
    assert inventory.available("POT-001") == 3


def test_cannot_ship_unpaid_order(service, alice):
    order = service.place_order(alice.id, [("POT-001", 1)], today=TODAY)
    with pytest.raises(InvalidTransitionError):
        service.ship(order.id)
