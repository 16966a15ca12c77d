"""Hidden checks: exact-availability boundary and all-or-nothing order placement."""
import pytest

from evaluation.helpers import TODAY

SKUS = ("TEA-001", "TEA-002", "MUG-001", "POT-001", "BIS-001", "OLD-001")


def snapshot(inventory):
    return {sku: (inventory.on_hand(sku), inventory.reserved(sku), inventory.available(sku))
            for sku in SKUS}


def test_inventory_reserve_exactly_available():
    from src.errors import OutOfStockError
    from src.inventory import Inventory
    stock = Inventory({"POT-001": 3})
    stock.reserve("POT-001", 1)
    stock.reserve("POT-001", 2)
    assert stock.available("POT-001") == 0
    with pytest.raises(OutOfStockError):
        stock.reserve("POT-001", 1)


def test_inventory_reserve_unknown_sku_is_out_of_stock():
    from src.errors import OutOfStockError
    from src.inventory import Inventory
    with pytest.raises(OutOfStockError):
        Inventory().reserve("POT-001", 1)


def test_order_for_all_available_units(service, inventory, alice):
    order = service.place_order(alice.id, [("POT-001", 3), ("MUG-001", 10)], today=TODAY)
    assert [line.quantity for line in order.lines] == [3, 10]
    assert inventory.available("POT-001") == 0
    assert inventory.available("MUG-001") == 0


def test_one_more_than_available_is_out_of_stock(service, inventory, alice):
    from src.errors import OutOfStockError
    service.place_order(alice.id, [("POT-001", 2)], today=TODAY)
    with pytest.raises(OutOfStockError):
        service.place_order(alice.id, [("POT-001", 2)], today=TODAY)
    assert inventory.reserved("POT-001") == 2


def _assert_rejected(service, inventory, customer, items, error, **kwargs):
    before = snapshot(inventory)
    orders_before = list(service.all_orders())
    with pytest.raises(error):
        service.place_order(customer.id, items, today=TODAY, **kwargs)
    assert snapshot(inventory) == before
    assert list(service.all_orders()) == orders_before


def test_out_of_stock_line_after_good_lines(service, inventory, alice):
    from src.errors import OutOfStockError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("MUG-001", 1), ("POT-001", 4)], OutOfStockError)


def test_unknown_product_after_good_lines(service, inventory, alice):
    from src.errors import UnknownProductError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("XYZ-999", 1)], UnknownProductError)


def test_discontinued_product_after_good_lines(service, inventory, alice):
    from src.errors import ValidationError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("OLD-001", 1)], ValidationError)


@pytest.mark.parametrize("bad", [0, -3, 1.5])
def test_invalid_quantity_after_good_lines(service, inventory, alice, bad):
    from src.errors import ValidationError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("MUG-001", bad)], ValidationError)


def test_negative_line_is_not_merged_away(service, inventory, alice):
    from src.errors import ValidationError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("TEA-001", -1)], ValidationError)


def test_rejected_coupon_reserves_nothing(service, inventory, alice):
    from src.errors import InvalidCouponError
    _assert_rejected(service, inventory, alice,
                     [("TEA-001", 2), ("MUG-001", 1)], InvalidCouponError, coupon="NOPE")


def test_coupon_minimum_spend_reserves_nothing(service, inventory, alice):
    from src.errors import InvalidCouponError
    _assert_rejected(service, inventory, alice,
                     [("BIS-001", 2)], InvalidCouponError, coupon="FIVEOFF")


def test_merged_lines_over_stock(service, inventory, alice):
    from src.errors import OutOfStockError
    _assert_rejected(service, inventory, alice,
                     [("POT-001", 2), ("TEA-001", 1), ("POT-001", 2)], OutOfStockError)


def test_repeated_failures_do_not_accumulate(service, inventory, alice):
    from src.errors import OutOfStockError
    for _ in range(5):
        with pytest.raises(OutOfStockError):
            service.place_order(alice.id, [("MUG-001", 2), ("POT-001", 9)], today=TODAY)
    service.place_order(alice.id, [("MUG-001", 10)], today=TODAY)
    assert len(service.all_orders()) == 1
    assert inventory.reserved("MUG-001") == 10
    assert inventory.available("MUG-001") == 0


def test_successful_order_still_reserves_and_cancels(service, inventory, alice):
    order = service.place_order(alice.id, [("TEA-001", 2), ("TEA-001", 3), ("POT-001", 1)],
                                today=TODAY)
    assert [(line.sku, line.quantity) for line in order.lines] == [("TEA-001", 5), ("POT-001", 1)]
    assert inventory.reserved("TEA-001") == 5
    service.cancel(order.id)
    assert inventory.reserved("TEA-001") == 0
    assert inventory.available("POT-001") == 3
