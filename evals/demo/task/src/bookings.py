"""Booking rules for the guest house."""
from datetime import date

from src.date_range import is_within, nights_between

NIGHTLY_RATE = 80


def price(arrival: date, departure: date) -> int:
    return nights_between(arrival, departure) * NIGHTLY_RATE


def overlaps_closure(arrival: date, departure: date, closed_from: date, closed_to: date) -> bool:
    """A stay overlaps a closure when any of its days falls in the closure."""
    return is_within(arrival, closed_from, closed_to) or is_within(departure, closed_from, closed_to)
