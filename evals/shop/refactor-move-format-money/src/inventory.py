"""Stock levels: units on the shelf and units reserved by open orders."""
from src.errors import OutOfStockError, ValidationError
from src.validation import validate_quantity


class Inventory:
    """Tracks, per SKU, units on hand and units reserved for placed orders."""

    def __init__(self, on_hand: dict[str, int] | None = None):
        self._on_hand: dict[str, int] = dict(on_hand or {})
        self._reserved: dict[str, int] = {}

    def on_hand(self, sku: str) -> int:
        return self._on_hand.get(sku, 0)

    def reserved(self, sku: str) -> int:
        return self._reserved.get(sku, 0)

    def available(self, sku: str) -> int:
        """Units that can still be promised to a new order."""
        return self.on_hand(sku) - self.reserved(sku)

    def restock(self, sku: str, quantity: int) -> None:
        """Put units on the shelf (deliveries, returns)."""
        validate_quantity(quantity)
        self._on_hand[sku] = self.on_hand(sku) + quantity

    def reserve(self, sku: str, quantity: int) -> None:
        """Hold units for an order; raise OutOfStockError if there are not enough."""
        validate_quantity(quantity)
        if quantity > self.available(sku):
            raise OutOfStockError(
                f"{sku}: {quantity} requested, only {self.available(sku)} available"
            )
        self._reserved[sku] = self.reserved(sku) + quantity

    def release(self, sku: str, quantity: int) -> None:
        """Give back reserved units, e.g. when an order is cancelled."""
        validate_quantity(quantity)
        if quantity > self.reserved(sku):
            raise ValidationError(f"{sku}: cannot release {quantity}, only {self.reserved(sku)} reserved")
        self._reserved[sku] = self.reserved(sku) - quantity

    def commit(self, sku: str, quantity: int) -> None:
        """Ship reserved units: they leave both the reservation and the shelf."""
        self.release(sku, quantity)
        self._on_hand[sku] = self.on_hand(sku) - quantity
