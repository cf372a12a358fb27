"""The latest committed offset per (group, topic, partition), kept without Python: the JVM
takes the offset, leader epoch and metadata size out of the commit values with byte
arithmetic, keeps each partition's newest commit of the batch, and MERGEs it into
``committed_offsets``; a batch whose newest record for a partition is a tombstone (the offset
was deleted or expired, the group deleted) removes the row.

``OffsetCommitValue`` is never flexible before v4 and its first fields have fixed places: an
int16 version, the int64 offset, then (v3+) the int32 leader epoch, then the metadata string
(an int16 length; a compact string with an unsigned-varint length at v4). The commit's time is
the record's own time, which the coordinator sets when it writes the commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import deltawrite, keys, sinks

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: The app id of this table's writes (a transaction per batch, apart from ``group_offsets``').
APP_ID = f"{sinks.APP_ID}-committed"


def _int(value: Column, pos: int | Column, width: int) -> Column:
    """A signed big-endian integer of ``width`` (4 or 8) bytes at 1-based ``pos``."""
    from pyspark.sql import functions as F

    pos_col = F.lit(pos) if isinstance(pos, int) else pos
    raw = value.substr(pos_col, F.lit(width))
    # conv(..., 16, -10) reads the hex as a signed 64-bit number.
    as_long = F.conv(F.hex(raw), 16, -10).cast("long")
    if width == 8:
        return F.when(F.length(raw) == 8, as_long)
    return F.when(
        F.length(raw) == width,
        F.when(as_long >= 2 ** (8 * width - 1), as_long - 2 ** (8 * width)).otherwise(as_long),
    )


def parsed(df: DataFrame) -> DataFrame:
    """Offset-commit rows with group, topic, partition, offset, epoch and metadata size."""
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


def newest(df: DataFrame) -> DataFrame:
    """Each partition's newest commit (or tombstone) of the batch, and when its committed
    offset last changed within the batch (``changes`` = how many times it did)."""
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


#: How a partition's row takes the batch's newest commit (SQL over t and s, both writers).
_UPDATE = {
    "committed_offset": "s.committed_offset",
    "leader_epoch": "s.leader_epoch",
    "metadata_size": "s.metadata_size",
    "commit_time": "s.commit_time",
    # Unchanged through the batch and equal to the table's: it has not moved since then.
    "moved_time": "CASE WHEN s.changes = 0 AND s.committed_offset = t.committed_offset "
    "THEN t.moved_time ELSE s.moved_time END",
    "commits": "t.commits + s.commits",
}
_INSERT = {c.name: f"s.{c.name}" for c in tables.COMMITTED_OFFSETS.columns}
_ON = "t.group = s.group AND t.topic = s.topic AND t.partition = s.partition"


def merge(spark: SparkSession, config: Config, df: DataFrame, batch_id: int) -> None:
    """MERGE the batch's newest commits into ``committed_offsets`` (once per batch)."""
    rows = newest(df).persist()
    try:
        if sinks.on_driver(config, rows.count()):
            _merge_on_driver(config, rows, batch_id)
        else:
            _merge_by_spark(spark, config, rows, batch_id)
    finally:
        rows.unpersist()


#: Tables seen holding rows: once a table has rows its MERGEs stay MERGEs (no size check).
_FILLED: set[str] = set()


def _merge_by_spark(spark: SparkSession, config: Config, rows: DataFrame, batch_id: int) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    path = config.table_path(tables.COMMITTED_OFFSETS.name)
    target = DeltaTable.forPath(spark, path)
    if path not in _FILLED:
        detail = target.detail().select("numFiles").first()
        if detail is not None and detail[0] == 0:
            # A start-up's first batch: every partition is new, so the MERGE would insert
            # every row that is not a tombstone; an append of those is the same table at a
            # fraction of the cost (no join against the target), under the same transaction.
            columns = [c.name for c in tables.COMMITTED_OFFSETS.columns]
            fresh = rows.where(~F.col("tombstone")).select(*columns)
            sinks.append_once(fresh, tables.COMMITTED_OFFSETS, config, APP_ID, batch_id)
            return
        _FILLED.add(path)
    merge = (
        target.alias("t")
        .merge(rows.alias("s"), _ON)
        .whenMatchedDelete(condition="s.tombstone")
        .whenMatchedUpdate(set=dict(_UPDATE))
        .whenNotMatchedInsert(condition="NOT s.tombstone", values=dict(_INSERT))
    )
    sinks.run_once(spark, merge.execute, APP_ID, batch_id)


def _merge_on_driver(config: Config, rows: DataFrame, batch_id: int) -> None:
    deltawrite.merge_rows_once(
        sinks.local_table(config, tables.COMMITTED_OFFSETS),
        rows.toArrow(),
        APP_ID,
        batch_id,
        on=_ON,
        delete_when="s.tombstone",
        update=_UPDATE,
        insert=_INSERT,
        insert_when="NOT s.tombstone",
    )
