"""Analysis state in the ``group_state`` Delta table: one version per group per batch.

A batch reads only versions older than itself, so a replay of the batch (after a crash) reads
exactly the state its first attempt read.  Maintenance drops what no batch will read again.

:class:`StateStore` serves those reads from the driver's
:class:`~groupwatch.spark.state_cache.StateCache` of every group's newest version, loaded from
the table once and then kept up to date by the batches: its texts where it holds them, the
others read from the table by key.  :func:`prior_state` and :func:`due_groups` are the table's
own answers, scanned, which the cache's equal (the tests and benchmarks compare them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from groupwatch import clustering, locations, tables
from groupwatch.config import Config
from groupwatch.delta import write as deltawrite
from groupwatch.spark import driver_tally, offsets, sinks
from groupwatch.spark.state_cache import Key, StateCache, Version

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("groupwatch.job")

#: Rows per column batch when Spark reads ``group_state`` with its state column (Spark's default
#: is 4,096).  A group's state is about 25 KB of JSON on average and megabytes for the largest
#: groups, and the vectorized reader holds a column batch in one array: 4,096 rows asked for
#: 85 MB of contiguous heap and ended a live run in OutOfMemoryError during state maintenance.
STATE_READ_BATCH_ROWS = 256
_BATCH_SIZE = "spark.sql.parquet.columnarReaderBatchSize"


def _small_column_batches(spark: SparkSession) -> AbstractContextManager[None]:
    """Spark jobs run inside read Parquet in batches of ``STATE_READ_BATCH_ROWS`` rows."""
    return sinks.session_settings(spark, {_BATCH_SIZE: str(STATE_READ_BATCH_ROWS)})


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
    #: The groups forgotten (deleted or silent): their versions before the batch are gone.
    forgotten: tuple[str, ...] = field(default=())

    @property
    def kept(self) -> int:
        """Groups that keep state."""
        return self.groups - self.gone - self.silent


def _state_columns() -> list[Column]:
    """A ``group_state`` version in the prior state's columns (no offset hint)."""
    from pyspark.sql import functions as F

    return [
        F.col("group"),
        F.col("state"),
        F.unix_millis("last_event_time").alias("last_event_ms"),
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("max_partition"),
        F.lit(None).cast("long").alias("last_commit_ms"),
    ]


def prior_state(spark: SparkSession, config: Config, groups: DataFrame, batch_id: int) -> DataFrame:
    """The newest state of ``groups`` before this batch, read from the table, with the
    partition counts earlier batches' offset commits tell (:func:`offset_hints`)."""
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
        .select(*_state_columns())
    )
    return states.unionByName(offset_hints(spark, config, groups, batch_id))


def offset_hints(
    spark: SparkSession, config: Config, groups: DataFrame, batch_id: int
) -> DataFrame:
    """The partition counts earlier batches' offset commits tell about ``groups``, and when they
    last committed (``rebalance_stuck`` measures silences from it): one row per (group, topic),
    in the prior state's columns with the state null."""
    from pyspark.sql import functions as F

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
            F.unix_millis("last_commit_time").alias("last_commit_ms"),
        )
    )
    return hints


