"""Order placement and the order life cycle."""
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from src.coupons import CouponBook
from src.errors import (InvalidTransitionError, OutOfStockError, ShopError, UnknownOrderError,
                        ValidationError)
from src.money import ZERO, total
from src.pricing import line_total
from src.validation import validate_quantity

PENDING = "pending"
PAID = "paid"
SHIPPED = "shipped"
CANCELLED = "cancelled"

_NEXT_STATUSES = {
    PENDING: {PAID, CANCELLED},
    PAID: {SHIPPED, CANCELLED},
    SHIPPED: set(),
    CANCELLED: set(),
}


@dataclass(frozen=True)
class OrderLine:
    sku: str
    name: str
    category: str
    unit_price: Decimal
    quantity: int
    total: Decimal  # after bulk and loyalty discounts


@dataclass
class Order:
    id: int
    customer_id: int
    lines: list[OrderLine]
    placed_on: date
    status: str = PENDING
    discount: Decimal = ZERO  # coupon discount on the whole order
    coupon_code: str | None = None

    @property
    def subtotal(self) -> Decimal:
        return total(line.total for line in self.lines)

    @property
    def net_total(self) -> Decimal:
        """What the customer pays before VAT."""
        return self.subtotal - self.discount


class OrderService:
    """Places orders and moves them through pending -> paid -> shipped."""

    def __init__(self, catalog, inventory, customers, coupons: CouponBook | None = None):
        self._catalog = catalog
        self._inventory = inventory
        self._customers = customers
        self._coupons = coupons or CouponBook()
        self._orders: dict[int, Order] = {}
        self._next_id = 1

    def place_order(self, customer_id: int, items, coupon: str | None = None,
                    today: date | None = None) -> Order:
        """Create a pending order from ``(sku, quantity)`` pairs and reserve its stock.

        Lines for the same SKU are merged. Nothing is reserved if the order
        is rejected.
        """
        customer = self._customers.get(customer_id)
        today = today or date.today()
        quantities: dict[str, int] = {}
        for sku, quantity in items:
            validate_quantity(quantity)
            quantities[sku] = quantities.get(sku, 0) + quantity
        if not quantities:
            raise ValidationError("an order needs at least one line")

        lines = []
        for sku, quantity in quantities.items():
            product = self._catalog.lookup(sku)
            if not product.active:
                raise ValidationError(f"{sku} is no longer for sale")
            price = line_total(product.unit_price, quantity, customer.tier)
            lines.append(OrderLine(sku, product.name, product.category,
                                   product.unit_price, quantity, price))

        discount, coupon_code = ZERO, None
        if coupon is not None:
            try:
                discount = self._coupons.discount_for(coupon, total(l.total for l in lines), today)
                coupon_code = self._coupons.get(coupon).code
            except (KeyError, ShopError):
                # A coupon problem must never block a sale: charge the full price.
                discount, coupon_code = ZERO, None

        self._reserve_all(lines)
        order = Order(self._next_id, customer.id, lines, today,
                      discount=discount, coupon_code=coupon_code)
        self._orders[order.id] = order
        self._next_id += 1
        return order

    def _reserve_all(self, lines: list[OrderLine]) -> None:
        """Reserve every line or, if one is out of stock, none of them."""
        reserved = []
        try:
            for line in lines:
                self._inventory.reserve(line.sku, line.quantity)
                reserved.append(line)
        except OutOfStockError:
            for line in reserved:
                self._inventory.release(line.sku, line.quantity)
            raise

    def get(self, order_id: int) -> Order:
        try:
            return self._orders[order_id]
        except KeyError:
            raise UnknownOrderError(order_id) from None

    def all_orders(self) -> list[Order]:
        return list(self._orders.values())

    def pay(self, order_id: int) -> Order:
        order = self.get(order_id)
        self._move(order, PAID)
        return order

    def ship(self, order_id: int) -> Order:
        """Ship a paid order: its reserved units leave the warehouse."""
        order = self.get(order_id)
        self._check_move(order, SHIPPED)
        for line in order.lines:
            self._inventory.commit(line.sku, line.quantity)
        order.status = SHIPPED
        return order

    def cancel(self, order_id: int) -> Order:
        """Cancel a pending or paid order and give its stock back."""
        order = self.get(order_id)
        self._check_move(order, CANCELLED)
        for line in order.lines:
            self._inventory.release(line.sku, line.quantity)
        order.status = CANCELLED
        return order

    def _check_move(self, order: Order, status: str) -> None:
        if status not in _NEXT_STATUSES[order.status]:
            raise InvalidTransitionError(f"order {order.id} is {order.status}, cannot become {status}")

    def _move(self, order: Order, status: str) -> None:
        self._check_move(order, status)
        order.status = status
