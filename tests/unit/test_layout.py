"""The core stays Spark-free, and the required layout is there."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "groupwatch"
#: The development tooling (local broker, demo, scenario library): Spark-free as well.
DEV_PKG = ROOT / "src" / "groupwatch_dev"
# Only these packages adapt the core to Spark; everything else must import without it.
SPARK_SHELL = {"spark", "job"}
FORBIDDEN = ("pyspark", "delta", "great_expectations", "py4j")


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_core_has_no_spark_imports() -> None:
    offenders = []
    for path in sorted(PKG.rglob("*.py")) + sorted(DEV_PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent)
        if rel.parts[0] == PKG.name and rel.parts[1] in SPARK_SHELL:
            continue
        bad = imported_roots(path) & set(FORBIDDEN)
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert offenders == []


def test_the_check_above_can_see_an_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from pyspark.sql import functions\n")
    assert "pyspark" in imported_roots(probe)


def test_required_top_level_layout() -> None:
    for name in ("pyproject.toml", "src", "streaming", "tests", "conf", "dashboards"):
        assert (ROOT / name).exists(), name


def test_tables_doc_is_generated_from_the_declarations() -> None:
    from groupwatch import tables

    doc = (ROOT / "docs" / "tables.md").read_text()
    assert doc == tables.markdown(), "regenerate: python -c 'from groupwatch import tables; ...'"
