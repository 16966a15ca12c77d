"""Customer accounts."""
from dataclasses import dataclass

from src.errors import DuplicateCustomerError, UnknownCustomerError, ValidationError
from src.pricing import TIER_DISCOUNTS
from src.validation import validate_email


@dataclass
class Customer:
    id: int
    name: str
    email: str
    tier: str = "standard"


class CustomerRegistry:
    """In-memory customer accounts. Email addresses are unique."""

    def __init__(self):
        self._customers: dict[int, Customer] = {}
        self._next_id = 1

    def register(self, name: str, email: str, tier: str = "standard") -> Customer:
        """Create an account; raise DuplicateCustomerError if the email is taken."""
        if not name.strip():
            raise ValidationError("customer name must not be empty")
        if tier not in TIER_DISCOUNTS:
            raise ValidationError(f"unknown customer tier: {tier!r}")
        email = validate_email(email)
        if self.find_by_email(email) is not None:
            raise DuplicateCustomerError(email)
        customer = Customer(id=self._next_id, name=name.strip(), email=email, tier=tier)
        self._customers[customer.id] = customer
        self._next_id += 1
        return customer

    def get(self, customer_id: int) -> Customer:
        """Return the customer or raise UnknownCustomerError."""
        try:
            return self._customers[customer_id]
        except KeyError:
            raise UnknownCustomerError(customer_id) from None

    def find_by_email(self, email: str) -> Customer | None:
        """The customer with this address (case-insensitive), or None."""
        wanted = email.strip().lower()
        for customer in self._customers.values():
            if customer.email == wanted:
                return customer
        return None

    def all(self) -> list[Customer]:
        return list(self._customers.values())
