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


#: Every top-level module or package of groupwatch and its layer (docs/architecture.md): a
#: module imports only from layers below its own, or from its own package.  Development
#: tooling sits apart: it may use the product, the product never imports it.
LAYERS: dict[str, int] = {
    "errors": 0,
    "paths": 0,
    "locations": 0,
    "stopping": 0,
    "protocol": 1,
    "bootstrap": 1,
    "assignor": 2,
    "detect": 3,
    "tables": 4,
    "ownership": 4,
    "modern_rows": 4,
    "processing": 5,
    "config": 5,
    "processors": 6,
    "config_cli": 6,
    "deltaread": 7,
    "notify": 8,
    "spark": 9,
    "dashboard": 9,
    "job": 10,
    "config_command": 10,
    "cli": 11,
}
#: Development tooling's own order: the demo drives the broker and the scenario library.
DEV_LAYERS: dict[str, int] = {"broker": 12, "scenarios": 12, "demo": 13}
assert set(DEV_LAYERS) == {t.split(".")[1] for t in TOOLING}


def top_level(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def all_modules(pkg: Path = PKG) -> list[str]:
    out = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append(".".join(("groupwatch", *parts)))
    return out


def layer_violations(pkg: Path = PKG) -> list[str]:
    bad = []
    for module in all_modules(pkg):
        own = top_level(module)
        if own == "__init__":
            continue
        mine = LAYERS.get(own, DEV_LAYERS.get(own))
        if mine is None:
            bad.append(f"{module}: its package {own!r} has no layer in LAYERS")
            continue
        for imported in sorted(groupwatch_imports(module, pkg)):
            other = top_level(imported)
            if other in ("__init__", own):
                continue
            theirs = LAYERS.get(other, DEV_LAYERS.get(other))
            if theirs is None or theirs >= mine:
                bad.append(f"{module} (layer {mine}) imports {imported} (layer {theirs})")
    return bad


def test_every_import_points_down() -> None:
    assert layer_violations() == []


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "detect").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "detect" / "__init__.py").write_text("")
    (pkg / "config.py").write_text("")
    (pkg / "detect" / "probe.py").write_text("def f():\n    from groupwatch import config\n")
    assert layer_violations(pkg) == [
        "groupwatch.detect.probe (layer 3) imports groupwatch.config (layer 5)"
    ]
