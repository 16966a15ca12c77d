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


def vat(net: Decimal) -> Decimal:
    """VAT due on a net amount, rounded half-up to cents."""
    return to_money(net * VAT_RATE)
