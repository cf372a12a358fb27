"""Imports point down: the Spark layer does not import the ``groupwatch run`` command layer
above it, and the product (``groupwatch``) never imports the development tooling
(``groupwatch_dev``: the local broker, the demo, the scenario library), which sits above it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "groupwatch"
#: Development tooling, its own package: it may import groupwatch, groupwatch never imports it.
DEV = "groupwatch_dev"
DEV_PKG = SRC / DEV
TOOLING = (
    "groupwatch_dev.broker",
    "groupwatch_dev.demo",
    "groupwatch_dev.legacy_clients",
    "groupwatch_dev.member_host",
    "groupwatch_dev.scenarios",
    "groupwatch_dev.standalone",
)
#: Where the job starts: the ``groupwatch run`` command and every module of the Spark layer.
JOB_ROOTS = ("groupwatch.job.command", "groupwatch.job.runner")


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_path(module: str, pkg: Path = PKG) -> Path | None:
    rel = Path(*module.split(".")[1:])
    for path in (pkg / rel / "__init__.py", (pkg / rel).with_suffix(".py")):
        if path.is_file():
            return path
    return None


def imported_names(module: str, pkg: Path = PKG) -> set[str]:
    """Every module (or name in one) ``module`` imports, at the top, in functions or for typing
    only; relative imports resolved."""
    path = module_path(module, pkg)
    if path is None:
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            # `from groupwatch.spark import keys` imports the module groupwatch.spark.keys.
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def groupwatch_imports(module: str, pkg: Path = PKG) -> set[str]:
    """Every module of ``module``'s own top-level package (``pkg``) that it imports."""
    root = module.partition(".")[0]
    return {
        m
        for m in imported_names(module, pkg)
        if in_package(m, root) and module_path(m, pkg) is not None
    }


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


def import_cycles(modules: tuple[str, ...], pkg: Path = PKG) -> list[list[str]]:
    """The cycles among ``modules``' imports of one another (imports inside functions and
    typing-only ones counted: a lazy import that closes a cycle is a cycle all the same), each
    as the path around it."""
    inside = set(modules)
    edges = {m: sorted(i for i in groupwatch_imports(m, pkg) if i in inside) for m in modules}
    cycles: list[list[str]] = []
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        for imported in edges[module]:
            if imported in path:
                cycles.append([*path[path.index(imported) :], imported])
            elif imported not in done:
                walk(imported, [*path, imported])
        done.add(module)

    for module in modules:
        if module not in done:
            walk(module, [module])
    return cycles


def test_the_spark_layer_has_no_import_cycle() -> None:
    # Within a layer imports point down too: a module that needs another's name from a module
    # that imports it is two concerns in one module, split until the imports go one way.
    assert import_cycles(spark_modules()) == []


def test_the_cycle_check_sees_a_lazy_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "spark").mkdir(parents=True)
    for name in ("__init__.py", "spark/__init__.py", "spark/c.py"):
        (pkg / name).write_text("")
    (pkg / "spark" / "a.py").write_text("from groupwatch.spark.b import x\n")
    (pkg / "spark" / "b.py").write_text("def f():\n    from groupwatch.spark import a\n")
    modules = ("groupwatch.spark.a", "groupwatch.spark.b", "groupwatch.spark.c")
    assert import_cycles(modules, pkg) == [
        ["groupwatch.spark.a", "groupwatch.spark.b", "groupwatch.spark.a"]
    ]


def test_the_production_path_imports_no_development_tooling() -> None:
    seen = reachable(JOB_ROOTS + spark_modules())
    offenders = [
        f"{m} (imported by {seen[m]}) imports {i}"
        for m in sorted(seen)
        for i in sorted(imported_names(m))
        if in_package(i, DEV)
    ]
    assert offenders == []
    # The walk reaches what it should: the query, its steps and the alias resolver.
    assert {"groupwatch.spark.query", "groupwatch.bootstrap", "groupwatch.processing"} <= set(seen)


