"""Hidden checks for the shipping fee."""
from decimal import Decimal

import pytest

from evaluation.helpers import TODAY


@pytest.mark.parametrize("net, fee", [
    ("0.00", "4.95"),
    ("2.50", "4.95"),
    ("49.99", "4.95"),
    ("50.00", "0.00"),
    ("50.01", "0.00"),
    ("1000.00", "0.00"),
])
def test_shipping_fee_rule(net, fee):
    from src.pricing import shipping_fee
    result = shipping_fee(Decimal(net))
    assert isinstance(result, Decimal)
    assert result == Decimal(fee)


def invoice_for(service, customer, items, **kwargs):
    from src.invoices import build_invoice
    order = service.place_order(customer.id, items, today=TODAY, **kwargs)
    return build_invoice(order, customer)


def test_small_order_pays_shipping_without_vat_on_it(service, alice):
    invoice = invoice_for(service, alice, [("MUG-001", 2)])
    assert invoice.net == Decimal("24.00")
    assert invoice.vat == Decimal("5.04")
    assert invoice.shipping == Decimal("4.95")
    assert invoice.total == Decimal("33.99")


def test_exactly_fifty_ships_free(service, alice):
    invoice = invoice_for(service, alice, [("MUG-001", 3), ("TEA-001", 2), ("BIS-001", 2)])
    assert invoice.net == Decimal("50.00")
    assert invoice.shipping == Decimal("0.00")
    assert invoice.total == Decimal("60.50")


def test_threshold_uses_amount_after_loyalty_discount(service, bob):
    # 5 mugs = 60.00 list price, 54.00 for a gold customer -> free
    invoice = invoice_for(service, bob, [("MUG-001", 5)])
    assert invoice.net == Decimal("54.00")
    assert invoice.shipping == Decimal("0.00")
    # 4 mugs = 48.00 list price, 43.20 for gold -> charged
    invoice = invoice_for(service, bob, [("MUG-001", 4)])
    assert invoice.shipping == Decimal("4.95")


def test_threshold_uses_amount_after_coupon(service, alice):
    # 39.90 + 12.00 = 51.90, minus 5.00 coupon = 46.90 -> charged
    invoice = invoice_for(service, alice, [("POT-001", 1), ("MUG-001", 1)], coupon="FIVEOFF")
    assert invoice.net == Decimal("46.90")
    assert invoice.vat == Decimal("9.85")
    assert invoice.shipping == Decimal("4.95")
    assert invoice.total == Decimal("61.70")


def test_large_order_free(service, alice):
    invoice = invoice_for(service, alice, [("POT-001", 2)])
    assert invoice.shipping == Decimal("0.00")
    assert invoice.total == Decimal("96.56")


def test_render_shows_shipping_before_total(service, alice):
    from src.invoices import render_invoice
    lines = render_invoice(invoice_for(service, alice, [("MUG-001", 2)])).splitlines()
    assert lines[-2:] == ["Shipping: 4.95 EUR", "Total: 33.99 EUR"]
    assert "VAT 21%: 5.04 EUR" in lines


def test_render_free_shipping(service, alice):
    from src.invoices import render_invoice
    lines = render_invoice(invoice_for(service, alice, [("POT-001", 2)])).splitlines()
    assert lines[-2:] == ["Shipping: 0.00 EUR", "Total: 96.56 EUR"]
