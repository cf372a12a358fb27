"""Imports point down: the Spark layer does not import the ``groupwatch run`` command layer
above it, and nothing the job runs in production imports the development tooling (the local
broker, the demo, the scenario library)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "src" / "groupwatch"
#: Development tooling: never on the job's production path.
TOOLING = ("groupwatch.broker", "groupwatch.demo", "groupwatch.scenarios")
#: Where the job starts: the ``groupwatch run`` command and every module of the Spark layer.
JOB_ROOTS = ("groupwatch.job.command", "groupwatch.job.runner")


def module_path(module: str, pkg: Path = PKG) -> Path | None:
    rel = Path(*module.split(".")[1:])
    for path in (pkg / rel / "__init__.py", (pkg / rel).with_suffix(".py")):
        if path.is_file():
            return path
    return None


def groupwatch_imports(module: str, pkg: Path = PKG) -> set[str]:
    """Every groupwatch module ``module`` imports, at the top, in functions or for typing only."""
    path = module_path(module, pkg)
    if path is None:
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("groupwatch"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if not base.startswith("groupwatch"):
                continue
            found.add(base)
            # `from groupwatch.spark import keys` imports the module groupwatch.spark.keys.
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if module_path(m, pkg) is not None}


def reachable(roots: tuple[str, ...]) -> dict[str, str]:
    """Every groupwatch module the roots import, directly or not: module -> who imports it."""
    seen = {root: root for root in roots}
    todo = list(roots)
    while todo:
        current = todo.pop()
        for imported in groupwatch_imports(current):
            if imported not in seen:
                seen[imported] = current
                todo.append(imported)
    return seen


def spark_modules() -> tuple[str, ...]:
    return tuple(sorted(f"groupwatch.spark.{p.stem}" for p in (PKG / "spark").glob("*.py")))


def test_the_spark_layer_does_not_import_the_command_layer() -> None:
    offenders = [
        f"{m} imports {i}"
        for m in spark_modules()
        for i in sorted(groupwatch_imports(m))
        if i == "groupwatch.job" or i.startswith("groupwatch.job.")
    ]
    assert offenders == []


def test_the_production_path_imports_no_development_tooling() -> None:
    seen = reachable(JOB_ROOTS + spark_modules())
    offenders = [
        f"{m} (imported by {seen[m]})"
        for m in sorted(seen)
        if any(m == t or m.startswith(t + ".") for t in TOOLING)
    ]
    assert offenders == []
    # The walk reaches what it should: the query, its steps and the alias resolver.
    assert {"groupwatch.spark.query", "groupwatch.bootstrap", "groupwatch.processors"} <= set(seen)


def test_the_walk_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "spark").mkdir(parents=True)
    for name in ("__init__.py", "broker.py", "spark/__init__.py", "spark/keys.py"):
        (pkg / name).write_text("")
    (pkg / "spark" / "probe.py").write_text(
        "def f():\n    from groupwatch.broker import LocalBroker\n"
        "from . import keys\nfrom ..spark.keys import x\nimport json\n"
    )
    assert groupwatch_imports("groupwatch.spark.probe", pkg) == {
        "groupwatch.broker",
        "groupwatch.spark",
        "groupwatch.spark.keys",
    }
