"""Hidden checks: half-up rounding to cents, exact for any size, in every place."""
from decimal import Decimal

import pytest

from evaluation.helpers import TODAY


@pytest.mark.parametrize("raw, expected", [
    ("2.675", "2.68"),
    ("1.005", "1.01"),
    ("0.125", "0.13"),
    ("19.575", "19.58"),
    ("4.5", "4.50"),
    ("10.0049", "10.00"),
    ("12345678901234.565", "12345678901234.57"),
    ("0", "0.00"),
])
def test_to_money_rounds_half_up(raw, expected):
    from src.money import to_money
    for value in (raw, Decimal(raw)):
        result = to_money(value)
        assert isinstance(result, Decimal)
        assert result == Decimal(expected)
        assert result.as_tuple().exponent == -2


def test_to_money_accepts_int():
    from src.money import to_money
    assert str(to_money(7)) == "7.00"


@pytest.mark.parametrize("net, expected", [
    ("2.50", "0.53"),
    ("0.50", "0.11"),
    ("10.50", "2.21"),
    ("100.00", "21.00"),
    ("19.58", "4.11"),
])
def test_vat_rounds_half_up(net, expected):
    from src.pricing import vat
    result = vat(Decimal(net))
    assert result == Decimal(expected)
    assert result.as_tuple().exponent == -2


def test_vat_exact_for_large_amounts():
    from src.pricing import vat
    # 21% of 1000000000000.50 = 210000000000.105
    assert vat(Decimal("1000000000000.50")) == Decimal("210000000000.11")


@pytest.mark.parametrize("price, qty, tier, expected", [
    ("7.25", 3, "gold", "19.58"),
    ("2.50", 11, "standard", "26.13"),
    ("4.50", 3, "standard", "13.50"),
    ("39.90", 11, "standard", "416.96"),
])
def test_line_totals(price, qty, tier, expected):
    from src.pricing import line_total
    assert line_total(Decimal(price), qty, tier) == Decimal(expected)


def test_gold_invoice_end_to_end(service, bob):
    from src.invoices import build_invoice
    order = service.place_order(bob.id, [("TEA-002", 3)], today=TODAY)
    invoice = build_invoice(order, bob)
    assert invoice.net == Decimal("19.58")
    assert invoice.vat == Decimal("4.11")
    assert invoice.total == Decimal("23.69")


def test_small_invoice_vat_end_to_end(service, alice):
    from src.invoices import build_invoice
    order = service.place_order(alice.id, [("BIS-001", 1)], today=TODAY)
    invoice = build_invoice(order, alice)
    assert invoice.vat == Decimal("0.53")
    assert invoice.total == Decimal("3.03")


def test_coupon_discount_rounds_half_up(service, alice):
    from src.invoices import build_invoice
    # 10% of 7.25 = 0.725 -> 0.73
    order = service.place_order(alice.id, [("TEA-002", 1)], coupon="SAVE10", today=TODAY)
    assert order.discount == Decimal("0.73")
    invoice = build_invoice(order, alice)
    assert invoice.net == Decimal("6.52")
    assert invoice.vat == Decimal("1.37")
    assert invoice.total == Decimal("7.89")
