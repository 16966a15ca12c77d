"""Shared fixtures for the hidden evaluation.

Run from the task root: python3 -m pytest -q -p no:cacheprovider evaluation
"""
import sys
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def catalog():
    from src.catalog import Catalog, Product
    return Catalog([
        Product("TEA-001", "Green tea, 100g", Decimal("4.50"), "tea"),
        Product("TEA-002", "Earl Grey, 250g", Decimal("7.25"), "tea"),
        Product("MUG-001", "Stoneware mug", Decimal("12.00"), "kitchen"),
        Product("POT-001", "Cast iron teapot", Decimal("39.90"), "kitchen"),
        Product("BIS-001", "Shortbread biscuits", Decimal("2.50"), "snacks"),
        Product("OLD-001", "Winter sampler", Decimal("9.99"), "tea", active=False),
    ])


@pytest.fixture
def inventory():
    from src.inventory import Inventory
    return Inventory({"TEA-001": 100, "TEA-002": 20, "MUG-001": 10,
                      "POT-001": 3, "BIS-001": 50, "OLD-001": 5})


@pytest.fixture
def customers():
    from src.customers import CustomerRegistry
    registry = CustomerRegistry()
    registry.register("Alice Archer", "alice@example.com")
    registry.register("Bob Baker", "bob@example.com", tier="gold")
    return registry


@pytest.fixture
def coupons():
    from src.coupons import Coupon, CouponBook
    return CouponBook([
        Coupon("SAVE10", percent_off=Decimal("10"), expires_on=date(2024, 6, 30)),
        Coupon("FIVEOFF", amount_off=Decimal("5.00"), min_subtotal=Decimal("20.00")),
    ])


@pytest.fixture
def service(catalog, inventory, customers, coupons):
    from src.orders import OrderService
    return OrderService(catalog, inventory, customers, coupons)


@pytest.fixture
def alice(customers):
    return customers.get(1)


@pytest.fixture
def bob(customers):
    return customers.get(2)
