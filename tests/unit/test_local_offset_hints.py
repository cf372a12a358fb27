"""The offset hints of a batch the state cache serves, read on the driver
(``state_store.local_offset_hints``): ``group_offsets`` as of a version, only the groups asked
for, in the prior state's columns, on a table written by the job's own MERGE (whose files read
back as ``string_view``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import DeltaTable, write_deltalake

from groupwatch import tables
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite
from groupwatch.spark import offsets, sinks
from groupwatch.spark.state_store import local_offset_hints

TABLE = tables.GROUP_OFFSETS
T = dt.datetime(2026, 11, 29, 9, 0, 0, 123456, tzinfo=dt.UTC)


def _merge(path: Path, batch_id: int, rows: list[tuple[str, str, int, dt.datetime]]) -> None:
    data = pa.table(
        {
            "group": [r[0] for r in rows],
            "topic": [r[1] for r in rows],
            "max_partition": pa.array([r[2] for r in rows], pa.int32()),
            "commits": pa.array([1] * len(rows), pa.int64()),
            "last_commit_time": pa.array([r[3] for r in rows], pa.timestamp("us", "UTC")),
        }
    )
    deltawrite.merge_once(
        path,
        TABLE,
        data,
        sinks.APP_ID,
        batch_id,
        on=("group", "topic"),
        update={"max_partition": "greatest(t.max_partition, s.max_partition)"},
        null_safe=False,
        note=offsets.batch_note(batch_id),
    )


def test_hints_of_the_groups_asked_as_of_a_version(tmp_path: Path) -> None:
    path = tmp_path / TABLE.name
    write_deltalake(str(path), deltaread.schema(TABLE.name).empty_table())
    _merge(path, 1, [("g1", "a", 3, T), ("g2", "a", 1, T), ("g3", "b", 0, T)])
    _merge(path, 2, [("g1", "a", 7, T + dt.timedelta(seconds=5)), ("g1", "c", 2, T)])
    assert DeltaTable(str(path)).version() == 2

    hints = local_offset_hints(path, 1, ["g1", "g3", "missing"])
    assert hints.schema == pa.schema(
        [
            ("group", pa.string()),
            ("state", pa.string()),
            ("last_event_ms", pa.int64()),
            ("topic", pa.string()),
            ("max_partition", pa.int32()),
            ("last_commit_ms", pa.int64()),
        ]
    )
    millis = int(T.timestamp() * 1000)  # the microseconds floored away
    assert sorted(hints.to_pylist(), key=lambda r: r["group"]) == [
        {"group": "g1", "state": None, "last_event_ms": None, "topic": "a",
         "max_partition": 3, "last_commit_ms": millis},
        {"group": "g3", "state": None, "last_event_ms": None, "topic": "b",
         "max_partition": 0, "last_commit_ms": millis},
    ]  # fmt: skip
    # The newest version holds batch 2's MERGE.
    newest = {
        (r["topic"], r["max_partition"]) for r in local_offset_hints(path, 2, ["g1"]).to_pylist()
    }
    assert newest == {("a", 7), ("c", 2)}
    assert local_offset_hints(path, 2, []).num_rows == 0
