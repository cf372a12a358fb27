"""Analysis state in the ``group_state`` Delta table: one version per group per batch.

A batch reads only versions older than itself, so a replay of the batch (after a crash) reads
exactly the state its first attempt read.  Maintenance drops what no batch will read again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.spark import offsets, sinks

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("groupwatch.job")


@dataclass(frozen=True)
class Maintenance:
    """What one state maintenance did."""

    #: State versions deleted.
    dropped: int
    #: Groups with a state version up to the batch.
    groups: int
    #: Groups forgotten because they were deleted (tombstone).
    gone: int
    #: Groups forgotten because they were silent for ``job.expire_idle_groups_hours``.
    silent: int

    @property
    def kept(self) -> int:
        """Groups that keep state."""
        return self.groups - self.gone - self.silent


def prior_state(spark: SparkSession, config: Config, groups: DataFrame, batch_id: int) -> DataFrame:
    """The newest state of ``groups`` before this batch, with the partition counts earlier
    batches' offset commits tell (one row per (group, topic), state null)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    path = config.table_path(tables.GROUP_STATE.name)
    versions = (
        spark.read.format("delta")
        .load(path)
        .where(F.col("batch_id") < batch_id)
        .join(groups, "group", "left_semi")
    )
    newest = Window.partitionBy("group").orderBy(F.col("batch_id").desc())
    states = (
        versions.withColumn("_n", F.row_number().over(newest))
        .where("_n = 1 AND NOT deleted")
        .select(
            "group",
            "state",
            F.unix_millis("last_event_time").alias("last_event_ms"),
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("max_partition"),
        )
    )
    # Offset commits of earlier batches tell partition counts: the table as it was before
    # this batch's MERGE (which may already have run, if this is a replay). The batch's
    # own commits come among the records, in their place, as analyze sees them.
    path = config.table_path(tables.GROUP_OFFSETS.name)
    hints = (
        spark.read.format("delta")
        .option("versionAsOf", offsets.version_before(spark, config, batch_id))
        .load(path)
        .join(groups, "group", "left_semi")
        .select(
            "group",
            F.lit(None).cast("string").alias("state"),
            F.lit(None).cast("long").alias("last_event_ms"),
            "topic",
            "max_partition",
        )
    )
    return states.unionByName(hints)


def due_groups(
    spark: SparkSession, config: Config, batch_id: int, clocks: dict[int, int]
) -> list[str]:
    """Groups whose newest state awaits a confirmation that this batch's clocks make due."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not clocks:
        return []
    versions = (
        spark.read.format("delta")
        .load(config.table_path(tables.GROUP_STATE.name))
        .where(F.col("batch_id") < batch_id)
    )
    waiting = versions.where(F.col("pending_until").isNotNull()).select("group").distinct()
    newest = Window.partitionBy("group").orderBy(F.col("batch_id").desc())
    clock = F.create_map(*[F.lit(v) for kv in sorted(clocks.items()) for v in kv])
    partition_clock = F.when(
        F.col("pending_partition").isNull(), F.lit(max(clocks.values()))
    ).otherwise(F.try_element_at(clock, F.col("pending_partition")))
    due = (
        versions.join(waiting, "group", "left_semi")
        .withColumn("_n", F.row_number().over(newest))
        .where("_n = 1 AND NOT deleted AND pending_until IS NOT NULL")
        .where(F.unix_millis("pending_until") <= partition_clock)
        .select("group")
    )
    return sorted(r["group"] for r in due.collect())


def maintain(
    spark: SparkSession, config: Config, batch_id: int, clock_ms: int
) -> Maintenance | None:
    """Every N-th batch: drop state versions no batch will read again, and the state of
    deleted groups and of groups silent for ``job.expire_idle_groups_hours``; None on the
    batches in between (or with ``job.state_maintenance_every_n_batches`` 0).

    Only versions older than this batch are dropped, and never the newest of them, so a
    replay of this batch (after a crash) reads exactly the state its first attempt read.
    A silent group has no version in this batch, so a replay never reads its state either.
    """
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    job = config.job
    every = job.state_maintenance_every_n_batches
    if every <= 0 or batch_id % every:
        return None
    path = config.table_path(tables.GROUP_STATE.name)
    versions = spark.read.format("delta").load(path).where(F.col("batch_id") <= batch_id)
    older = F.col("batch_id") < batch_id
    per_group = versions.groupBy("group").agg(
        F.max(F.when(older, F.col("batch_id"))).alias("newest_before"),
        F.max_by(F.when(older, F.col("deleted")), F.when(older, F.col("batch_id"))).alias("gone"),
        (F.max("batch_id") == batch_id).alias("touched"),
        F.max("last_event_time").alias("last_event_time"),
    )
    commits = (
        spark.read.format("delta")
        .load(config.table_path(tables.GROUP_OFFSETS.name))
        .groupBy("group")
        .agg(F.max("last_commit_time").alias("last_commit_time"))
    )
    hours = job.expire_idle_groups_hours
    last_seen = F.greatest(
        F.unix_millis("last_event_time"),
        F.coalesce(F.unix_millis("last_commit_time"), F.lit(0)),
    )
    silent = (
        (~F.col("touched")) & (last_seen < F.lit(clock_ms - hours * 3_600_000))
        if hours > 0
        else F.lit(False)
    )
    verdict = (
        per_group.join(commits, "group", "left")
        .select(
            "group",
            "newest_before",
            F.coalesce(F.col("gone"), F.lit(False)).alias("gone"),
            silent.alias("silent"),
        )
        .persist()
    )
    try:
        doomed = versions.join(verdict, "group").where(
            older & ((F.col("batch_id") < F.col("newest_before")) | F.col("gone") | F.col("silent"))
        )
        summary = verdict.agg(
            F.count(F.lit(1)).alias("groups"),
            F.sum(F.col("gone").cast("int")).alias("gone"),
            F.sum(F.col("silent").cast("int")).alias("silent"),
        ).first()
        dropped = doomed.count()
        if dropped:
            target = DeltaTable.forPath(spark, path)
            merge = (
                target.alias("t")
                .merge(
                    doomed.select("group", "batch_id").alias("s"),
                    "t.group = s.group AND t.batch_id = s.batch_id",
                )
                .whenMatchedDelete()
            )
            # Its own transaction app id: the batch's append already holds APP_ID's.
            sinks.run_once(spark, merge.execute, sinks.MAINTENANCE_APP_ID, batch_id)
    finally:
        verdict.unpersist()
    assert summary is not None
    done = Maintenance(
        dropped=dropped,
        groups=int(summary["groups"]),
        gone=int(summary["gone"] or 0),
        silent=int(summary["silent"] or 0),
    )
    log.info(
        "batch %d: state maintenance dropped %d version(s): %d deleted and %d silent "
        "group(s) forgotten; %d group(s) keep state",
        batch_id,
        done.dropped,
        done.gone,
        done.silent,
        done.kept,
    )
    return done
