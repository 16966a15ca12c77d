from datetime import date
from decimal import Decimal

import pytest

from src.catalog import Catalog, Product
from src.coupons import Coupon, CouponBook
from src.customers import CustomerRegistry
from src.inventory import Inventory
from src.orders import OrderService

TODAY = date(2024, 6, 3)


@pytest.fixture
def catalog():
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
    return Inventory({"TEA-001": 100, "TEA-002": 20, "MUG-001": 10,
                      "POT-001": 3, "BIS-001": 50, "OLD-001": 5})


@pytest.fixture
def customers():
    registry = CustomerRegistry()
    registry.register("Alice Archer", "alice@example.com")
    registry.register("Bob Baker", "bob@example.com", tier="gold")
    return registry


@pytest.fixture
def coupons():
    return CouponBook([
        Coupon("SAVE10", percent_off=Decimal("10"), expires_on=date(2024, 6, 30)),
        Coupon("FIVEOFF", amount_off=Decimal("5.00"), min_subtotal=Decimal("20.00")),
    ])


@pytest.fixture
def service(catalog, inventory, customers, coupons):
    return OrderService(catalog, inventory, customers, coupons)


@pytest.fixture
def alice(customers):
    return customers.find_by_email("alice@example.com")


@pytest.fixture
def bob(customers):
    return customers.find_by_email("bob@example.com")
