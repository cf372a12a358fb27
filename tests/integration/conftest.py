"""Fixtures shared by modules of tests/integration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration import crash
from tests.integration.empty_tables import EmptyTables


@pytest.fixture(scope="session")
def crash_runs(
    spark: Any, broker: str, tmp_path_factory: pytest.TempPathFactory
) -> crash.CrashRuns:
    """The crash tests' clean run and killed run (tests/integration/crash.py), once for both
    test_crash_safety and test_crash_after_many_batches: a run of the job costs most in its
    start, and the two check different kills of one run."""
    root: Path = tmp_path_factory.mktemp("crash")
    return crash.run(spark, broker, root)


@pytest.fixture(scope="session")
def empty_tables(tmp_path_factory: pytest.TempPathFactory) -> EmptyTables:
    """The job's tables, empty, copied into a fresh ``delta.root`` (tests/integration/
    empty_tables.py): ``sinks.ensure_tables`` once per set of table properties."""
    return EmptyTables(tmp_path_factory.mktemp("empty-tables"))
