"""Money helpers.

All amounts are ``decimal.Decimal`` values in euros, rounded half-up to
whole cents. Never use float for money.
"""
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")


def to_money(value) -> Decimal:
    """Convert an int, str or Decimal to an amount rounded half-up to cents."""
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def total(amounts) -> Decimal:
    """Sum amounts; an empty sum is ``0.00``."""
    return sum(amounts, ZERO)
