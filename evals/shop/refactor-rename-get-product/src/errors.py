"""Domain errors raised by the shop backend.

Every error derives from ShopError so the API layer can map them to HTTP
responses in one place: lookup errors also derive from KeyError (404) and
input errors from ValueError (400).
"""


class ShopError(Exception):
    """Base class for all shop errors."""


class ValidationError(ShopError, ValueError):
    """Input data is malformed or out of range."""


class UnknownProductError(ShopError, KeyError):
    """No product with the given SKU exists in the catalog."""


class UnknownCustomerError(ShopError, KeyError):
    """No customer with the given id exists."""


class UnknownOrderError(ShopError, KeyError):
    """No order with the given id exists."""


class DuplicateCustomerError(ShopError):
    """A customer with the same email address is already registered."""


class OutOfStockError(ShopError):
    """Not enough stock is available to reserve the requested quantity."""


class InvalidTransitionError(ShopError):
    """The order cannot move to the requested status from its current one."""


class InvalidCouponError(ValidationError):
    """The coupon code is unknown, expired or not applicable to the order."""
