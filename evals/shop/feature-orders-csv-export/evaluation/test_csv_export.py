"""Hidden checks for the orders CSV export."""
import csv
import io
from datetime import date
from decimal import Decimal

import pytest

HEADER = "order_id,placed_on,customer_id,status,sku,product,quantity,unit_price,line_total"


def export(orders, **kwargs):
    from src.exports import orders_to_csv
    return orders_to_csv(orders, **kwargs)


def make_order(order_id, lines, status="paid", customer_id=7, placed_on=date(2024, 6, 3)):
    from src.orders import Order, OrderLine
    return Order(order_id, customer_id,
                 [OrderLine(sku, name, "misc", Decimal(price), qty, Decimal(line_total))
                  for sku, name, price, qty, line_total in lines],
                 placed_on, status=status)


@pytest.fixture
def orders():
    return [
        make_order(12, [("POT-001", "Cast iron teapot", "39.90", 1, "39.90")],
                   status="cancelled", placed_on=date(2024, 6, 5)),
        make_order(3, [("TEA-001", "Green tea, 100g", "4.5", 10, "42.75"),
                       ("BIG-001", 'Tea chest "Deluxe", oak', "1234.5", 2, "2469")],
                   status="shipped", customer_id=2, placed_on=date(2024, 1, 9)),
        make_order(7, [("MUG-001", "Stoneware mug", "12.00", 1, "10.80")], status="pending"),
    ]


def test_empty_is_header_only():
    assert export([]) == HEADER + "\n"


def test_exact_document(orders):
    assert export(orders) == (
        HEADER + "\n"
        "3,2024-01-09,2,shipped,TEA-001,\"Green tea, 100g\",10,4.50,42.75\n"
        "3,2024-01-09,2,shipped,BIG-001,\"Tea chest \"\"Deluxe\"\", oak\",2,1234.50,2469.00\n"
        "7,2024-06-03,7,pending,MUG-001,Stoneware mug,1,12.00,10.80\n"
        "12,2024-06-05,7,cancelled,POT-001,Cast iron teapot,1,39.90,39.90\n"
    )


def test_round_trips_through_csv_reader(orders):
    rows = list(csv.reader(io.StringIO(export(orders))))
    assert rows[0] == HEADER.split(",")
    assert [row[5] for row in rows[1:]] == [
        "Green tea, 100g", 'Tea chest "Deluxe", oak', "Stoneware mug", "Cast iron teapot"]
    assert all(len(row) == 9 for row in rows)


def test_unix_line_endings(orders):
    text = export(orders)
    assert "\r" not in text
    assert text.endswith("\n")
    assert text.count("\n") == 5


def test_money_has_two_decimals_no_separators(orders):
    rows = list(csv.DictReader(io.StringIO(export(orders))))
    big = next(row for row in rows if row["sku"] == "BIG-001")
    assert big["unit_price"] == "1234.50"
    assert big["line_total"] == "2469.00"
    tea = next(row for row in rows if row["sku"] == "TEA-001")
    assert tea["unit_price"] == "4.50"


@pytest.mark.parametrize("statuses, expected_ids", [
    ({"shipped"}, ["3", "3"]),
    (["pending", "cancelled"], ["7", "12"]),
    (("paid",), []),
    (set(), []),
])
def test_status_filter(orders, statuses, expected_ids):
    text = export(orders, statuses=statuses)
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == HEADER.split(",")
    assert [row[0] for row in rows[1:]] == expected_ids


def test_default_exports_everything(orders):
    rows = list(csv.reader(io.StringIO(export(orders, statuses=None))))
    assert [row[3] for row in rows[1:]] == ["shipped", "shipped", "pending", "cancelled"]


def test_orders_from_service(service, alice):
    from evaluation.helpers import TODAY
    order = service.place_order(alice.id, [("MUG-001", 2)], today=TODAY)
    service.pay(order.id)
    assert export([order]).splitlines() == [
        HEADER, "1,2024-06-03,1,paid,MUG-001,Stoneware mug,2,12.00,24.00"]
