import pytest

from src.errors import OutOfStockError, ValidationError
from src.inventory import Inventory


def test_reserve_reduces_available():
    stock = Inventory({"TEA-001": 10})
    stock.reserve("TEA-001", 4)
    assert stock.available("TEA-001") == 6
    assert stock.on_hand("TEA-001") == 10


def test_reserve_more_than_available():
    stock = Inventory({"TEA-001": 3})
    with pytest.raises(OutOfStockError):
        stock.reserve("TEA-001", 4)


def test_commit_removes_units_from_shelf():
    stock = Inventory({"TEA-001": 10})
    stock.reserve("TEA-001", 4)
    stock.commit("TEA-001", 4)
    assert stock.on_hand("TEA-001") == 6
    assert stock.reserved("TEA-001") == 0


def test_cannot_release_more_than_reserved():
    stock = Inventory({"TEA-001": 10})
    stock.reserve("TEA-001", 2)
    with pytest.raises(ValidationError):
        stock.release("TEA-001", 3)


def test_quantity_must_be_positive():
    with pytest.raises(ValidationError):
        Inventory().restock("TEA-001", 0)
