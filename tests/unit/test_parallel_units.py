"""The parallel run's units of work (tests/conftest.py): a module that asks for a shared run's
fixture goes with the others that do, or each worker would make the run again."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import LONG_FIRST, SHARED_RUNS, TOGETHER, long_first, unit_of

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


def test_the_units_sent_first_are_units_of_the_suite() -> None:
    """A module renamed or removed must leave :data:`LONG_FIRST` too, or its place is lost."""
    for unit in LONG_FIRST:
        assert unit in SHARED_RUNS.values() or (ROOT / unit).is_file(), unit
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)
    for path, unit in TOGETHER.items():
        assert (ROOT / path).is_file() and unit in SHARED_RUNS.values(), path
        assert unit_of(f"{path}::test_x") == unit


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_long_units_first_then_the_others_by_their_number_of_tests() -> None:
    ids = [
        "tests/unit/test_a.py::t1",
        "tests/s3/test_crash_on_s3.py::t",
        "tests/unit/test_b.py::t1",
        "tests/unit/test_b.py::t2",
        "tests/integration/test_job_scenarios.py::t",
        "tests/integration/test_crash_safety.py::t",
        "tests/unit/test_a.py::t2",
        "tests/unit/test_c.py::t1",
    ]
    got = [i.nodeid for i in long_first([_Item(n) for n in ids])]  # type: ignore[arg-type]
    assert got == [
        "tests/s3/test_crash_on_s3.py::t",  # crash_runs, as collected within the unit
        "tests/integration/test_crash_safety.py::t",
        "tests/integration/test_job_scenarios.py::t",
        "tests/unit/test_a.py::t1",  # two tests, collected before test_b
        "tests/unit/test_a.py::t2",
        "tests/unit/test_b.py::t1",
        "tests/unit/test_b.py::t2",
        "tests/unit/test_c.py::t1",
    ]
