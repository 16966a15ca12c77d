from datetime import date
from decimal import Decimal

import pytest

from src.reports import daily_revenue, revenue_by_category, revenue_total, sales_summary, top_products
from tests.conftest import TODAY


@pytest.fixture
def orders(service, alice, bob):
    first = service.place_order(alice.id, [("TEA-001", 4), ("MUG-001", 1)], today=TODAY)
    second = service.place_order(bob.id, [("TEA-002", 2)], today=date(2024, 6, 4))
    third = service.place_order(alice.id, [("POT-001", 1)], today=TODAY)
    pending = service.place_order(alice.id, [("BIS-001", 9)], today=TODAY)
    service.pay(first.id)
    service.pay(second.id)
    service.ship(second.id)
    service.cancel(third.id)
    return [first, second, third, pending]


def test_revenue_total_counts_paid_and_shipped(orders):
    assert revenue_total(orders) == Decimal("43.05")


def test_revenue_by_category(orders):
    assert revenue_by_category(orders) == {"kitchen": Decimal("12.00"), "tea": Decimal("31.05")}


def test_top_products(orders):
    assert top_products(orders) == [("TEA-001", 4), ("TEA-002", 2), ("MUG-001", 1)]


def test_daily_revenue(orders):
    assert daily_revenue(orders) == {TODAY: Decimal("30.00"), date(2024, 6, 4): Decimal("13.05")}


def test_sales_summary(orders):
    assert sales_summary(orders).splitlines() == [
        "Orders: 2",
        "Revenue: 43.05 EUR",
        "Best sellers: TEA-001 (4), TEA-002 (2), MUG-001 (1)",
    ]


def test_no_sales():
    assert revenue_total([]) == Decimal("0.00")
    assert "Best sellers: none" in sales_summary([])