def test_the_walk_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "spark").mkdir(parents=True)
    for name in ("__init__.py", "config.py", "spark/__init__.py", "spark/keys.py"):
        (pkg / name).write_text("")
    (pkg / "spark" / "probe.py").write_text(
        "def f():\n    from groupwatch.config import load\n"
        "from . import keys\nfrom ..spark.keys import x\nimport json\nimport groupwatch_dev\n"
    )
    assert groupwatch_imports("groupwatch.spark.probe", pkg) == {
        "groupwatch.config",
        "groupwatch.spark",
        "groupwatch.spark.keys",
    }


#: Every top-level module or package of groupwatch and its layer (docs/architecture.md): a
#: module imports only from layers below its own, or from its own package.  Development
#: tooling sits apart, in groupwatch_dev: it may use the product, the product never imports it.
LAYERS: dict[str, int] = {
    "errors": 0,
    "paths": 0,
    "locations": 0,
    "stopping": 0,
    "clustering": 0,
    "protocol": 1,
    "bootstrap": 1,
    "assignor": 2,
    "detect": 3,
    "tables": 4,
    "committed_fold": 4,
    "config": 4,
    "broker_client": 4,
    "rows": 5,
    "config_cli": 5,
    "storage": 5,
    "analyze": 5,
    "group_state": 6,
    "processing": 7,
    "delta": 8,
    "upkeep": 9,
    "notify": 9,
    "lag": 9,
    "spark": 10,
    "dashboard": 10,
    "job": 11,
    "config_command": 11,
    "analyze_command": 11,
    "cli": 12,
}
#: groupwatch_dev's own order: the demo drives the broker, the scenario library and the Java
#: member host (which the modern-group tests drive too).
DEV_LAYERS: dict[str, int] = {
    "broker": 13,
    "scenarios": 13,
    "member_host": 13,
    "standalone": 13,
    "demo": 14,
    "legacy_clients": 14,
}
assert set(DEV_LAYERS) == {t.split(".")[1] for t in TOOLING}


def top_level(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def all_modules(pkg: Path = PKG) -> list[str]:
    out = []
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out.append(".".join((pkg.name, *parts)))
    return out


def layer_violations(pkg: Path = PKG, layers: dict[str, int] = LAYERS) -> list[str]:
    """Imports within one package (groupwatch or groupwatch_dev) that do not point down."""
    bad = []
    for module in all_modules(pkg):
        own = top_level(module)
        if own == "__init__":
            continue
        mine = layers.get(own)
        if mine is None:
            bad.append(f"{module}: its package {own!r} has no layer")
            continue
        for imported in sorted(groupwatch_imports(module, pkg)):
            other = top_level(imported)
            if other in ("__init__", own):
                continue
            theirs = layers.get(other)
            if theirs is None or theirs >= mine:
                bad.append(f"{module} (layer {mine}) imports {imported} (layer {theirs})")
    return bad


def test_every_import_points_down() -> None:
    assert layer_violations() == []
    assert layer_violations(DEV_PKG, DEV_LAYERS) == []


#: The engine judges what it is handed: no module of ``detect`` talks to a broker or to the
#: network, starts a process or opens a file (the commands above it do: ``analyze`` and its
#: ``broker_client``), so the job and ``analyze`` run the same rules over the same values.
PURE = ("detect",)
NO_IO_MODULES = ("kafka", "socket", "ssl", "http", "urllib", "subprocess", "requests")
#: Calls that open a file: ``open(...)``, ``io.open``, and ``Path``'s readers and writers.
FILE_CALLS = ("open", "read_text", "read_bytes", "write_text", "write_bytes")
#: Modules of ``detect`` that may open a file, and why.
FILE_ALLOWED = {
    "groupwatch.detect.docs": "its command line (python -m) writes docs/findings.md; "
    "nothing imports it but its test, which calls the pure render()",
}


def io_in(module: str, pkg: Path = PKG) -> list[str]:
    """The I/O ``module`` does itself: imports of network or process modules (anywhere in it),
    and calls that open a file."""
    path = module_path(module, pkg)
    assert path is not None, module
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"imports {n}" for n in names if n.split(".")[0] in NO_IO_MODULES]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in FILE_CALLS:
                found.append(f"calls {name}() at line {node.lineno}")
    return sorted(found)


