"""Hidden checks for the low-stock report."""
from decimal import Decimal

import pytest

from evaluation.helpers import TODAY


def low_stock(catalog, inventory):
    from src.reports import low_stock
    return low_stock(catalog, inventory)


def product(sku, name="Thing", reorder_level=None, active=True):
    from src.catalog import Product
    kwargs = {} if reorder_level is None else {"reorder_level": reorder_level}
    return Product(sku, name, Decimal("1.00"), "misc", active=active, **kwargs)


def test_default_reorder_level_is_five():
    assert product("ABC-001").reorder_level == 5


def test_negative_reorder_level_rejected():
    from src.catalog import Catalog
    from src.errors import ValidationError
    with pytest.raises(ValidationError):
        Catalog([product("ABC-001", reorder_level=-1)])
    catalog = Catalog()
    with pytest.raises(ValidationError):
        catalog.add(product("ABC-002", reorder_level=-5))
    assert "ABC-002" not in catalog


def test_zero_reorder_level_allowed():
    from src.catalog import Catalog
    assert len(Catalog([product("ABC-001", reorder_level=0)])) == 1


def test_fixture_shop(catalog, inventory):
    assert low_stock(catalog, inventory) == [("POT-001", "Cast iron teapot", 3)]


def test_boundary_is_inclusive_and_uses_available(catalog, inventory, service, alice):
    service.place_order(alice.id, [("MUG-001", 4)], today=TODAY)   # 6 available
    assert [row[0] for row in low_stock(catalog, inventory)] == ["POT-001"]
    service.place_order(alice.id, [("MUG-001", 1)], today=TODAY)   # 5 available
    assert low_stock(catalog, inventory) == [("POT-001", "Cast iron teapot", 3),
                                             ("MUG-001", "Stoneware mug", 5)]


def test_inactive_products_never_listed(catalog, inventory):
    from src.catalog import Product
    catalog.add(Product("OLD-002", "Retired mug", Decimal("3.00"), "kitchen", active=False))
    assert "OLD-001" not in [row[0] for row in low_stock(catalog, inventory)]
    assert "OLD-002" not in [row[0] for row in low_stock(catalog, inventory)]


def test_never_stocked_counts_as_zero_and_sorting():
    from src.catalog import Catalog
    from src.inventory import Inventory
    catalog = Catalog([
        product("ZZZ-001", "Zeta", reorder_level=10),
        product("AAA-001", "Alpha", reorder_level=10),
        product("MMM-001", "Mid", reorder_level=10),
        product("NEW-001", "Never stocked", reorder_level=0),
        product("FUL-001", "Plenty", reorder_level=10),
    ])
    inventory = Inventory({"ZZZ-001": 4, "AAA-001": 4, "MMM-001": 2, "FUL-001": 11})
    inventory.reserve("MMM-001", 1)
    assert low_stock(catalog, inventory) == [
        ("NEW-001", "Never stocked", 0),
        ("MMM-001", "Mid", 1),
        ("AAA-001", "Alpha", 4),
        ("ZZZ-001", "Zeta", 4),
    ]


def test_zero_reorder_level_only_when_empty():
    from src.catalog import Catalog
    from src.inventory import Inventory
    catalog = Catalog([product("ABC-001", "Rare", reorder_level=0)])
    inventory = Inventory({"ABC-001": 1})
    assert low_stock(catalog, inventory) == []
    inventory.reserve("ABC-001", 1)
    assert low_stock(catalog, inventory) == [("ABC-001", "Rare", 0)]


def test_result_is_list_of_tuples(catalog, inventory):
    result = low_stock(catalog, inventory)
    assert isinstance(result, list)
    assert all(isinstance(row, tuple) and len(row) == 3 for row in result)


def test_nothing_to_reorder():
    from src.catalog import Catalog
    from src.inventory import Inventory
    assert low_stock(Catalog(), Inventory()) == []
    assert low_stock(Catalog([product("ABC-001")]), Inventory({"ABC-001": 6})) == []


def test_existing_reports_unchanged(service, alice):
    from src.reports import revenue_total
    order = service.place_order(alice.id, [("MUG-001", 1)], today=TODAY)
    service.pay(order.id)
    assert revenue_total([order]) == Decimal("12.00")
