"""Imports point down: the dashboard may use the notifier (finding kinds, severities), the
notifier never the dashboard, and the tables' reader and writer both use
(``groupwatch.delta``) neither."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "groupwatch"


def imported_modules(path: Path) -> set[str]:
    """Every absolute module a file imports, functions' own imports included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # ``from groupwatch import dashboard`` names the package in the alias
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def importers_of(files: list[Path], package: str) -> list[str]:
    return sorted(
        f"{path.relative_to(PKG)} imports {module}"
        for path in files
        for module in imported_modules(path)
        if module == package or module.startswith(package + ".")
    )


def test_the_notifier_does_not_import_the_dashboard() -> None:
    files = sorted((PKG / "notify").rglob("*.py"))
    assert files
    assert importers_of(files, "groupwatch.dashboard") == []


def test_the_table_reader_imports_neither_the_dashboard_nor_the_notifier() -> None:
    files = sorted((PKG / "delta").rglob("*.py"))
    assert files
    assert importers_of(files, "groupwatch.dashboard") == []
    assert importers_of(files, "groupwatch.notify") == []


def test_the_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def run():\n    from groupwatch import dashboard\n")
    assert "groupwatch.dashboard" in imported_modules(probe)
    probe.write_text("def run():\n    from groupwatch.dashboard.app import create_app\n")
    assert "groupwatch.dashboard.app" in imported_modules(probe)
