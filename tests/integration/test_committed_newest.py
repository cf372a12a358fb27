"""Each partition's newest commit as a batch computes it (``commit_aggregates``: each task's
rows as columns) against a window per partition over fully
parsed records, row for row, over random batches: commits of every version, tombstones,
offsets repeated, moved and moved back, values too short to read, malformed keys and records
of other types, interleaved by record offset."""

from __future__ import annotations

import random
import struct
from typing import Any

import pytest

from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import commit_aggregates, keys

from .test_committed_offsets import as_the_source, frame, key, kstr, value

pytestmark = pytest.mark.spark


# --- the reference: a window per (group, topic, partition) over fully parsed records ----------
def _int(value: Any, pos: int, width: int) -> Any:
    from pyspark.sql import functions as F

    raw = value.substr(F.lit(pos), F.lit(width))
    as_long = F.conv(F.hex(raw), 16, -10).cast("long")
    if width == 8:
        return F.when(F.length(raw) == 8, as_long)
    return F.when(
        F.length(raw) == width,
        F.when(as_long >= 2 ** (8 * width - 1), as_long - 2 ** (8 * width)).otherwise(as_long),
    )


def parsed(df: Any) -> Any:
    from pyspark.sql import functions as F

    key, value = F.col("key"), F.col("value")
    prefix = keys.commit_prefix(key)
    version = F.conv(F.hex(value.substr(F.lit(1), F.lit(2))), 16, 10).cast("int")
    meta_pos = F.when(version >= 3, F.lit(15)).otherwise(F.lit(11))
    first = F.conv(F.hex(value.substr(meta_pos, F.lit(1))), 16, 10).cast("int")
    short = F.conv(F.hex(value.substr(meta_pos, F.lit(2))), 16, 10).cast("int")
    return df.where(F.col("rtype").isin(*OFFSET_COMMIT_TYPES)).select(
        keys.prefix_group(prefix).alias("group"),
        keys.prefix_topic(prefix).alias("topic"),
        keys.partition_of(keys.commit_partition_bytes(key)).alias("partition"),
        value.isNull().alias("tombstone"),
        _int(value, 3, 8).alias("committed_offset"),
        F.when(version >= 3, _int(value, 11, 4).cast("int")).alias("leader_epoch"),
        F.when(version >= 4, F.when(first < 128, first - 1))
        .otherwise(short)
        .cast("int")
        .alias("metadata_size"),
        F.col("ts"),
        F.col("offset"),
    )


def reference(df: Any) -> Any:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = parsed(df).where(
        F.col("group").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
    )
    w = Window.partitionBy("group", "topic", "partition").orderBy("offset")
    before = F.lag("committed_offset").over(w)
    rows = rows.withColumn(
        "changed", before.isNull() | (F.col("committed_offset") != before)
    ).withColumn("first", before.isNull() & F.lag("ts").over(w).isNull())
    last = F.max_by(
        F.struct("tombstone", "committed_offset", "leader_epoch", "metadata_size", "ts"),
        F.col("offset"),
    )
    return (
        rows.groupBy("group", "topic", "partition")
        .agg(
            last.alias("last"),
            F.max(F.when(F.col("changed"), F.col("ts"))).alias("moved_ms"),
            F.sum(F.when(F.col("changed") & ~F.col("first"), 1).otherwise(0)).alias("changes"),
            F.count(F.lit(1)).alias("commits"),
        )
        .select(
            "group",
            "topic",
            "partition",
            F.col("last.tombstone").alias("tombstone"),
            F.col("last.committed_offset").alias("committed_offset"),
            F.col("last.leader_epoch").alias("leader_epoch"),
            F.col("last.metadata_size").alias("metadata_size"),
            F.timestamp_millis("last.ts").alias("commit_time"),
            F.timestamp_millis("moved_ms").alias("moved_time"),
            "changes",
            "commits",
        )
    )


