"""``committed_offsets``: the JVM reads commit values of every version and keeps each
partition's latest commit, by Spark's MERGE and by the driver's (delta-rs), alike; a tombstone
removes the row; ``moved_time`` is when the offset last changed, across batches."""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch import config
from groupwatch.delta import read as deltaread
from groupwatch.spark import commit_aggregates, committed, keys

pytestmark = pytest.mark.spark


def kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + kstr(group) + kstr(topic) + struct.pack(">i", partition)


def value(version: int, offset: int, epoch: int = 4, meta: str = "m", at: int = 0) -> bytes:
    out = struct.pack(">hq", version, offset)
    if version >= 3:
        out += struct.pack(">i", epoch)
    if version >= 4:  # flexible: compact string, then the timestamp and empty tagged fields
        return out + bytes([len(meta) + 1]) + meta.encode() + struct.pack(">q", at) + b"\x00"
    out += kstr(meta) + struct.pack(">q", at)
    return out + (struct.pack(">q", -1) if version == 1 else b"")


def frame(spark: Any, rows: list[tuple[bytes, bytes | None, int, int]]) -> Any:
    from pyspark.sql import functions as F

    df = spark.createDataFrame(rows, "key binary, value binary, offset long, ts long")
    return df.withColumn("rtype", keys.record_type(F.col("key")))


def as_the_source(df: Any, tasks: int) -> Any:
    """``df`` in ``tasks`` tasks, each group's records in one, as the source delivers them
    (the broker writes a group's records to one partition of ``__consumer_offsets``)."""
    from pyspark.sql import functions as F

    return df.repartition(tasks, keys.group_id(F.col("key")))


def table(root: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    rows = DeltaTable(str(root / "committed_offsets")).to_pyarrow_table().to_pylist()
    return {(r["group"], r["topic"], r["partition"]): r for r in rows}


def ms(t: dt.datetime | None) -> int | None:
    return None if t is None else int(t.replace(tzinfo=dt.UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("driver_rows", "known"),
    [(0, False), (0, True), (200_000, False), (200_000, True)],
    ids=["spark", "spark-rows-known", "driver", "driver-rows-known"],
)
def test_latest_commit_per_partition(
    spark: Any, tmp_path: Path, driver_rows: int, known: bool
) -> None:
    """``known``: the newest commits' count is given, as the job gives it (no count of the
    rows before they go to the driver, and no copy of them for Spark's MERGE)."""

    def merge(rows: list[tuple[bytes, bytes | None, int, int]], batch_id: int) -> None:
        with commit_aggregates.of(as_the_source(frame(spark, rows), 2)) as agg:
            count = agg.partition_rows if known else None
            committed.merge(spark, cfg, agg.per_partition, batch_id, count)

    cfg = config.load(
        None,
        env={},
        overrides=[f"delta.root={tmp_path}", f"delta.driver_write_rows={driver_rows}"],
    )
    write_deltalake(
        str(tmp_path / "committed_offsets"), deltaread.schema("committed_offsets").empty_table()
    )
    batch0 = [
        (key("g", "t", 0), value(3, 10, epoch=7, meta="abc"), 1, 1_000),
        (key("g", "t", 0), value(3, 10), 2, 2_000),
        (key("g", "t", 0), value(3, 25, meta=""), 3, 3_000),
        (key("g", "t", 0), value(3, 25), 4, 4_000),
        (key("g", "t", 1), value(1, 5, meta="xy"), 5, 1_000),
        (key("g", "t", 2), value(4, 9, epoch=-1, meta="hello"), 6, 1_500),
        (key("g", "t", 3), value(0, 3), 7, 1_000),
        (key("g", "gone", 0), value(3, 1), 8, 1_000),
        (key("g", "never", 0), None, 9, 1_000),  # a tombstone for a row never seen
    ]
    # Into the empty table (Spark appends what a MERGE would insert), then a replay.
    merge(batch0, 0)
    merge(batch0, 0)
    rows = table(tmp_path)
    assert {k: r["committed_offset"] for k, r in rows.items()} == {
        ("g", "t", 0): 25,
        ("g", "t", 1): 5,
        ("g", "t", 2): 9,
        ("g", "t", 3): 3,
        ("g", "gone", 0): 1,
    }
    first = rows[("g", "t", 0)]
    assert (first["leader_epoch"], first["metadata_size"], first["commits"]) == (4, 1, 4)
    assert (ms(first["commit_time"]), ms(first["moved_time"])) == (4_000, 3_000)
    assert rows[("g", "t", 1)]["leader_epoch"] is None
    assert rows[("g", "t", 1)]["metadata_size"] == 2
    assert (rows[("g", "t", 2)]["leader_epoch"], rows[("g", "t", 2)]["metadata_size"]) == (-1, 5)
    batch1 = [
        (key("g", "t", 0), value(3, 25), 9, 9_000),  # unchanged: moved_time stays
        (key("g", "t", 1), value(3, 6), 10, 9_000),  # moved
        (key("g", "gone", 0), None, 11, 9_000),  # tombstone: the row goes
        (key("g", "t", 3), value(3, 2), 12, 9_000),
        (key("g", "t", 3), None, 13, 9_500),  # its newest record is a tombstone
        (key("g", "new", 0), None, 14, 9_000),  # a tombstone for a row never seen
    ]
    merge(batch1, 1)
    merge(batch1, 1)  # a replay changes nothing
    rows = table(tmp_path)
    assert set(rows) == {("g", "t", 0), ("g", "t", 1), ("g", "t", 2)}
    assert (ms(rows[("g", "t", 0)]["moved_time"]), rows[("g", "t", 0)]["commits"]) == (3_000, 5)
    assert ms(rows[("g", "t", 1)]["moved_time"]) == 9_000
    assert ms(rows[("g", "t", 0)]["commit_time"]) == 9_000