def local_offset_hints(path: Path, version: int, groups: list[str]) -> pa.Table:
    """:func:`offset_hints` of ``groups`` read with delta-rs from a local ``group_offsets`` as
    of ``version``, in the prior state's columns (Arrow)."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]
    from deltalake import DeltaTable

    rows = None
    if groups:
        read = DeltaTable(str(path), version=version).to_pyarrow_table(
            columns=["group", "topic", "max_partition", "last_commit_time"]
        )
        # Cast before filtering: files delta-rs's MERGE wrote read as ``string_view``, which
        # Arrow's comparison and selection kernels do not take.
        typed = pa.table(
            {
                "group": pc.cast(read.column("group"), pa.string()),
                "topic": pc.cast(read.column("topic"), pa.string()),
                "max_partition": pc.cast(read.column("max_partition"), pa.int32()),
                "last_commit_time": pc.cast(
                    read.column("last_commit_time"), pa.timestamp("us", "UTC")
                ),
            }
        )
        rows = typed.filter(pc.is_in(typed.column("group"), pa.array(groups, pa.string())))
    n = 0 if rows is None else rows.num_rows

    def column(name: str, kind: pa.DataType) -> pa.Array:
        if rows is None:
            return pa.array([], kind)
        return pc.cast(rows.column(name), kind)

    millis = pa.array(
        _unix_millis(column("last_commit_time", pa.timestamp("us", "UTC"))), pa.int64()
    )
    return pa.table(
        {
            "group": column("group", pa.string()),
            "state": pa.nulls(n, pa.string()),
            "last_event_ms": pa.nulls(n, pa.int64()),
            "topic": column("topic", pa.string()),
            "max_partition": column("max_partition", pa.int32()),
            "last_commit_ms": millis,
        }
    )


#: Up to this many keys, :func:`keyed_state` names their groups in the scan's filter.
KEYED_SCAN_NAMES = 1_000


def keyed_state(spark: SparkSession, config: Config, keys: list[Key]) -> DataFrame:
    """The versions named by ``keys`` (the cache's newest versions whose texts it dropped),
    read by Spark in the workers, in :func:`prior_state`'s columns.  The files are chosen by
    their ``batch_id`` statistics: a batch's versions are appended in files of their own."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    ids = sorted({k.batch_id for k in keys})
    # A live batch's few groups named in the scan too: Parquet's row groups (small, sorted by
    # group: ``Table.read_by``) are skipped by their statistics.  A start-up's batch names too
    # many for a plan, and reads most files anyway.
    names = sorted({k.group for k in keys}) if len(keys) <= KEYED_SCAN_NAMES else []
    # As Arrow: a start-up's batch may name every group of the fleet.
    wanted = spark.createDataFrame(
        pa.table(
            {
                "group": pa.array([k.group for k in keys], pa.string()),
                "batch_id": pa.array([k.batch_id for k in keys], pa.int64()),
            }
        )
    )
    return (
        spark.read.format("delta")
        .load(config.table_path(tables.GROUP_STATE.name))
        .where(F.col("batch_id").isin(ids))
        .where(F.col("group").isin(names) if names else F.lit(True))
        .join(wanted, ["group", "batch_id"], "left_semi")
        .select(*_state_columns())
    )


def local_keyed_state(path: Path, keys: list[Key]) -> pa.Table:
    """:func:`keyed_state` read on the driver from a local ``group_state``: (group, state,
    last_event_ms) of each key, as Arrow.  Only the files whose ``batch_id`` statistics in the
    log may hold a key are opened (delta-rs's file pruning), and of each only the row groups
    whose ``group`` statistics may hold one of the groups (the batches write the table sorted
    by group in small row groups: ``STATE_ROW_GROUP_BYTES``, ``STATE_ROW_GROUP_ROWS``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq  # type: ignore[import-untyped]
    from deltalake import DeltaTable

    ids = sorted({k.batch_id for k in keys})
    wanted = {(k.group, k.batch_id) for k in keys}
    names = sorted({k.group.encode() for k in keys})
    columns = ["group", "batch_id", "state", "last_event_time"]
    parts = []
    # No deletion vectors on a table delta-rs writes (the driver's appends and maintenance),
    # and the rows kept are exact keys, which maintenance never deletes (a group's newest
    # version): the files' rows are the table's.
    for uri in DeltaTable(str(path)).file_uris(file_pruning_predicate=[("batch_id", "in", ids)]):
        with pq.ParquetFile(uri) as source:
            at = clustering.row_groups(clustering.row_group_bounds(source.metadata, "group"), names)
            if at:
                read = source.read_row_groups(at, columns=columns)
                # Files a delta-rs MERGE rewrote (maintenance's) hold ``string_view``.
                parts.append(
                    pa.table(
                        {
                            "group": pc.cast(read.column("group"), pa.string()),
                            "batch_id": pc.cast(read.column("batch_id"), pa.int64()),
                            "state": pc.cast(read.column("state"), pa.string()),
                            # Spark writes INT96, which reads as nanoseconds.
                            "last_event_ms": pa.array(
                                _unix_millis(
                                    pc.cast(
                                        read.column("last_event_time"),
                                        pa.timestamp("us", "UTC"),
                                    )
                                ),
                                pa.int64(),
                            ),
                        }
                    )
                )
    if not parts:
        return pa.table(
            {
                "group": pa.array([], pa.string()),
                "state": pa.array([], pa.string()),
                "last_event_ms": pa.array([], pa.int64()),
            }
        )
    read = pa.concat_tables(parts)
    # A group's other versions, and other groups in the row groups read: exact keys only.
    keep = pa.array(
        [
            (g, b) in wanted
            for g, b in zip(
                read.column("group").to_pylist(), read.column("batch_id").to_pylist(), strict=True
            )
        ],
        pa.bool_(),
    )
    return read.filter(keep).select(list(_BY_KEY))


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
    return sorted(r["group"] for r in driver_tally.rows("due groups", due.collect()))


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
    local = _local_tables(config)
    if local is not None:
        return _logged(batch_id, _maintain_on_driver(config, batch_id, clock_ms, *local))
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
        forgotten: tuple[str, ...] = ()
        if summary is not None and (summary["gone"] or summary["silent"]):
            names = verdict.where(F.col("gone") | F.col("silent")).select("group").collect()
            forgotten = tuple(sorted(r["group"] for r in names))
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
            with _small_column_batches(spark):
                sinks.run_once(spark, merge.execute, sinks.MAINTENANCE_APP_ID, batch_id)
    finally:
        verdict.unpersist()
    assert summary is not None
    return _logged(
        batch_id,
        Maintenance(
            dropped=dropped,
            groups=int(summary["groups"]),
            gone=int(summary["gone"] or 0),
            silent=int(summary["silent"] or 0),
            forgotten=forgotten,
        ),
    )


def _logged(batch_id: int, done: Maintenance) -> Maintenance:
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


def _local_tables(config: Config) -> tuple[Path, Path] | None:
    """``group_state`` and ``group_offsets`` where the driver reads them, if both are local."""
    state = locations.local_path(config.table_path(tables.GROUP_STATE.name))
    commits = locations.local_path(config.table_path(tables.GROUP_OFFSETS.name))
    return None if state is None or commits is None else (state, commits)


def _maintain_on_driver(
    config: Config, batch_id: int, clock_ms: int, state: Path, commits: Path
) -> Maintenance:
    """:func:`maintain` of local tables from the driver: the versions' small columns and the
    groups' newest commits read with delta-rs, the verdict in Arrow (the same rules as Spark's,
    nulls alike), the doomed versions deleted by a delta-rs MERGE under the same transaction
    id.  Spark's took 11-12 s a run at 10,000 groups, a stall of one batch in every
    ``job.state_maintenance_every_n_batches``: its jobs read and join every version.  The
    verdict is Arrow's group-bys and joins rather than a loop per row: at 100,000 groups the
    loop was most of the stall (bench/bench_maintenance.py)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    read = DeltaTable(str(state)).to_pyarrow_table(
        columns=["group", "batch_id", "deleted", "last_event_time"]
    )
    # Cast first: files a delta-rs MERGE wrote read as ``string_view``.  Times stay in
    # microseconds: Spark's ``unix_millis`` floors, and a floor keeps both the order and the
    # comparison with a whole number of milliseconds (``horizon`` below).
    rows = pa.table(
        {
            "group": pc.cast(read.column("group"), pa.string()),
            "batch_id": pc.cast(read.column("batch_id"), pa.int64()),
            "deleted": pc.cast(read.column("deleted"), pa.bool_()),
            "event_us": pc.cast(
                pc.cast(read.column("last_event_time"), pa.timestamp("us", "UTC")), pa.int64()
            ),
        }
    )
    # A null batch id compares as null, and a filter drops it.
    rows = rows.filter(pc.less_equal(rows.column("batch_id"), batch_id))
    older = pc.less(rows.column("batch_id"), batch_id)
    rows = rows.append_column(
        "older_batch", pc.if_else(older, rows.column("batch_id"), pa.scalar(None, pa.int64()))
    ).append_column("touched", pc.equal(rows.column("batch_id"), batch_id))
    per_group = rows.group_by("group").aggregate(
        [("older_batch", "max"), ("touched", "any"), ("event_us", "max")]
    )
    # The ``deleted`` of each group's newest version before the batch.
    newest = per_group.select(["group", "older_batch_max"]).rename_columns(["group", "batch_id"])
    gone_of = (
        rows.select(["group", "batch_id", "deleted"])
        .join(
            newest.filter(pc.is_valid(newest.column("batch_id"))),
            ["group", "batch_id"],
            join_type="inner",
        )
        .group_by("group")
        .aggregate([("deleted", "any")])
    )
    offsets_read = DeltaTable(str(commits)).to_pyarrow_table(columns=["group", "last_commit_time"])
    newest_commit = (
        pa.table(
            {
                "group": pc.cast(offsets_read.column("group"), pa.string()),
                "commit_us": pc.cast(
                    pc.cast(offsets_read.column("last_commit_time"), pa.timestamp("us", "UTC")),
                    pa.int64(),
                ),
            }
        )
        .group_by("group")
        .aggregate([("commit_us", "max")])
    )
    verdict = per_group.join(gone_of, "group", join_type="left outer").join(
        newest_commit, "group", join_type="left outer"
    )
    gone = pc.fill_null(verdict.column("deleted_any"), False)
    # Spark's ``greatest`` skips a null: no event leaves the commit time (or 0).
    commit_us = pc.fill_null(verdict.column("commit_us_max"), 0)
    event_us = verdict.column("event_us_max")
    seen_us = pc.if_else(pc.is_null(event_us), commit_us, pc.max_element_wise(event_us, commit_us))
    hours = config.job.expire_idle_groups_hours
    horizon = clock_ms - hours * 3_600_000
    if hours > 0:
        silent = pc.and_(
            pc.invert(pc.fill_null(verdict.column("touched_any"), False)),
            pc.less(seen_us, horizon * 1000),
        )
    else:
        silent = pa.array([False] * verdict.num_rows, pa.bool_())
    forget = pc.or_(gone, silent)
    judged = pa.table(
        {
            "group": verdict.column("group"),
            "newest_before": verdict.column("older_batch_max"),
            "forget": forget,
        }
    )
    older_rows = (
        rows.filter(older).select(["group", "batch_id"]).join(judged, "group", join_type="inner")
    )
    superseded = pc.fill_null(
        pc.less(older_rows.column("batch_id"), older_rows.column("newest_before")), False
    )
    doomed = older_rows.filter(pc.or_(superseded, older_rows.column("forget"))).select(
        ["group", "batch_id"]
    )
    forgotten = sorted(judged.filter(forget).column("group").to_pylist())
    gone_count = pc.sum(pc.cast(gone, pa.int64())).as_py() or 0
    silent_count = pc.sum(pc.cast(silent, pa.int64())).as_py() or 0
    if doomed.num_rows:
        deltawrite.delete_matching_once(
            state,
            doomed,
            sinks.MAINTENANCE_APP_ID,
            batch_id,
            on="t.`group` = s.`group` AND t.batch_id = s.batch_id",
            table=tables.GROUP_STATE,
        )
    return Maintenance(
        dropped=doomed.num_rows,
        groups=verdict.num_rows,
        gone=int(gone_count),
        silent=int(silent_count),
        forgotten=tuple(forgotten),
    )


