"""The Python stage of a small batch on the driver (``spark.driver_stage``): which records
each group gets."""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]

from groupwatch.spark import driver_stage
from groupwatch.spark.source import RECORD_COLUMNS


def _rows(rows: list[tuple[str, int, int, bool]]) -> pa.Table:
    """(group, partition, offset, python) rows as ``source.driver_rows`` collects them."""
    return pa.table(
        {
            "group": [r[0] for r in rows],
            "key": [b"k"] * len(rows),
            "value": [b"v"] * len(rows),
            "topic": ["__consumer_offsets"] * len(rows),
            "partition": pa.array([r[1] for r in rows], pa.int32()),
            "offset": pa.array([r[2] for r in rows], pa.int64()),
            "ts": pa.array([1000 + r[2] for r in rows], pa.int64()),
            "python": [r[3] for r in rows],
        }
    )


def test_records_are_the_python_rows_and_the_commits_of_their_groups_and_the_due() -> None:
    rows = _rows(
        [
            ("g1", 0, 1, True),  # a group-metadata record
            ("g1", 0, 2, False),  # its commits
            ("g1", 0, 3, False),
            ("g2", 1, 4, False),  # commits only: not run
            ("g3", 2, 5, False),  # commits only, but due
            ("", 3, 6, True),  # a key too short to name a group
        ]
    )
    records, groups = driver_stage.records_of(rows, ["g3", "g4"])
    assert groups == ["", "g1", "g3", "g4"]
    assert records.column_names == list(RECORD_COLUMNS)
    got = sorted(zip(*[records.column(c).to_pylist() for c in ("group", "offset")], strict=True))
    assert got == [("", 6), ("g1", 1), ("g1", 2), ("g1", 3), ("g3", 5)]
