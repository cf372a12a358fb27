"""Past days clustered by group: upkeep rewrites each past day of the history tables once,
sorted by group in small row groups, and a reader of one group's rows opens only the row groups
that can hold it, with the same rows as a reading of the whole table.  Real Delta tables
written by the job's driver writer (delta-rs)."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from urllib.parse import unquote

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch import clustering, tables, upkeep
from groupwatch.clustering import RowGroup
from groupwatch.config import UpkeepConfig
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite

APP = "groupwatch-job"
PAST, EARLIER, TODAY = dt.date(2026, 11, 23), dt.date(2026, 11, 22), dt.date(2026, 11, 24)
ROWS = 200
SETTINGS = UpkeepConfig(cluster_row_group_rows=ROWS)


def _create(root: Path, table: tables.Table) -> Path:
    path = root / table.name
    write_deltalake(
        str(path),
        deltaread.schema(table.name).empty_table(),
        partition_by=list(table.partition_by) or None,
        configuration=upkeep.properties(SETTINGS),
    )
    return path


def _members(groups: list[str], day: dt.date, batch: int) -> pa.Table:
    rows = [
        {"group": g, "generation": batch, "member_id": f"m{i}", "source_offset": batch,
         "source_partition": i, "snapshot_date": day}
        for i, g in enumerate(groups)
    ]  # fmt: skip
    names = tables.MEMBER_ASSIGNMENTS.column_names
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows])


def _rows(path: Path) -> list[str]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _files(path: Path, day: dt.date) -> list[str]:
    target = DeltaTable(str(path))
    adds = pa.table(target.get_add_actions(flatten=True)).to_pylist()
    return sorted(a["path"] for a in adds if str(a["partition.snapshot_date"]) == str(day))


def _bounds(path: Path, rel: str) -> list[RowGroup]:
    return clustering.row_group_bounds(pq.read_metadata(path / rel), "group")


def _write_days(path: Path, rng: random.Random, names: list[str]) -> int:
    """Five batches a day on two past days and today, groups drawn at random: every file of a
    day holds groups from all over the range, as the batches leave them."""
    batch = 0
    for day in (EARLIER, PAST, TODAY):
        for _ in range(5):
            groups = [rng.choice(names) for _ in range(300)]
            deltawrite.append_once(
                path, tables.MEMBER_ASSIGNMENTS, _members(groups, day, batch), APP, batch
            )
            batch += 1
    return batch


def test_a_past_day_is_clustered_once_newest_first_and_again_after_a_late_file(
    tmp_path: Path,
) -> None:
    path = _create(tmp_path, tables.MEMBER_ASSIGNMENTS)
    rng = random.Random(7)
    batch = _write_days(path, rng, [f"g{k:04d}" for k in range(400)])
    before = _rows(path)
    column = upkeep.HISTORY_COLUMN
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == [
        str(PAST),
        str(EARLIER),
    ]

    first = upkeep.tidy(path, tables.MEMBER_ASSIGNMENTS, SETTINGS, None, today=TODAY)
    # One day a turn, the newest past day first; today is compacted, never clustered.
    assert first.clustered == 1
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == [
        str(EARLIER)
    ]
    second = upkeep.tidy(path, tables.MEMBER_ASSIGNMENTS, SETTINGS, None, today=TODAY)
    assert second.clustered == 1
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == []
    assert _rows(path) == before
    # The exactly-once ids are untouched by the rewrites.
    assert DeltaTable(str(path)).transaction_version(APP) == batch - 1
    for day in (PAST, EARLIER):
        (rel,) = _files(path, day)
        bounds = _bounds(path, rel)
        # 1,500 rows in row groups of at most 200, sorted by group.
        assert len(bounds) >= 1500 // ROWS
        assert all(b.rows <= ROWS for b in bounds)
        assert all(a.high <= b.low for a, b in zip(bounds, bounds[1:], strict=False))  # type: ignore[operator]
    # Today is compacted into one file of one row group of all its rows: never clustered.
    (today,) = _files(path, TODAY)
    assert [b.rows for b in _bounds(path, today)] == [1500]

    # Nothing left to do: the next turn rewrites nothing.
    files = _files(path, PAST)
    third = upkeep.tidy(path, tables.MEMBER_ASSIGNMENTS, SETTINGS, None, today=TODAY)
    assert third.clustered == 0
    assert _files(path, PAST) == files

    # A late batch of a past day (a backlog read in several batches) undoes its order.
    late = [rng.choice([f"g{k:04d}" for k in range(400)]) for _ in range(50)]
    deltawrite.append_once(path, tables.MEMBER_ASSIGNMENTS, _members(late, PAST, batch), APP, batch)
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == [str(PAST)]
    again = upkeep.tidy(path, tables.MEMBER_ASSIGNMENTS, SETTINGS, None, today=TODAY)
    assert again.clustered == 1
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == []

    # Without the stream's clock, or with clustering off, no day is.
    off = _create(tmp_path / "off", tables.MEMBER_ASSIGNMENTS)
    _write_days(off, random.Random(7), [f"g{k:04d}" for k in range(400)])
    assert upkeep.tidy(off, tables.MEMBER_ASSIGNMENTS, SETTINGS, None).clustered == 0
    unset = UpkeepConfig(cluster_row_group_rows=0)
    assert upkeep.tidy(off, tables.MEMBER_ASSIGNMENTS, unset, None, today=TODAY).clustered == 0
    assert len(upkeep.unclustered_days(off, DeltaTable(str(off)), column, TODAY, ROWS)) == 2


def test_one_groups_rows_read_from_its_row_groups_equal_a_reading_of_the_whole_table(
    tmp_path: Path,
) -> None:
    """Groups of every kind: many rows (straddling row groups), one row, absent, names longer
    than the writer's default statistics (64 bytes) that share a long prefix."""
    path = _create(tmp_path, tables.MEMBER_ASSIGNMENTS)
    rng = random.Random(11)
    long_prefix = "connect-" + "x" * 90
    names = [f"g{k:03d}" for k in range(120)] + [f"{long_prefix}-{k}" for k in range(30)]
    _write_days(path, rng, names + ["big"] * 60)
    for _ in range(3):
        upkeep.tidy(path, tables.MEMBER_ASSIGNMENTS, SETTINGS, None, today=TODAY)
    assert (
        upkeep.unclustered_days(path, DeltaTable(str(path)), upkeep.HISTORY_COLUMN, TODAY, ROWS)
        == []
    )
    whole = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    store = deltaread.DeltaStore(tmp_path)
    (rel,) = _files(path, PAST)
    bounds = _bounds(path, rel)
    for group in ["big", "g000", "g119", "g060", f"{long_prefix}-7", "absent", "g0600"]:
        expected = sorted(
            json.dumps(r, sort_keys=True, default=str) for r in whole if r["group"] == group
        )
        frame = store.read_rows("member_assignments", "group", group)
        got = sorted(
            json.dumps(r, sort_keys=True, default=str)
            for r in pa.Table.from_pandas(frame, preserve_index=False).to_pylist()
        )
        assert len(got) == len(expected), group
        assert [json.loads(g)["member_id"] for g in got] == [
            json.loads(e)["member_id"] for e in expected
        ], group
        # In the clustered day, a group's rows are in at most a few of its row groups.
        at = clustering.row_groups(bounds, [group.encode()])
        assert len(at) <= 3, (group, at, len(bounds))
    # Several groups at once, as the notifier reads them.
    several = {"g001", "big", f"{long_prefix}-3"}
    frame = store.read_rows("member_assignments", "group", several)
    assert len(frame) == sum(1 for r in whole if r["group"] in several)
    # Column for column what a scan of the whole table through delta-rs's dataset gives.
    for group in ("big", "g060", f"{long_prefix}-7"):
        for columns in (None, ("member_id", "snapshot_date")):
            _same(
                store.read_rows("member_assignments", "group", group, columns),
                store._read_rows_scanned("member_assignments", "group", group, columns),
            )


