"""Hidden checks: format_money lives in src.money only; reports no longer depend on invoices."""
import ast
from datetime import date
from decimal import Decimal

import pytest

from evaluation.helpers import ROOT, TODAY, python_files, source_tree


@pytest.mark.parametrize("amount, text", [
    (Decimal("1234.5"), "1,234.50 EUR"),
    (Decimal("0"), "0.00 EUR"),
    (Decimal("2.675"), "2.68 EUR"),
    (Decimal("1234567.891"), "1,234,567.89 EUR"),
    (Decimal("-3.5"), "-3.50 EUR"),
    (7, "7.00 EUR"),
])
def test_money_format_money(amount, text):
    from src.money import format_money
    assert format_money(amount) == text


def test_defined_only_in_money_module():
    definers = []
    for path in python_files("src"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "format_money":
                definers.append(path.relative_to(ROOT).as_posix())
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "format_money" for t in node.targets):
                definers.append(path.relative_to(ROOT).as_posix() + " (assignment)")
    assert definers == ["src/money.py"]


def test_money_module_does_not_import_invoices():
    import src.money
    tree = source_tree("src/money.py")
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "src.invoices" not in imported
    assert src.money.format_money.__module__ == "src.money"


def imports_of(tree):
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
            if node.module == "src":
                modules.update(f"src.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return modules


def test_reports_do_not_import_invoices():
    assert "src.invoices" not in imports_of(source_tree("src/reports.py"))


def test_invoices_and_reports_use_money_version():
    import src.invoices
    import src.money
    import src.reports
    for module, rel in ((src.invoices, "src/invoices.py"), (src.reports, "src/reports.py")):
        assert getattr(module, "format_money", src.money.format_money) is src.money.format_money
        uses = [n for n in ast.walk(source_tree(rel))
                if (isinstance(n, ast.Name) and n.id == "format_money")
                or (isinstance(n, ast.Attribute) and n.attr == "format_money")]
        assert uses, f"{rel} should format amounts with format_money"


def test_tests_import_from_new_home():
    for path in python_files("tests"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "src.invoices":
                assert "format_money" not in {a.name for a in node.names}, path.name
            if isinstance(node, ast.Attribute) and node.attr == "format_money":
                assert not (isinstance(node.value, ast.Name) and node.value.id == "invoices"), path.name


def test_rendering_unchanged(service, alice, bob):
    from src.invoices import build_invoice, render_invoice
    from src.reports import sales_summary
    order = service.place_order(alice.id, [("MUG-001", 2)], coupon="FIVEOFF", today=TODAY)
    text = render_invoice(build_invoice(order, alice))
    assert "2 x Stoneware mug (MUG-001) @ 12.00 EUR = 24.00 EUR" in text
    assert "Discount: -5.00 EUR" in text
    assert text.endswith("VAT 21%: 3.99 EUR\nTotal: 22.99 EUR")
    big = service.place_order(bob.id, [("POT-001", 3)], today=date(2024, 6, 4))
    service.pay(order.id)
    service.pay(big.id)
    assert sales_summary([order, big]).splitlines()[1] == "Revenue: 126.73 EUR"
