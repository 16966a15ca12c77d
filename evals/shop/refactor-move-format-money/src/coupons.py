"""Coupon codes."""
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from src.errors import InvalidCouponError
from src.money import ZERO, to_money


@dataclass(frozen=True)
class Coupon:
    """A discount code: a percentage off, a fixed amount off, or both."""

    code: str
    percent_off: Decimal = Decimal("0")
    amount_off: Decimal = ZERO
    min_subtotal: Decimal = ZERO
    expires_on: date | None = None  # last day the coupon can be used


class CouponBook:
    """The coupons currently on offer. Codes are case-insensitive."""

    def __init__(self, coupons=()):
        self._coupons: dict[str, Coupon] = {}
        for coupon in coupons:
            self.add(coupon)

    def add(self, coupon: Coupon) -> None:
        self._coupons[coupon.code.strip().upper()] = coupon

    def get(self, code: str) -> Coupon:
        """Return the coupon for a code typed by a customer."""
        try:
            return self._coupons[code.strip().upper()]
        except KeyError:
            raise InvalidCouponError(f"unknown coupon code: {code!r}") from None

    def discount_for(self, code: str, subtotal: Decimal, today: date) -> Decimal:
        """Discount granted by a coupon on an order subtotal.

        The discount never exceeds the subtotal. Raises InvalidCouponError
        for unknown or expired codes and when the minimum spend is not met.
        """
        coupon = self.get(code)
        if coupon.expires_on is not None and today > coupon.expires_on:
            raise InvalidCouponError(f"coupon {coupon.code} expired on {coupon.expires_on}")
        if subtotal < coupon.min_subtotal:
            raise InvalidCouponError(f"coupon {coupon.code} needs a subtotal of {coupon.min_subtotal}")
        discount = to_money(subtotal * coupon.percent_off / 100 + coupon.amount_off)
        return min(discount, subtotal)
