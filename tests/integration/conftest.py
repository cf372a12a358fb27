"""Fixtures shared by modules of tests/integration."""

from __future__ import annotations

import pytest

from tests.integration.empty_tables import EmptyTables


@pytest.fixture(scope="session")
def empty_tables(tmp_path_factory: pytest.TempPathFactory) -> EmptyTables:
    """The job's tables, empty, copied into a fresh ``delta.root`` (tests/integration/
    empty_tables.py): ``sinks.ensure_tables`` once per set of table properties."""
    return EmptyTables(tmp_path_factory.mktemp("empty-tables"))
