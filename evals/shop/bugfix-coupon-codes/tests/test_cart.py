from decimal import Decimal

from src.cart import Cart


def test_empty_cart_quotes_zero(catalog):
    cart = Cart()
    assert cart.is_empty()
    assert cart.quote(catalog) == Decimal("0.00")


def test_adding_twice_merges(catalog):
    cart = Cart()
    cart.add("TEA-001", 2)
    cart.add("TEA-001", 3)
    assert cart.items() == [("TEA-001", 5)]
    assert cart.quote(catalog) == Decimal("22.50")


def test_quote_applies_tier_and_bulk(catalog):
    cart = Cart()
    cart.add("TEA-001", 10)
    cart.add("MUG-001", 1)
    assert cart.quote(catalog, "gold") == Decimal("49.05")


def test_remove(catalog):
    cart = Cart()
    cart.add("MUG-001")
    cart.remove("MUG-001")
    assert cart.is_empty()