def _same(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    keys = ["snapshot_date", "source_offset", "member_id"]
    keys = [k for k in keys if k in got.columns and got[k].notna().any()]
    # The same columns (the pages take them by name), the same rows in any order.
    assert sorted(got.columns) == sorted(expected.columns)
    order = sorted(got.columns)
    pd.testing.assert_frame_equal(
        got[order].sort_values(keys).reset_index(drop=True).astype(str),
        expected[order].sort_values(keys).reset_index(drop=True).astype(str),
    )


def test_a_group_read_again_after_a_batch_reads_only_the_files_it_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _create(tmp_path, tables.MEMBER_ASSIGNMENTS)
    batch = _write_days(path, random.Random(5), [f"g{k:03d}" for k in range(50)])
    store = deltaread.DeltaStore(tmp_path)
    opened: list[str] = []
    read = deltaread.DeltaStore._file_rows_of

    def counting(
        self: deltaread.DeltaStore, table: str, data_file: deltaread.DataFile, *a: object
    ) -> pa.Table:
        opened.append(data_file.path)
        return read(self, table, data_file, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(deltaread.DeltaStore, "_file_rows_of", counting)
    before = _files(path, EARLIER) + _files(path, PAST) + _files(path, TODAY)
    first = store.read_rows("member_assignments", "group", "g007")
    assert len(opened) == len(_files(path, EARLIER) + _files(path, PAST) + _files(path, TODAY))
    opened.clear()
    deltawrite.append_once(
        path, tables.MEMBER_ASSIGNMENTS, _members(["g007", "g008"], TODAY, batch), APP, batch
    )
    again = store.read_rows("member_assignments", "group", "g007")
    assert len(again) == len(first) + 1
    # The batch's file alone was opened.
    (added,) = set(_files(path, TODAY)) - set(before)
    assert opened == [unquote(added)]
    # Another group is read from every file again; the kept rows are bounded.
    opened.clear()
    store.read_rows("member_assignments", "group", "g008")
    assert len(opened) == len(_files(path, EARLIER) + _files(path, PAST) + _files(path, TODAY))
    monkeypatch.setattr(deltaread, "ROWS_KEPT", 0)
    store.read_rows("member_assignments", "group", "g009")
    assert len(store._file_rows) == 1


def test_closed_ownership_days_are_clustered_open_intervals_never(tmp_path: Path) -> None:
    path = _create(tmp_path, tables.PARTITION_OWNERSHIP)
    t0 = dt.datetime(2026, 11, 23, 12, tzinfo=dt.UTC)
    rng = random.Random(3)
    for batch in range(6):
        rows = []
        for p in range(200):
            closed = p % 2 == 0
            rows.append(
                {"group": f"g{rng.randrange(500):03d}", "group_type": "classic", "topic": "t",
                 "partition": p, "member_id": "m", "from_generation": batch, "from_time": t0,
                 "to_generation": batch + 1 if closed else None,
                 "to_time": t0 if closed else None, "to_date": PAST if closed else None}
            )  # fmt: skip
        names = tables.PARTITION_OWNERSHIP.column_names
        data = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows])
        deltawrite.append_once(path, tables.PARTITION_OWNERSHIP, data, APP, batch)
    before = _rows(path)
    column = upkeep.CLOSED_COLUMN
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == [str(PAST)]
    done = upkeep.tidy(path, tables.PARTITION_OWNERSHIP, SETTINGS, None, today=TODAY)
    assert done.clustered == 1
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, TODAY, ROWS) == []
    assert _rows(path) == before
    # The closing day is today's: not past, not clustered.
    assert upkeep.unclustered_days(path, DeltaTable(str(path)), column, PAST, ROWS) == []


