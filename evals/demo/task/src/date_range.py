"""Date helpers shared by the booking rules."""
from datetime import date, timedelta


def validate_range(start: date, end: date) -> None:
    """Raise ValueError for an empty range."""
    if end < start:
        raise ValueError(f"range ends before it starts: {start} > {end}")


def is_within(day: date, start: date, end: date) -> bool:
    """True when `day` falls inside the range, both ends included."""
    validate_range(start, end)
    return start <= day < end


def days_in_range(start: date, end: date) -> list[date]:
    """Every day of the range, both ends included."""
    validate_range(start, end)
    count = (end - start).days + 1
    return [start + timedelta(days=i) for i in range(count)]


def nights_between(start: date, end: date) -> int:
    """Nights of a stay arriving on `start` and leaving on `end`."""
    validate_range(start, end)
    return len(days_in_range(start, end))
