import pytest

from src.customers import CustomerRegistry
from src.errors import DuplicateCustomerError, UnknownCustomerError, ValidationError


def test_register_assigns_ids():
    registry = CustomerRegistry()
    first = registry.register("Ann", "ann@example.com")
    second = registry.register("Ben", "ben@example.com", tier="gold")
    assert (first.id, second.id) == (1, 2)
    assert registry.get(2).tier == "gold"


def test_duplicate_email_rejected():
    registry = CustomerRegistry()
    registry.register("Ann", "ann@example.com")
    with pytest.raises(DuplicateCustomerError):
        registry.register("Ann again", "ann@example.com")


def test_invalid_email_rejected():
    with pytest.raises(ValidationError):
        CustomerRegistry().register("Ann", "not-an-email")


def test_unknown_tier_rejected():
    with pytest.raises(ValidationError):
        CustomerRegistry().register("Ann", "ann@example.com", tier="platinum")


def test_unknown_customer():
    with pytest.raises(UnknownCustomerError):
        CustomerRegistry().get(42)
