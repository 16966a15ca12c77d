"""Hidden checks: email normalisation, duplicate detection, case-insensitive lookup, validity."""
import pytest


def registry_with_ann():
    from src.customers import CustomerRegistry
    registry = CustomerRegistry()
    registry.register("Ann", "ann@example.com")
    return registry


@pytest.mark.parametrize("variant", ["Ann@Example.com", "ANN@EXAMPLE.COM", " ann@example.com",
                                     "ann@example.com\t", "  Ann@example.COM  "])
def test_duplicates_after_normalisation(variant):
    from src.errors import DuplicateCustomerError
    registry = registry_with_ann()
    with pytest.raises(DuplicateCustomerError):
        registry.register("Ann again", variant)
    assert len(registry.all()) == 1


def test_duplicate_when_first_registration_was_not_normalised():
    from src.customers import CustomerRegistry
    from src.errors import DuplicateCustomerError
    registry = CustomerRegistry()
    registry.register("Ann", "  Ann@Example.COM ")
    with pytest.raises(DuplicateCustomerError):
        registry.register("Ann", "ann@example.com")


def test_stored_email_is_normalised():
    from src.customers import CustomerRegistry
    customer = CustomerRegistry().register("Ann", "  Ann@Example.COM ")
    assert customer.email == "ann@example.com"


def test_validator_returns_normalised_address():
    from src.validation import validate_email
    assert validate_email(" Bob.Baker+tea@Mail.Example.ORG ") == "bob.baker+tea@mail.example.org"


@pytest.mark.parametrize("query", ["ann@example.com", "ANN@Example.Com", " ann@example.com "])
def test_find_by_email_is_case_insensitive(query):
    registry = registry_with_ann()
    found = registry.find_by_email(query)
    assert found is not None and found.name == "Ann"


def test_find_by_email_missing_returns_none():
    assert registry_with_ann().find_by_email("bob@example.com") is None


@pytest.mark.parametrize("bad", [
    "ann smith@example.com",
    "ann@exa mple.com",
    "ann@@example.com",
    "ann@ex@ample.com",
    "@example.com",
    "ann@",
    "ann@example",
    "ann@example.c",
    "ann@example.com\nbob@example.com",
    "",
    "   ",
])
def test_invalid_addresses_rejected(bad):
    from src.customers import CustomerRegistry
    from src.errors import ValidationError
    from src.validation import validate_email
    with pytest.raises(ValidationError):
        validate_email(bad)
    registry = CustomerRegistry()
    with pytest.raises(ValidationError):
        registry.register("Ann", bad)
    assert registry.all() == []


@pytest.mark.parametrize("good", ["ann@example.com", "ann.smith+shop@mail.example.co.uk", "a@b.io"])
def test_valid_addresses_accepted(good):
    from src.validation import validate_email
    assert validate_email(good) == good


def test_different_addresses_still_register():
    registry = registry_with_ann()
    bob = registry.register("Bob", "Bob@Example.com")
    assert bob.id == 2
    assert [c.email for c in registry.all()] == ["ann@example.com", "bob@example.com"]
