"""Shopping cart and price preview."""
from decimal import Decimal

from src.money import total
from src.pricing import line_total
from src.validation import validate_quantity


class Cart:
    """SKUs and quantities a customer intends to buy."""

    def __init__(self):
        self._items: dict[str, int] = {}

    def add(self, sku: str, quantity: int = 1) -> None:
        validate_quantity(quantity)
        self._items[sku] = self._items.get(sku, 0) + quantity

    def remove(self, sku: str) -> None:
        self._items.pop(sku, None)

    def items(self) -> list[tuple[str, int]]:
        return list(self._items.items())

    def is_empty(self) -> bool:
        return not self._items

    def quote(self, catalog, tier: str = "standard") -> Decimal:
        """Subtotal the customer would pay, before coupons and VAT."""
        lines = []
        for sku, quantity in self._items.items():
            product = catalog.lookup(sku)
            lines.append(line_total(product.unit_price, quantity, tier))
        return total(lines)
