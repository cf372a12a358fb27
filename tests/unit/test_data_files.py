"""Each data file is read as Delta describes it: its partition values are its add action's,
never its directory's name, whether the file carries the partition column inside (as Spark
writes it) or not (as delta-rs writes it).  ``pq.read_table`` on a file's path adds a column
for every ``name=value`` directory above it, as strings: next to the date a Spark file holds,
the read failed (``Unable to merge: Field snapshot_date has incompatible types``)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pandas as pd  # type: ignore[import-untyped]
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch.dashboard.views.fleet_table import MODERN_ROWS, TOPIC_PAIRS
from groupwatch.delta import read as deltaread
from groupwatch.delta.read import DataFile, DeltaStore, FileRead

MEMBERS = "member_assignments"
DAY = dt.date(2026, 12, 3)
OTHER_DAY = dt.date(1999, 1, 1)


def _members(day: dt.date | None, groups: tuple[str, ...] = ("a", "b")) -> pa.Table:
    rows = [
        {"group": g, "generation": 3, "member_id": f"{g}-m{m}", "topics": [f"t{m}"],
         "group_type": "consumer" if g == "b" else "classic", "source_partition": m,
         "source_offset": 10 * i + m, "snapshot_date": day}
        for i, g in enumerate(groups)
        for m in range(2)
    ]  # fmt: skip
    declared = deltaread.schema(MEMBERS)
    return pa.Table.from_pylist([{n: r.get(n) for n in declared.names} for r in rows], declared)


def _file(root: Path, rel: str, arrow: pa.Table, *, inside: bool) -> str:
    """``arrow`` written to ``rel`` under the table: with the partition column inside (as Spark
    writes a file), or without it (as delta-rs does)."""
    target = root / MEMBERS / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow if inside else arrow.drop_columns(["snapshot_date"]), target)
    return rel


# (where the file is, whether the column is inside, what the file's column holds)
LAYOUTS = {
    "spark": ("snapshot_date=2026-12-03/part-0.parquet", True, DAY),
    "delta-rs": ("snapshot_date=2026-12-03/part-0.parquet", False, None),
    "spark, directory disagrees": ("snapshot_date=1999-01-01/part-0.parquet", True, DAY),
    "delta-rs, directory disagrees": ("snapshot_date=1999-01-01/part-0.parquet", False, None),
    "no directory": ("part-0.parquet", False, None),
    # A directory named like another column: not a partition of this table.
    "a directory named like a column": ("group=zzz/member_id=x/part-0.parquet", True, DAY),
}


def _reads(store: DeltaStore, data_file: DataFile) -> dict[str, pd.DataFrame]:
    on_date = FileRead(where=pc.field("snapshot_date") == DAY, where_columns=("snapshot_date",))
    return {
        "whole": store.read_file(MEMBERS, data_file),
        "columns": store.read_file(
            MEMBERS, data_file, FileRead(columns=("group", "snapshot_date"))
        ),
        "modern": store.read_file(MEMBERS, data_file, MODERN_ROWS),
        "on the partition": store.read_file(MEMBERS, data_file, on_date),
        "pairs": store.read_file(MEMBERS, data_file, TOPIC_PAIRS),
    }


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_files_partition_values_are_its_add_actions(tmp_path: Path, layout: str) -> None:
    rel, inside, _ = LAYOUTS[layout]
    _file(tmp_path, rel, _members(DAY), inside=inside)
    store = DeltaStore(tmp_path)
    read = _reads(store, DataFile(rel, (("snapshot_date", DAY),)))
    whole = read["whole"]
    assert sorted(whole["member_id"]) == ["a-m0", "a-m1", "b-m0", "b-m1"]
    assert list(whole["group"]) == ["a", "a", "b", "b"]  # no column from ``group=zzz``
    assert set(whole["snapshot_date"]) == {DAY}
    assert list(read["columns"]["group"]) == ["a", "a", "b", "b"]
    assert set(read["columns"]["snapshot_date"]) == {DAY}
    assert sorted(read["modern"]["member_id"]) == ["b-m0", "b-m1"]
    assert set(read["modern"]["snapshot_date"]) == {DAY}
    assert len(read["on the partition"]) == 4
    pairs = read["pairs"].sort_values(["group", "topic"])
    assert list(zip(pairs["group"], pairs["topic"], strict=True)) == [
        ("a", "t0"), ("a", "t1"), ("b", "t0"), ("b", "t1")
    ]  # fmt: skip


@pytest.mark.parametrize("inside", [True, False], ids=["spark", "delta-rs"])
def test_the_add_actions_value_wins_over_the_files_and_the_directorys(
    tmp_path: Path, inside: bool
) -> None:
    """The log says another day than the directory (and the file, where it holds one): the
    log's is read, and a filter on the partition column goes by it."""
    rel = _file(tmp_path, "snapshot_date=2026-12-03/part-0.parquet", _members(DAY), inside=inside)
    store = DeltaStore(tmp_path)
    moved = DataFile(rel, (("snapshot_date", OTHER_DAY),))
    assert set(store.read_file(MEMBERS, moved)["snapshot_date"]) == {OTHER_DAY}
    on_day = FileRead(where=pc.field("snapshot_date") == DAY, where_columns=("snapshot_date",))
    assert store.read_file(MEMBERS, moved, on_day).empty
    on_other = FileRead(
        where=pc.field("snapshot_date") == OTHER_DAY, where_columns=("snapshot_date",)
    )
    assert len(store.read_file(MEMBERS, moved, on_other)) == 4
    # A null partition value (Hive's default partition) reads as null, not as its name.
    unset = DataFile(rel, (("snapshot_date", None),))
    assert store.read_file(MEMBERS, unset)["snapshot_date"].isna().all()