def test_clustered_and_row_groups_on_bounds() -> None:
    a, b, c = b"a", b"m", b"z"
    # Ranges that touch where one row group ends and the next begins: a group straddles them.
    assert clustering.clustered([[RowGroup(10, a, b), RowGroup(10, b, c)]], 10)
    # Across files too, in any order.
    assert clustering.clustered([[RowGroup(10, b, c)], [RowGroup(10, a, b)]], 10)
    assert not clustering.clustered([[RowGroup(10, a, c), RowGroup(10, b, c)]], 10)
    assert not clustering.clustered([[RowGroup(11, a, b), RowGroup(10, b, c)]], 10)
    assert not clustering.clustered([[RowGroup(10, a, b), RowGroup(10, None, None)]], 10)
    # One small row group (a day of one batch) is as good as clustered; empty ones do not count.
    assert clustering.clustered([[RowGroup(5, a, c)]], 10)
    assert clustering.clustered([[RowGroup(5, a, c), RowGroup(0, None, None)]], 10)
    bounds = [RowGroup(10, a, b), RowGroup(10, b, c), RowGroup(10, None, None)]
    assert clustering.row_groups(bounds, [b"b"]) == [0, 2]
    assert clustering.row_groups(bounds, [b"m"]) == [0, 1, 2]
    assert clustering.row_groups(bounds, [b"zz"]) == [2]
    assert clustering.row_groups(bounds, [b"0", b"y"]) == [1, 2]
