"""Pricing rules: bulk and loyalty discounts, VAT."""
from decimal import Decimal

from src.errors import ValidationError
from src.money import to_money

BULK_THRESHOLD = 10
BULK_DISCOUNT = Decimal("0.05")
TIER_DISCOUNTS = {"standard": Decimal("0.00"), "gold": Decimal("0.10")}
VAT_RATE = Decimal("0.21")


def tier_discount(tier: str) -> Decimal:
    """Loyalty discount rate for a customer tier."""
    try:
        return TIER_DISCOUNTS[tier]
    except KeyError:
        raise ValidationError(f"unknown customer tier: {tier!r}") from None


def line_total(unit_price: Decimal, quantity: int, tier: str = "standard") -> Decimal:
    """Price of one order line after bulk and loyalty discounts, in cents.

    Buying BULK_THRESHOLD units or more of one product adds BULK_DISCOUNT
    to the customer's loyalty discount.
    """
    rate = tier_discount(tier)
    if quantity >= BULK_THRESHOLD:
        rate += BULK_DISCOUNT
    return to_money(unit_price * quantity * (1 - rate))


def vat(net: Decimal) -> Decimal:
    """VAT due on a net amount, rounded half-up to cents."""
    return to_money(net * VAT_RATE)
