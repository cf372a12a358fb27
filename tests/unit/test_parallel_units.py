"""The parallel run's units of work (tests/conftest.py): a module that asks for a shared run's
fixture goes with the others that do, or each worker would make the run again."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import SHARED_RUNS, unit_of

ROOT = Path(__file__).resolve().parents[2]
#: The session and package fixtures whose one run several modules read.
SHARED_FIXTURES = ("crash_runs", "real_job")


def _asks_for(text: str, fixture: str) -> bool:
    """As an argument of a test or fixture, or by name (``request.getfixturevalue``)."""
    argument = re.search(rf"def \w+\([^)]*\b{fixture}\b", text, re.S)
    return argument is not None or f'getfixturevalue("{fixture}")' in text


def test_every_module_of_a_shared_run_is_in_its_unit() -> None:
    for fixture in SHARED_FIXTURES:
        users = {
            str(path.relative_to(ROOT))
            for path in (ROOT / "tests").rglob("test_*.py")
            if _asks_for(path.read_text(encoding="utf-8"), fixture)
        }
        assert users, fixture
        assert users == {path for path, unit in SHARED_RUNS.items() if unit == fixture}, fixture


def test_a_shared_runs_modules_are_one_unit_and_the_others_their_own() -> None:
    for path, unit in SHARED_RUNS.items():
        assert (ROOT / path).is_file(), path
        assert unit_of(f"{path}::test_x[a]") == unit
    assert unit_of("tests/unit/test_config.py::test_x") == "tests/unit/test_config.py"
