from decimal import Decimal

import pytest

from src.catalog import Catalog, Product
from src.errors import UnknownProductError, ValidationError


def test_lookup_returns_product(catalog):
    assert catalog.lookup("TEA-002").name == "Earl Grey, 250g"


def test_lookup_unknown_sku(catalog):
    with pytest.raises(UnknownProductError):
        catalog.lookup("TEA-999")


def test_active_products_are_sorted_and_exclude_inactive(catalog):
    skus = [p.sku for p in catalog.active_products()]
    assert skus == ["BIS-001", "MUG-001", "POT-001", "TEA-001", "TEA-002"]


def test_by_category(catalog):
    assert [p.sku for p in catalog.by_category("kitchen")] == ["MUG-001", "POT-001"]


def test_rejects_negative_price():
    with pytest.raises(ValidationError):
        Catalog([Product("TEA-003", "Bad tea", Decimal("-1.00"), "tea")])


def test_rejects_malformed_sku():
    with pytest.raises(ValidationError):
        Catalog([Product("tea-3", "Bad tea", Decimal("1.00"), "tea")])