# --- random batches ------------------------------------------------------------------------------
def _keys(rng: random.Random, n: int) -> list[bytes]:
    """``n`` distinct keys: mostly well-formed commit keys (types 1 and 0), a few malformed
    ones and keys of other types."""
    out: set[bytes] = set()
    while len(out) < n:
        group, topic = rng.choice(["g", "grp-a", "é", ""]), rng.choice(["t", "orders", "x.y"])
        partition = rng.choice([0, 1, 2, 7, 499, 2**31 - 1])
        roll = rng.random()
        if roll < 0.8:
            out.add(key(group, topic, partition))
        elif roll < 0.85:
            out.add(struct.pack(">h", 0) + key(group, topic, partition)[2:])
        elif roll < 0.88:
            out.add(key(group, topic, -partition - 1))  # a negative partition
        elif roll < 0.91:
            out.add(struct.pack(">h", 1) + kstr(group) + b"\x00\x02\xff\xfe" + b"\0\0\0\1")
        elif roll < 0.94:
            out.add(struct.pack(">h", 1) + struct.pack(">h", 9) + b"ab" + b"\0\0\0\0")
        elif roll < 0.97:
            out.add(struct.pack(">h", 2) + kstr(group))  # group metadata
        else:
            out.add(bytes(rng.randrange(2, 10)))  # too short for a commit key
    return sorted(out)


def _value(rng: random.Random, offsets: list[int]) -> bytes | None:
    roll = rng.random()
    if roll < 0.12:
        return None
    offset = rng.choice(offsets)
    if roll < 0.2:  # cut short anywhere, even inside the offset
        full = value(rng.randrange(5), offset, meta="abc")
        return full[: rng.randrange(len(full))]
    if roll < 0.23:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(16)))
    meta = rng.choice(["", "m", "x" * 200])
    epoch = rng.choice([-1, 0, 5, 2**31 - 1])
    return value(rng.randrange(5), offset, epoch=epoch, meta=meta, at=rng.randrange(10**12))


def batch(rng: random.Random, n_keys: int, n_records: int) -> list[tuple[Any, ...]]:
    chosen = _keys(rng, n_keys)
    # A few committed offsets per key, so that commits repeat, move and move back.
    offsets = {k: [rng.choice([0, 5, 2**40, -1, 2**63 - 1]) for _ in range(3)] for k in chosen}
    record_offsets = rng.sample(range(10 * n_records), n_records)
    rows: list[tuple[Any, ...]] = []
    nulled: set[bytes] = set()
    for offset in record_offsets:
        k = rng.choice(chosen)
        ts: int | None = rng.choice([1_000, 2_000, 3_000, offset])
        if rng.random() < 0.03:
            ts = None
        record_offset: int | None = offset
        if k not in nulled and rng.random() < 0.01:  # at most one per key: ordered first
            nulled.add(k)
            record_offset = None
        rows.append((k, _value(rng, offsets[k]), record_offset, ts))
    return rows


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.parametrize("arrow_batch", [10_000, 7], ids=["one-arrow-batch", "arrow-batches-of-7"])
def test_newest_matches_window_per_partition(spark: Any, arrow_batch: int) -> None:
    # Batches of 7 rows: a task's commits reach Python in many Arrow batches, a partition's
    # commits split among them.
    conf = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(conf)
    spark.conf.set(conf, str(arrow_batch))
    try:
        rng = random.Random(31 + arrow_batch)
        # Twelve small batches (two Spark jobs each, about 0.7 s a job on two cores) and a
        # large one.
        batches = [batch(rng, rng.randrange(1, 6), rng.randrange(1, 30)) for _ in range(12)]
        batches.append(batch(rng, 60, 2_000))
        for i, rows in enumerate(batches):
            df = as_the_source(frame(spark, rows), 1 + i % 3)
            expected = _rows(reference(df))
            assert _rows(commit_aggregates.per_partition(commit_aggregates.both(df))) == expected
    finally:
        spark.conf.set(conf, before)
    # The large batch exercises what matters: moves back and forth, tombstones last.
    assert any(r[9] >= 3 for r in expected) and any(r[3] for r in expected)
