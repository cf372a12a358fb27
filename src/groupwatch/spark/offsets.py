"""Offset commits, most of ``__consumer_offsets``, never reach Python: the JVM aggregates a
batch's commits per (group, topic) and MERGEs them into ``group_offsets``.

Each MERGE leaves a note naming its batch in the table's history, so that a batch (or its
replay) can read the table as it was before its own MERGE (:func:`version_before`): the
partition counts earlier batches' commits tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.spark import keys, sinks

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def batch_note(batch_id: int) -> str:
    """The note a batch's ``group_offsets`` MERGE leaves in the table's history."""
    return f"{sinks.APP_ID} batch {batch_id}"


def merge_commits(
    spark: SparkSession, config: Config, df: DataFrame, batch_id: int
) -> Column | None:
    """Aggregate the batch's offset commits per (group, topic) and MERGE them into
    ``group_offsets``; returns a condition matching the commits whose keys are malformed
    (``None`` if there are none), which go to Python to be decoded and quarantined."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    key = F.col("key")
    aggregated = (
        df.where(F.col("rtype").isin(*keys.OFFSET_COMMIT_TYPES))
        .groupBy(keys.commit_prefix(key).alias("prefix"))
        .agg(
            F.max(keys.commit_partition_bytes(key)).alias("partition"),
            F.count(F.lit(1)).alias("commits"),
            F.max("ts").alias("ts"),
        )
        .select(
            "prefix",
            keys.prefix_group(F.col("prefix")).alias("group"),
            keys.prefix_topic(F.col("prefix")).alias("topic"),
            keys.partition_of(F.col("partition")).alias("max_partition"),
            "commits",
            F.timestamp_millis("ts").alias("last_commit_time"),
        )
        .persist()
    )
    try:
        wellformed = F.col("group").isNotNull() & F.col("topic").isNotNull()
        table = tables.GROUP_OFFSETS
        target = DeltaTable.forPath(spark, config.table_path(table.name))
        merge = (
            target.alias("t")
            .merge(
                sinks.conform(aggregated.where(wellformed), table).alias("s"),
                "t.group = s.group AND t.topic = s.topic",
            )
            .whenMatchedUpdate(
                set={
                    "max_partition": "greatest(t.max_partition, s.max_partition)",
                    "commits": "t.commits + s.commits",
                    "last_commit_time": "greatest(t.last_commit_time, s.last_commit_time)",
                }
            )
            .whenNotMatchedInsertAll()
        )
        with sinks.commit_note(spark, batch_note(batch_id)):
            sinks.run_once(spark, merge.execute, sinks.APP_ID, batch_id)
        # Malformed keys are rare: their prefixes come to the driver, and the rows they
        # stand for are picked out of the persisted batch by the caller.
        bad = [r["prefix"] for r in aggregated.where(~wellformed).select("prefix").collect()]
    finally:
        aggregated.unpersist()
    if not bad:
        return None
    prefix = keys.commit_prefix(key)
    known = [bytearray(p) for p in bad if p is not None]
    malformed = prefix.isNull() if None in bad else F.lit(False)
    if known:
        malformed = malformed | prefix.isin(*known)
    return F.col("rtype").isin(*keys.OFFSET_COMMIT_TYPES) & malformed


def version_before(spark: SparkSession, config: Config, batch_id: int) -> int:
    """The ``group_offsets`` version before this batch's MERGE (found by its note)."""
    from delta.tables import DeltaTable

    path = config.table_path(tables.GROUP_OFFSETS.name)
    history = DeltaTable.forPath(spark, path).history(2).collect()
    for entry in history:
        if entry["userMetadata"] == batch_note(batch_id):
            return int(entry["version"]) - 1
    return max(int(entry["version"]) for entry in history)
