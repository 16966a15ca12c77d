"""Helpers for the hidden evaluation (structural checks on project sources)."""
import ast
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TODAY = date(2024, 6, 3)


def source_tree(relpath: str) -> ast.Module:
    """Parse a project file, e.g. ``source_tree("src/orders.py")``."""
    return ast.parse((ROOT / relpath).read_text(), filename=relpath)


def python_files(*folders: str) -> list[Path]:
    """All .py files under the given project folders."""
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))