def test_the_engine_does_no_io() -> None:
    offenders = [
        f"{m} {what}"
        for m in all_modules()
        if any(in_package(m, f"groupwatch.{p}") for p in PURE)
        for what in io_in(m)
        if not (m in FILE_ALLOWED and what.startswith("calls "))
    ]
    assert offenders == []
    # Nothing else imports the allowed ones: the engine's modules never reach their I/O.
    assert [m for m in all_modules() if set(FILE_ALLOWED) & groupwatch_imports(m)] == []


def test_the_io_check_sees_a_broker_a_socket_and_a_file(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "detect").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "detect" / "__init__.py").write_text("")
    (pkg / "detect" / "probe.py").write_text(
        "import socket\n"
        "def f(path):\n"
        "    from kafka.admin import KafkaAdminClient\n"
        "    import kafka\n"
        "    return open(path).read() + path.read_text()\n"
        "import kafkaesque\n"
    )
    assert io_in("groupwatch.detect.probe", pkg) == [
        "calls open() at line 5",
        "calls read_text() at line 5",
        "imports kafka",
        "imports kafka.admin",
        "imports socket",
    ]


def dev_importers(pkg: Path = PKG) -> list[str]:
    """Every import of groupwatch_dev in the modules of ``pkg``, whatever its form."""
    return [
        f"{module} imports {name}"
        for module in all_modules(pkg)
        for name in sorted(imported_names(module, pkg))
        if in_package(name, DEV)
    ]


def test_the_product_never_imports_the_development_tooling() -> None:
    # `groupwatch broker` is dispatched by the module's name, a string the CLI imports only when
    # that subcommand runs: not an import statement, so not counted here.
    assert dev_importers() == []
    assert {m.partition(".")[0] for m in all_modules(DEV_PKG)} == {DEV}


def test_the_cli_names_the_broker_command_in_the_tooling_package() -> None:
    from groupwatch import cli

    module = cli.SUBCOMMANDS["broker"][0]
    assert in_package(module, "groupwatch_dev.broker")
    assert module_path(module, DEV_PKG) is not None


def test_the_tooling_check_sees_every_form_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "spark").mkdir(parents=True)
    sources = {
        "__init__.py": "",
        "spark/__init__.py": "",
        "a.py": "import groupwatch_dev.broker\n",
        "spark/b.py": "def f():\n    from groupwatch_dev import demo\n",
        "c.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from groupwatch_dev.scenarios import builder\n"
        ),
        # A module's name as a string (the CLI's dispatch) and a look-alike package are not it.
        "d.py": 'COMMAND = "groupwatch_dev.broker.command"\nimport groupwatch_devices\n',
    }
    for name, text in sources.items():
        (pkg / name).write_text(text)
    assert dev_importers(pkg) == [
        "groupwatch.a imports groupwatch_dev.broker",
        "groupwatch.c imports groupwatch_dev.scenarios",
        "groupwatch.c imports groupwatch_dev.scenarios.builder",
        "groupwatch.spark.b imports groupwatch_dev",
        "groupwatch.spark.b imports groupwatch_dev.demo",
    ]


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "groupwatch"
    (pkg / "detect").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "detect" / "__init__.py").write_text("")
    (pkg / "config.py").write_text("")
    (pkg / "detect" / "probe.py").write_text("def f():\n    from groupwatch import config\n")
    assert layer_violations(pkg) == [
        "groupwatch.detect.probe (layer 3) imports groupwatch.config (layer 4)"
    ]
