"""The driver's delta-rs writes: once per (app, batch), the tables' keys, the commit note.

The tables here are made by delta-rs from the declared schemas; that Spark's own tables take
these writes (and a replay by the other writer) is the crash-safety test's part.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch import tables
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite

APP = "groupwatch-job"
T0 = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)


def _create(root: Path, table: tables.Table) -> Path:
    path = root / table.name
    empty = deltaread.schema(table.name).empty_table()
    write_deltalake(str(path), empty, partition_by=list(table.partition_by) or None)
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _arrow(table: tables.Table, rows: list[dict[str, Any]]) -> pa.Table:
    # Spark hands over int64 where the table says int, and columns in its own order.
    names = list(reversed(table.column_names))
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows])


def _interval(member: str | None, start: int, end: int | None, group: str = "g") -> dict[str, Any]:
    return {
        "group": group,
        "group_type": "classic",
        "topic": "t",
        "partition": 0,
        "member_id": member,
        "client_id": "c",
        "from_generation": start,
        "from_time": T0,
        "to_generation": end,
        "to_time": T0 if end is not None else None,
        "to_date": T0.date() if end is not None else None,
        "open_bucket": tables.group_bucket(group) if end is None else None,
    }


def test_conform_orders_and_casts_to_the_declared_columns() -> None:
    table = tables.PARTITION_OWNERSHIP
    data = deltawrite.conform(_arrow(table, [_interval("m", 1, None)]), table)
    assert data.schema == deltaread.schema(table.name)
    assert data.to_pylist() == [_interval("m", 1, None)]


def test_an_append_is_written_once_per_batch(tmp_path: Path) -> None:
    table = tables.GROUP_SNAPSHOTS
    path = _create(tmp_path, table)

    def snapshot(generation: int) -> pa.Table:
        return _arrow(table, [{"group": "g", "generation": generation, "snapshot_date": T0.date()}])

    assert deltawrite.append_once(path, table, snapshot(1), APP, 5)
    assert not deltawrite.append_once(path, table, snapshot(1), APP, 5)  # the replay
    assert not deltawrite.append_once(path, table, snapshot(9), APP, 4)  # an older batch
    assert deltawrite.append_once(path, table, snapshot(2), APP, 6)
    assert [r["generation"] for r in _rows(path)] == [1, 2]
    assert DeltaTable(str(path)).transaction_version(APP) == 6
    # Another app's transactions are its own.
    assert deltawrite.append_once(path, table, snapshot(3), "other", 5)
    assert DeltaTable(str(path)).metadata().partition_columns == ["snapshot_date"]


def test_ownership_intervals_are_upserted_on_the_key_null_safely(tmp_path: Path) -> None:
    table = tables.PARTITION_OWNERSHIP
    path = _create(tmp_path, table)
    opened = [_interval("m", 1, None), _interval(None, 1, None)]
    assert deltawrite.merge_once(path, table, _arrow(table, opened), APP, 1)
    # Generation 2 closes both (one owner's id is null: matched as Spark's <=> would) and
    # opens a new one.
    moved = [_interval("m", 1, 2), _interval(None, 1, 2), _interval("n", 2, None)]
    assert deltawrite.merge_once(path, table, _arrow(table, moved), APP, 2)
    assert not deltawrite.merge_once(path, table, _arrow(table, opened), APP, 2)
    assert _rows(path) == sorted(moved, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_an_ownership_merge_reads_the_open_intervals_only(tmp_path: Path) -> None:
    """The closed intervals of earlier days (the table's history) are another partition: a
    batch's MERGE neither reads nor rewrites their files."""
    table = tables.PARTITION_OWNERSHIP
    path = _create(tmp_path, table)
    days = [T0 - dt.timedelta(days=d) for d in (3, 2, 1)]
    history = [
        {**_interval(f"old{d}", 1, 2), "to_time": day, "to_date": day.date()}
        for d, day in enumerate(days)
    ]
    assert deltawrite.merge_once(path, table, _arrow(table, history), APP, 1)
    assert deltawrite.merge_once(path, table, _arrow(table, [_interval("m", 5, None)]), APP, 2)
    before = {f for f in DeltaTable(str(path)).file_uris() if "to_date=2026-11-2" in f}
    moved = [_interval("m", 5, 6), _interval("n", 6, None)]
    assert deltawrite.merge_once(path, table, _arrow(table, moved), APP, 3)
    metrics = DeltaTable(str(path)).history(1)[0]["operationMetrics"]
    # One file of open intervals scanned, the three days' files skipped.
    scanned = metrics["num_target_files_scanned"], metrics["num_target_files_skipped_during_scan"]
    assert scanned == (1, 3)
    assert len(before) == 3 and before <= set(DeltaTable(str(path)).file_uris())
    assert len(_rows(path)) == 5


def test_an_ownership_merge_reads_its_groups_buckets_of_open_intervals_only(
    tmp_path: Path,
) -> None:
    """The open intervals are spread over buckets of their group's hash: a batch that closes
    and opens intervals of a few groups reads and rewrites the files of those groups' buckets
    only, and the intervals of groups in other buckets stay where they were."""
    table = tables.PARTITION_OWNERSHIP
    path = _create(tmp_path, table)
    groups = [f"group-{i}" for i in range(64)]
    buckets = {tables.group_bucket(g) for g in groups}
    assert len(buckets) == tables.GROUP_BUCKETS
    opened = [_interval("m", 1, None, g) for g in groups]
    assert deltawrite.merge_once(path, table, _arrow(table, opened), APP, 1)
    files = set(DeltaTable(str(path)).file_uris())
    assert len(files) == tables.GROUP_BUCKETS
    a, b = "group-3", "group-40"
    touched = {tables.group_bucket(a), tables.group_bucket(b)}
    assert len(touched) == 2
    moved = [_interval("m", 1, 2, a), _interval("n", 2, None, a), _interval("m", 1, 2, b)]
    assert deltawrite.merge_once(path, table, _arrow(table, moved), APP, 2)
    metrics = DeltaTable(str(path)).history(1)[0]["operationMetrics"]
    scanned = metrics["num_target_files_scanned"], metrics["num_target_files_skipped_during_scan"]
    assert scanned == (2, tables.GROUP_BUCKETS - 2)
    untouched = {f for f in files if not any(f"open_bucket={t}/" in f for t in touched)}
    assert len(untouched) == tables.GROUP_BUCKETS - 2
    assert untouched <= set(DeltaTable(str(path)).file_uris())
    want = [r for r in opened if r["group"] not in (a, b)] + moved
    assert _rows(path) == sorted(want, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.mark.parametrize(
    "groups",
    [["g"], ["", "é", "日本", "\U0001f600"], [], [None, "g"], [f"g{i}" for i in range(40)]],
)
def test_a_merge_scope_names_the_buckets_of_its_groups(groups: list[str | None]) -> None:
    scope = tables.PARTITION_OWNERSHIP.merge_scope(groups)
    if not groups or None in groups:
        # Nothing to narrow by: every open interval may match.
        assert scope == "(t.`to_date` IS NULL)"
        return
    head = "(t.`to_date` IS NULL) AND (t.`open_bucket` IN ("
    assert scope.startswith(head) and scope.endswith("))")
    listed = scope.removeprefix(head).removesuffix("))")
    named = {int(b) for b in listed.split(", ")}
    assert named == {zlib.crc32(str(g).encode()) % 16 for g in groups}
    assert tables.GROUP_SNAPSHOTS.merge_scope(groups) == ""


def test_an_insert_only_merge_leaves_a_present_row_alone(tmp_path: Path) -> None:
    table = tables.FINDINGS
    path = _create(tmp_path, table)
    first = {"finding_id": "f1", "kind": "assignment_overlap", "detail": "first"}
    again = {"finding_id": "f1", "kind": "assignment_overlap", "detail": "again"}
    other = {"finding_id": "f2", "kind": "assignment_overlap", "detail": "other"}
    assert deltawrite.merge_once(path, table, _arrow(table, [first]), APP, 1, update=False)
    assert deltawrite.merge_once(path, table, _arrow(table, [again, other]), APP, 2, update=False)
    assert [(r["finding_id"], r["detail"]) for r in _rows(path)] == [
        ("f1", "first"),
        ("f2", "other"),
    ]


def test_a_merge_by_expressions_carries_its_note(tmp_path: Path) -> None:
    table = tables.GROUP_OFFSETS
    path = _create(tmp_path, table)
    update = {
        "max_partition": "greatest(t.max_partition, s.max_partition)",
        "commits": "t.commits + s.commits",
    }
    for batch, rows in enumerate(
        [
            [
                {
                    "group": "g",
                    "topic": "t",
                    "max_partition": 3,
                    "commits": 2,
                    "last_commit_time": T0,
                }
            ],
            [
                {"group": "g", "topic": "t", "max_partition": 1, "commits": 5},
                {"group": "h", "topic": "t", "max_partition": 0, "commits": 1},
            ],
        ]
    ):
        assert deltawrite.merge_once(
            path,
            table,
            _arrow(table, rows),
            APP,
            batch,
            on=("group", "topic"),
            update=update,
            null_safe=False,
            note=f"batch {batch}",
        )
    assert sorted((r["group"], r["max_partition"], r["commits"]) for r in _rows(path)) == [
        ("g", 3, 7),
        ("h", 0, 1),
    ]
    notes = [h.get("userMetadata") for h in DeltaTable(str(path)).history()]
    assert notes[:2] == ["batch 1", "batch 0"]


@pytest.mark.parametrize("table", [t for t in tables.TABLES.values()], ids=lambda t: t.name)
def test_every_table_conforms_from_its_own_columns(table: tables.Table) -> None:
    empty = deltaread.schema(table.name).empty_table()
    assert deltawrite.conform(empty, table).schema.names == list(table.column_names)


def test_a_removal_row_deletes_its_key_and_inserts_nothing(tmp_path: Path) -> None:
    """``share_partition_state``'s ``removed_when`` (a row with no start offset): the matched
    row is deleted, an unmatched removal inserts nothing, and the other rows of the same MERGE
    are upserted as ever."""
    table = tables.SHARE_PARTITION_STATE
    path = _create(tmp_path, table)

    def row(partition: int, start: int | None) -> dict[str, Any]:
        return {"group": "q", "topic": "t", "topic_id": "id", "partition": partition,
                "start_offset": start}  # fmt: skip

    assert deltawrite.merge_once(path, table, _arrow(table, [row(0, 5), row(1, 7)]), APP, 1)
    assert deltawrite.merge_once(
        path, table, _arrow(table, [row(0, None), row(1, 9), row(2, None)]), APP, 2
    )
    assert [(r["partition"], r["start_offset"]) for r in _rows(path)] == [(1, 9)]
