"""Product catalog."""
from dataclasses import dataclass
from decimal import Decimal

from src.errors import UnknownProductError, ValidationError
from src.validation import validate_sku


@dataclass(frozen=True)
class Product:
    """A sellable product. Prices are per unit, VAT excluded."""

    sku: str
    name: str
    unit_price: Decimal
    category: str
    active: bool = True


class Catalog:
    """All products the shop knows about, keyed by SKU."""

    def __init__(self, products=()):
        self._products: dict[str, Product] = {}
        for product in products:
            self.add(product)

    def add(self, product: Product) -> None:
        """Add or replace a product after validating it."""
        validate_sku(product.sku)
        if not product.name.strip():
            raise ValidationError(f"{product.sku}: name must not be empty")
        if not isinstance(product.unit_price, Decimal) or product.unit_price < 0:
            raise ValidationError(f"{product.sku}: unit price must be a non-negative Decimal")
        self._products[product.sku] = product

    def lookup(self, sku: str) -> Product:
        """Return the product with this SKU or raise UnknownProductError."""
        try:
            return self._products[sku]
        except KeyError:
            raise UnknownProductError(sku) from None

    def active_products(self) -> list[Product]:
        """Products currently for sale, sorted by SKU."""
        return sorted((p for p in self._products.values() if p.active), key=lambda p: p.sku)

    def by_category(self, category: str) -> list[Product]:
        """Active products of one category, sorted by SKU."""
        return [p for p in self.active_products() if p.category == category]

    def __contains__(self, sku: str) -> bool:
        return sku in self._products

    def __len__(self) -> int:
        return len(self._products)
