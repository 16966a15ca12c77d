"""Input validation shared by the catalog, inventory, customers and orders."""
import re

from src.errors import ValidationError

_EMAIL_RE = re.compile(r"[^@\s]+@[^@\s]+\.[a-z]{2,}")
_SKU_RE = re.compile(r"[A-Z]{3}-\d{3}")


def validate_email(email: str) -> str:
    """Return the normalised address (trimmed, lower-case) or raise ValidationError."""
    normalized = email.strip().lower()
    if not _EMAIL_RE.fullmatch(normalized):
        raise ValidationError(f"invalid email address: {email!r}")
    return normalized


def validate_sku(sku: str) -> str:
    """SKUs look like ``TEA-001``: three capital letters, a dash, three digits."""
    if not isinstance(sku, str) or not _SKU_RE.fullmatch(sku):
        raise ValidationError(f"invalid SKU: {sku!r}")
    return sku


def validate_quantity(quantity) -> int:
    """Quantities are whole numbers of at least one unit."""
    if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
        raise ValidationError(f"quantity must be a positive integer, got {quantity!r}")
    return quantity
