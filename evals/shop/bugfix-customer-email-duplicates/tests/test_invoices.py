from decimal import Decimal

import pytest

from src.errors import ValidationError
from src.invoices import build_invoice, format_money, render_invoice
from tests.conftest import TODAY


def test_invoice_amounts(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2), ("TEA-001", 1)], today=TODAY)
    invoice = build_invoice(order, alice)
    assert invoice.number == "INV-00001"
    assert invoice.net == Decimal("28.50")
    assert invoice.vat == Decimal("5.99")
    assert invoice.total == Decimal("34.49")


def test_invoice_with_coupon(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon="FIVEOFF", today=TODAY)
    invoice = build_invoice(order, alice)
    assert invoice.discount == Decimal("5.00")
    assert invoice.total == Decimal("22.99")


def test_cancelled_order_cannot_be_invoiced(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 1)], today=TODAY)
    service.cancel(order.id)
    with pytest.raises(ValidationError):
        build_invoice(order, alice)


def test_format_money():
    assert format_money(Decimal("1234.5")) == "1,234.50 EUR"


def test_render_invoice(service, alice):
    order = service.place_order(alice.id, [("MUG-001", 2)], today=TODAY)
    text = render_invoice(build_invoice(order, alice))
    assert "Invoice INV-00001" in text
    assert "2 x Stoneware mug (MUG-001) @ 12.00 EUR = 24.00 EUR" in text
    assert "VAT 21%: 5.04 EUR" in text
    assert text.endswith("Total: 29.04 EUR")
