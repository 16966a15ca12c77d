"""Sales reports over a list of orders.

Only paid and shipped orders count as sales; pending and cancelled ones
are ignored everywhere.
"""
from collections import Counter, defaultdict
from datetime import date
from decimal import Decimal

from src.invoices import format_money
from src.money import ZERO, total

REVENUE_STATUSES = ("paid", "shipped")


def _sales(orders):
    return [order for order in orders if order.status in REVENUE_STATUSES]


def revenue_total(orders) -> Decimal:
    """Net revenue (after coupons, before VAT)."""
    return total(order.net_total for order in _sales(orders))


def revenue_by_category(orders) -> dict[str, Decimal]:
    """Line totals per product category, before order-level coupons."""
    result: dict[str, Decimal] = defaultdict(lambda: ZERO)
    for order in _sales(orders):
        for line in order.lines:
            result[line.category] += line.total
    return dict(sorted(result.items()))


def top_products(orders, limit: int = 3) -> list[tuple[str, int]]:
    """Best sellers by units sold; ties are broken by SKU."""
    units: Counter = Counter()
    for order in _sales(orders):
        for line in order.lines:
            units[line.sku] += line.quantity
    ranked = sorted(units.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:limit]


def daily_revenue(orders) -> dict[date, Decimal]:
    """Net revenue per day the orders were placed, oldest first."""
    result: dict[date, Decimal] = defaultdict(lambda: ZERO)
    for order in _sales(orders):
        result[order.placed_on] += order.net_total
    return dict(sorted(result.items()))


def sales_summary(orders) -> str:
    """A few lines for the daily sales email."""
    sales = _sales(orders)
    best = ", ".join(f"{sku} ({units})" for sku, units in top_products(sales))
    return "\n".join([
        f"Orders: {len(sales)}",
        f"Revenue: {format_money(revenue_total(sales))}",
        f"Best sellers: {best or 'none'}",
    ])