#: The columns of a version read by key (:meth:`StateStore.prior_arrow`).
_BY_KEY = ("group", "state", "last_event_ms")

#: The columns of ``group_state`` a cached version holds (``batch_id`` given apart when the rows
#: are a batch's own output).
_CACHED = ("group", "state", "last_event_time", "deleted", "pending_until", "pending_partition")


def _unix_millis(times: pa.Array | pa.ChunkedArray) -> list[int | None]:
    """Timestamps (microseconds) as epoch milliseconds, floored as Spark's ``unix_millis``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    micros = pc.cast(times, pa.int64()).to_pylist()
    return [None if us is None else us // 1000 for us in micros]


def versions(rows: pa.Table, batch_id: int | None = None) -> Iterator[tuple[str, Version]]:
    """``group_state`` rows (Arrow, from the table or a batch's output) as cached versions;
    ``batch_id``: the batch of every row when the rows carry none."""
    batches = (
        [batch_id] * rows.num_rows if batch_id is not None else rows.column("batch_id").to_pylist()
    )
    # Versions read without their texts (the cache's keys alone) have no state column.
    texts = (
        rows.column("state").to_pylist() if "state" in rows.column_names else [None] * rows.num_rows
    )
    for group, batch, state, last, deleted, until, partition in zip(
        rows.column("group").to_pylist(),
        batches,
        texts,
        _unix_millis(rows.column("last_event_time")),
        rows.column("deleted").to_pylist(),
        _unix_millis(rows.column("pending_until")),
        rows.column("pending_partition").to_pylist(),
        strict=True,
    ):
        # A null ``deleted`` reads as deleted: the table path's ``NOT deleted`` drops it too.
        yield group, Version(batch, deleted is not False, state, last, until, partition)


def cache_budget(config: Config) -> int:
    """The driver's state cache's budget in bytes (``job.state_cache_mb``; 0: no text held,
    every group's key only)."""
    return config.job.state_cache_mb * 1_000_000


class StateStore:
    """The state reads of a query's batches, from the driver's cache of every group's newest
    version (:class:`StateCache`): its texts where held, the others read by key.  The cache
    mirrors ``group_state`` up to the previous batch, or is (re)loaded from it first."""

    def __init__(self, spark: SparkSession, config: Config) -> None:
        self.spark = spark
        self.config = config
        self.cache = StateCache(cache_budget(config))
        #: A batch whose state versions the table held before it ran (a replay): what it
        #: computes again need not be what the table keeps, so the cache does not take it in
        #: and the next batch reloads from the table.
        self._replay: int | None = None

    def wants(self, batch_id: int) -> bool:
        """Whether :meth:`record` would take this batch's versions in (collect them only then)."""
        return self.cache.covers(batch_id) and self._replay != batch_id

    def due_groups(self, batch_id: int, clocks: dict[int, int]) -> list[str]:
        """Groups whose newest state awaits a confirmation that this batch's clocks make due."""
        if not clocks:
            return []
        self.serve(batch_id)
        return self.cache.due(clocks)

    def prior_state(self, groups: DataFrame, batch_id: int) -> DataFrame:
        """As :func:`prior_state`, from the cache; the texts it does not hold read by key in
        the workers (:func:`keyed_state`), so a batch of a fleet's groups (a start-up's)
        brings none of them to the driver."""
        self.serve(batch_id)
        asked = [r["group"] for r in driver_tally.rows("groups", groups.collect())]
        held, by_key = self.cache.split(asked)
        known = self.spark.createDataFrame(self._prior_arrow(asked, held, batch_id))
        if not by_key:
            return known
        return known.unionByName(keyed_state(self.spark, self.config, by_key))

    def prior_arrow(self, groups: list[str], batch_id: int) -> pa.Table:
        """The prior state of ``groups`` (in :func:`prior_state`'s columns) as Arrow, from the
        cache, which must serve this batch (:meth:`serve`); the texts it does not hold read by
        key on the driver (a small batch's few groups)."""
        assert self.cache.covers(batch_id)
        held, by_key = self.cache.split(groups)
        if by_key:
            held = held + self._read_by_key(by_key)
        return self._prior_arrow(groups, held, batch_id)

    def _read_by_key(self, keys: list[Key]) -> list[tuple[str, str | None, int | None]]:
        """The texts of ``keys`` read on the driver: with delta-rs from a local table, by Spark
        (collected) from another."""
        path = locations.local_path(self.config.table_path(tables.GROUP_STATE.name))
        if path is not None:
            read = local_keyed_state(path, keys)
        else:
            read = keyed_state(self.spark, self.config, keys).select(*_BY_KEY).toArrow()
        rows = driver_tally.arrow("state by key", read)
        return list(
            zip(
                rows.column("group").to_pylist(),
                rows.column("state").to_pylist(),
                rows.column("last_event_ms").to_pylist(),
                strict=True,
            )
        )

    def _prior_arrow(
        self,
        groups: list[str],
        found: list[tuple[str, str | None, int | None]],
        batch_id: int,
    ) -> pa.Table:
        """``found``'s states with the offset hints of ``groups``, in :func:`prior_state`'s
        columns."""
        import pyarrow as pa

        names, states, last = zip(*found, strict=True) if found else ((), (), ())
        arrow = pa.table(
            {
                "group": pa.array(names, pa.string()),
                "state": pa.array(states, pa.string()),
                "last_event_ms": pa.array(last, pa.int64()),
                "topic": pa.nulls(len(names), pa.string()),
                "max_partition": pa.nulls(len(names), pa.int32()),
                "last_commit_ms": pa.nulls(len(names), pa.int64()),
            }
        )
        path = locations.local_path(self.config.table_path(tables.GROUP_OFFSETS.name))
        if path is None:
            asked = self.spark.createDataFrame([(g,) for g in groups], "group string")
            hints = driver_tally.arrow(
                "offset hints", offset_hints(self.spark, self.config, asked, batch_id).toArrow()
            )
        else:
            # Read on the driver: Spark plans a read of an earlier version by loading that
            # snapshot from the log, 1.3-1.6 s a batch on a table of 300 versions.
            version = offsets.version_before(self.spark, self.config, batch_id)
            hints = driver_tally.arrow(
                "offset hints",
                local_offset_hints(path, version, [g for g in groups if g is not None]),
            )
        return pa.concat_tables([arrow, hints.cast(arrow.schema)])

    def record(self, batch_id: int, rows: pa.Table) -> None:
        """The state versions this batch wrote (after its ``group_state`` write)."""
        if not self.wants(batch_id):
            return
        dropped = self.cache.dropped_texts
        self.cache.add(batch_id, versions(rows, batch_id))
        if dropped == 0 and self.cache.dropped_texts and self.cache.budget_bytes > 0:
            log.warning(
                "state cache: the groups' state texts are over job.state_cache_mb; the texts "
                "written longest ago are dropped, and a batch reads those it asks for from "
                "group_state by key (each group's key, times and timer stay held)"
            )

    def forget(self, groups: Iterable[str], batch_id: int) -> None:
        """State maintenance of this batch deleted these groups' older versions."""
        self.cache.forget(groups, batch_id)

    def settle(self, batch_id: int, *, completed: bool) -> None:
        """The batch ended: the cache now mirrors it, or is dropped if the batch failed or was
        a replay (its first attempt's versions stand in the table, this attempt's write was
        skipped)."""
        if completed and self._replay != batch_id:
            self.cache.settle(batch_id)
        else:
            self.cache.invalidate()

    def serve(self, batch_id: int) -> None:
        """Make the cache mirror the table up to the previous batch: (re)loaded from it unless
        it already does."""
        if not self.cache.covers(batch_id) and load(self.spark, self.config, self.cache, batch_id):
            self._replay = batch_id


def load(spark: SparkSession, config: Config, cache: StateCache, batch_id: int) -> bool:
    """Fill ``cache`` with each group's newest version older than ``batch_id``: one pass over
    the table for the versions' keys and sizes, a second for the versions, with the texts of
    the most recently written that fit (:meth:`StateCache.texts_to_hold`; the others are read
    by key when a batch asks).  Whether the table already holds versions of this batch or
    later (the batch is a replay)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    started = time.monotonic()
    everything = spark.read.format("delta").load(config.table_path(tables.GROUP_STATE.name))
    replay = bool(everything.where(F.col("batch_id") >= batch_id).select("batch_id").take(1))
    table = everything.where(F.col("batch_id") < batch_id)
    newest = (
        table.groupBy("group")
        .agg(
            F.max("batch_id").alias("batch_id"),
            F.max_by(F.coalesce(F.length("state"), F.lit(0)), F.col("batch_id")).alias("chars"),
        )
        .persist()
    )
    try:
        size = newest.agg(
            F.count(F.lit(1)).alias("groups"), F.sum(F.coalesce("chars", F.lit(0))).alias("chars")
        ).first()
        assert size is not None
        cache.invalidate()
        groups, chars = int(size["groups"]), int(size["chars"] or 0)
        versions_read = newest
        if cache.fits(groups, chars):
            held = F.lit(True)
        else:
            # The keys and sizes of every group (a few tens of bytes each) decide whose texts
            # are read: the most recently written that fit.
            sizes = driver_tally.arrow("state cache load", newest.toArrow())
            chosen = cache.texts_to_hold(
                zip(
                    sizes.column("group").to_pylist(),
                    sizes.column("batch_id").to_pylist(),
                    sizes.column("chars").to_pylist(),
                    strict=True,
                )
            )
            names = spark.createDataFrame(
                pa.table({"group": pa.array(sorted(chosen), pa.string())})
            ).withColumn("_held", F.lit(True))
            versions_read = newest.join(F.broadcast(names), "group", "left")
            held = F.coalesce(F.col("_held"), F.lit(False))
        with _small_column_batches(spark):
            rows = (
                table.join(
                    versions_read.select("group", "batch_id", held.alias("_held")),
                    ["group", "batch_id"],
                )
                .select(
                    *[
                        F.when(F.col("_held"), F.col(c)).alias(c) if c == "state" else c
                        for c in _CACHED
                    ],
                    "batch_id",
                    "_held",
                )
                .toArrow()
            )
            driver_tally.arrow("state cache load", rows)
    finally:
        newest.unpersist()
    marks = rows.column("_held").to_pylist()
    # Held in the order written, so that the texts written longest ago are the first dropped.
    loaded = sorted(versions(rows), key=lambda gv: gv[1].batch_id)
    keep = {g for g, m in zip(rows.column("group").to_pylist(), marks, strict=True) if m}
    cache.reset(
        batch_id - 1,
        [(g, v) for g, v in loaded if g in keep],
        keys_only=[(g, v) for g, v in loaded if g not in keep],
    )
    log.info(
        "batch %d: state cache loaded from group_state: %d group(s), %.1f MB, in %.1f s%s",
        batch_id,
        len(cache),
        cache.size_bytes / 1e6,
        time.monotonic() - started,
        ""
        if len(keep) == len(cache)
        else f"; {len(cache) - len(keep)} group(s)' texts are over job.state_cache_mb "
        f"({chars / 1e6:.0f} MB in all): read by key as batches ask",
    )
    return replay