def test_two_partition_columns_typed_as_the_log_types_them(tmp_path: Path) -> None:
    """``partition_ownership``: a null date and an integer bucket, both from the add action,
    with a directory for each that says otherwise."""
    table = "partition_ownership"
    declared = deltaread.schema(table)
    row = {"group": "a", "topic": "t", "partition": 0, "member_id": "m", "to_date": DAY,
           "open_bucket": 5}  # fmt: skip
    arrow = pa.Table.from_pylist([{n: row.get(n) for n in declared.names}], declared)
    rel = "to_date=2026-12-03/open_bucket=5/part-0.parquet"
    (tmp_path / table / rel).parent.mkdir(parents=True)
    pq.write_table(arrow, tmp_path / table / rel)
    store = DeltaStore(tmp_path)
    got = store.read_file(table, DataFile(rel, (("to_date", None), ("open_bucket", 7))))
    assert got["to_date"].isna().all()
    assert list(got["open_bucket"]) == [7]
    assert list(got["group"]) == ["a"]


def _as_spark_wrote(table: Path) -> None:
    """Every data file of a delta-rs table rewritten in place with its partition column inside
    (the value its add action holds), as Spark writes a file; the log's sizes set to match."""
    sizes = {}
    for rel in DeltaTable(str(table)).file_uris():
        path = Path(rel)
        arrow = pq.read_table(path, partitioning=None)
        day = dt.date.fromisoformat(path.parent.name.split("=")[1])
        arrow = arrow.append_column("snapshot_date", pa.array([day] * arrow.num_rows, pa.date32()))
        pq.write_table(arrow, path)
        sizes[path.name] = path.stat().st_size
    for commit in (table / "_delta_log").glob("*.json"):
        lines = []
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                action["add"]["size"] = sizes[Path(unquote(action["add"]["path"])).name]
            lines.append(json.dumps(action))
        commit.write_text("\n".join(lines) + "\n")


def _rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    return sorted(zip(frame["member_id"], frame["group"], frame["snapshot_date"], strict=True))


def test_a_table_of_files_with_the_partition_column_inside_reads_as_delta_rs_reads_it(
    tmp_path: Path,
) -> None:
    """Through the table's own log: file by file (:meth:`DeltaStore.read_file`, one group's
    rows by :meth:`DeltaStore.read_rows`) as delta-rs reads the whole table."""
    path = tmp_path / MEMBERS
    for day, groups in ((DAY, ("a", "b")), (DAY + dt.timedelta(days=1), ("a", "c"))):
        write_deltalake(
            str(path), _members(day, groups), mode="append", partition_by=["snapshot_date"]
        )
    _as_spark_wrote(path)
    store = DeltaStore(tmp_path)
    whole = store.read(MEMBERS)
    assert len(whole) == 8
    listing = store.files(MEMBERS)
    assert listing is not None
    by_file = pd.concat([store.read_file(MEMBERS, f) for f in listing[1]], ignore_index=True)
    assert _rows(by_file) == _rows(whole)
    group_a = store.read_rows(MEMBERS, "group", "a")
    assert _rows(group_a) == _rows(whole[whole["group"] == "a"])
    only = store.read_rows(MEMBERS, "group", {"a", "c"}, ("member_id", "snapshot_date"))
    assert _rows(only.assign(group=None)) == _rows(
        whole[whole["group"].isin({"a", "c"})].assign(group=None)
    )
