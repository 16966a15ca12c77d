"""Hidden checks: one line pricing rule in pricing.line_total, used by cart and orders."""
import ast
import inspect
from decimal import Decimal

import pytest

from evaluation.helpers import ROOT, TODAY, python_files, source_tree

DETAILS = {"BULK_THRESHOLD", "BULK_DISCOUNT", "tier_discount", "TIER_DISCOUNTS"}


@pytest.mark.parametrize("price, qty, tier, expected", [
    ("4.50", 3, "standard", "13.50"),
    ("4.50", 9, "standard", "40.50"),
    ("4.50", 10, "standard", "42.75"),
    ("12.00", 1, "gold", "10.80"),
    ("4.50", 10, "gold", "38.25"),
    ("7.25", 3, "gold", "19.58"),
    ("2.50", 11, "standard", "26.13"),
    ("0.00", 5, "gold", "0.00"),
])
def test_line_total(price, qty, tier, expected):
    from src.pricing import line_total
    result = line_total(Decimal(price), qty, tier)
    assert result == Decimal(expected)
    assert result.as_tuple().exponent == -2


def test_default_tier_is_standard():
    from src.pricing import line_total
    assert line_total(Decimal("12.00"), 2) == Decimal("24.00")
    params = list(inspect.signature(line_total).parameters.values())
    assert [p.name for p in params] == ["unit_price", "quantity", "tier"]
    assert params[2].default == "standard"


def test_unknown_tier_raises_validation_error():
    from src.errors import ValidationError
    from src.pricing import line_total
    with pytest.raises(ValidationError):
        line_total(Decimal("1.00"), 1, "platinum")


def names_used(tree):
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name)
    return found


def calls_to(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Name) and n.func.id == name)
        or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


@pytest.mark.parametrize("rel", ["src/cart.py", "src/orders.py"])
def test_callers_use_line_total(rel):
    tree = source_tree(rel)
    assert calls_to(tree, "line_total"), f"{rel} must price lines with line_total"
    leaked = names_used(tree) & DETAILS
    assert not leaked, f"{rel} still deals with discount details: {sorted(leaked)}"


def test_bulk_rule_lives_in_pricing_only():
    """No module other than pricing deals with the bulk rule."""
    users = []
    for path in python_files("src"):
        if path.name == "pricing.py":
            continue
        used = names_used(ast.parse(path.read_text()))
        if used & {"BULK_THRESHOLD", "BULK_DISCOUNT"}:
            users.append(path.relative_to(ROOT).as_posix())
    assert users == []


def test_cart_and_orders_agree(service, catalog, bob, alice):
    from src.cart import Cart
    for customer, items in ((bob, [("TEA-001", 10), ("TEA-002", 3), ("MUG-001", 1)]),
                            (alice, [("BIS-001", 11), ("POT-001", 1)])):
        cart = Cart()
        for sku, qty in items:
            cart.add(sku, qty)
        order = service.place_order(customer.id, cart.items(), today=TODAY)
        assert cart.quote(catalog, customer.tier) == order.subtotal
    assert service.get(1).subtotal == Decimal("68.63")
    assert service.get(2).subtotal == Decimal("66.03")


def test_empty_cart_quote(catalog):
    from src.cart import Cart
    assert Cart().quote(catalog, "gold") == Decimal("0.00")
