"""Invoices for placed orders."""
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from src.errors import ValidationError
from src.money import to_money
from src.pricing import VAT_RATE, vat


@dataclass(frozen=True)
class Invoice:
    number: str
    order_id: int
    customer_name: str
    customer_email: str
    issued_on: date
    lines: tuple
    subtotal: Decimal
    discount: Decimal
    net: Decimal
    vat: Decimal
    total: Decimal


def build_invoice(order, customer, issued_on: date | None = None) -> Invoice:
    """Invoice an order. Cancelled orders cannot be invoiced."""
    if order.status == "cancelled":
        raise ValidationError(f"order {order.id} is cancelled and cannot be invoiced")
    net = order.net_total
    tax = vat(net)
    return Invoice(
        number=f"INV-{order.id:05d}",
        order_id=order.id,
        customer_name=customer.name,
        customer_email=customer.email,
        issued_on=issued_on or order.placed_on,
        lines=tuple(order.lines),
        subtotal=order.subtotal,
        discount=order.discount,
        net=net,
        vat=tax,
        total=net + tax,
    )


def format_money(amount: Decimal) -> str:
    """Format an amount for people: ``1,234.50 EUR``."""
    return f"{to_money(amount):,.2f} EUR"


def render_invoice(invoice: Invoice) -> str:
    """Plain-text invoice, as attached to the confirmation email."""
    rows = [
        f"Invoice {invoice.number}",
        f"Date: {invoice.issued_on.isoformat()}",
        f"Bill to: {invoice.customer_name} <{invoice.customer_email}>",
        "",
    ]
    for line in invoice.lines:
        rows.append(f"{line.quantity} x {line.name} ({line.sku}) @ "
                    f"{format_money(line.unit_price)} = {format_money(line.total)}")
    rows.append("")
    rows.append(f"Subtotal: {format_money(invoice.subtotal)}")
    if invoice.discount:
        rows.append(f"Discount: -{format_money(invoice.discount)}")
    rows.append(f"VAT {VAT_RATE * 100:.0f}%: {format_money(invoice.vat)}")
    rows.append(f"Total: {format_money(invoice.total)}")
    return "\n".join(rows)
