"""Delta sinks: tables created from ``groupwatch.tables``, written exactly once per micro-batch.

Exactly once across a crash: Spark replays the last unfinished micro-batch with the same id and
the same input.  Appends carry Delta's ``txnAppId``/``txnVersion`` (the batch id), so a replayed
append that already committed is skipped by Delta itself; MERGEs match on the table's key and
carry the same transaction id through the session confs, so they are skipped too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupwatch import locations, storage, upkeep
from groupwatch.config import Config
from groupwatch.delta import checksum
from groupwatch.spark import driver_tally
from groupwatch.tables import KEYED_ROW_GROUP_BYTES, TABLES, Table

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("groupwatch.job")

#: The transaction app id of the job's writes: with the batch id, what Delta skips on replay.
APP_ID = "groupwatch-job"
#: State maintenance's own app id (its DELETE commits to a table the batch appended to).
MAINTENANCE_APP_ID = "groupwatch-state-maintenance"

_TXN_APP = "spark.databricks.delta.write.txnAppId"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def ensure_tables(spark: SparkSession, config: Config) -> None:
    """Create every missing table, empty, with its declared schema and partitioning and the
    upkeep's table properties (:func:`groupwatch.upkeep.properties`); an existing table gets
    the columns and properties it lacks."""
    from delta.tables import DeltaTable

    for table in TABLES.values():
        path = config.table_path(table.name)
        local = locations.local_path(path)
        wanted = upkeep.properties(config.upkeep, local=local is not None)
        if local is not None:
            # Tables a delta-rs commit checkpointed before this job stopped: Spark's first
            # read would fail the stale checksum four times (groupwatch.delta.checksum).
            checksum.forget_stale(local)
        options = storage.delta_rs_options(config.storage, path)
        if _as_declared(storage.for_delta_rs(path), options, table, wanted):
            continue
        if DeltaTable.isDeltaTable(spark, path):
            _add_missing_columns(spark, path, table)
            # One DESCRIBE DETAIL per table at start (a Spark job each), read again only
            # after a rewrite.
            detail = _detail(spark, path)
            if _repartition(spark, path, table, detail):
                detail = _detail(spark, path)
            _set_properties(spark, path, wanted, detail)
            continue
        builder = DeltaTable.createIfNotExists(spark).location(path)
        for column in table.columns:
            builder = builder.addColumn(column.name, column.ddl, comment=column.doc)
        if table.partition_by:
            builder = builder.partitionedBy(*table.partition_by)
        for key, value in wanted.items():
            builder = builder.property(key, value)
        builder.comment(table.doc).execute()


def _as_declared(
    location: str | Path, options: Mapping[str, str], table: Table, wanted: Mapping[str, str]
) -> bool:
    """Whether the table at ``location`` (as delta-rs names it, with its ``storage_options``)
    exists with every declared column, its partitioning and the ``wanted`` properties, as
    delta-rs reads its log: then Spark need not load it.  A fresh JVM's Spark takes about a
    second a local table to answer that (a restart's fifteen tables, 16 s on two cores),
    delta-rs a few milliseconds.  Anything else, a table it cannot read among them, is left to
    Spark's path."""
    from deltalake import DeltaTable as RsTable

    try:
        target = RsTable(str(location), storage_options=dict(options) or None)
        metadata = target.metadata()
        names = {field.name for field in target.schema().fields}
    except Exception:  # noqa: BLE001 (missing, or beyond delta-rs: Spark decides)
        return False
    have = metadata.configuration
    return (
        all(column.name in names for column in table.columns)
        and tuple(metadata.partition_columns) == table.partition_by
        and all(have.get(key) == value for key, value in wanted.items())
    )


def _detail(spark: SparkSession, path: str) -> Any:
    """The table's ``DESCRIBE DETAIL`` row (None if it has none)."""
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, path).detail().first()


def _set_properties(spark: SparkSession, path: str, wanted: Mapping[str, str], detail: Any) -> None:
    """Set the table properties of ``wanted`` that an existing table lacks or sets otherwise
    (a table made before upkeep, or under other upkeep settings)."""
    have = dict(detail["properties"] or {}) if detail is not None else {}
    changed = {k: v for k, v in wanted.items() if have.get(k) != v}
    if changed:
        listed = ", ".join(f"'{k}' = '{v}'" for k, v in sorted(changed.items()))
        with commit_note(spark, upkeep.UPKEEP_NOTE):
            spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({listed})")


def _add_missing_columns(spark: SparkSession, path: str, table: Table) -> None:
    """A table made by an older groupwatch gets the columns added since (all nullable)."""
    have = {f.name for f in spark.read.format("delta").load(path).schema.fields}
    missing = [c for c in table.columns if c.name not in have]
    if missing:
        added = ", ".join(
            f"`{c.name}` {c.ddl} COMMENT '{c.doc.replace(chr(39), chr(92) + chr(39))}'"
            for c in missing
        )
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({added})")


def _repartition(spark: SparkSession, path: str, table: Table, detail: Any) -> bool:
    """A table made by an older groupwatch with other partition columns is rewritten once,
    partitioned as declared, its derived columns filled (``partition_ownership`` before it
    was partitioned by the day an interval closed).  One overwrite commit: a start killed
    during it finds the table as it was, and does it again.  The transaction ids of the job's
    writes are kept (they are table state, not rows).  Whether it rewrote the table."""
    from pyspark.sql import functions as F

    have = tuple(detail["partitionColumns"] or ()) if detail is not None else ()
    if have == table.partition_by:
        return False
    started = time.monotonic()
    data = spark.read.format("delta").load(path)
    for name, expression in table.derived:
        data = data.withColumn(name, F.coalesce(F.col(name), F.expr(expression)))
    rows = data.count()
    log.warning(
        "%s: rewriting %d row(s) partitioned by %s (was %s), once",
        table.name,
        rows,
        ", ".join(table.partition_by) or "nothing",
        ", ".join(have) or "nothing",
    )
    with commit_note(spark, upkeep.UPKEEP_NOTE):
        (
            conform(data, table)
            .write.format("delta")
            .mode("overwrite")
            .option("overwriteSchema", "true")
            .partitionBy(*table.partition_by)
            .save(path)
        )
    log.info("%s: rewritten in %.1f s", table.name, time.monotonic() - started)
    return True


def on_driver(config: Config, rows: int) -> bool:
    """Whether a write of ``rows`` rows goes through the driver (``groupwatch.delta.write``).

    Only tables on a file system the driver sees (delta-rs is given no object-store
    credentials), and only up to ``delta.driver_write_rows`` rows: the rows are collected to
    the driver, which a catch-up batch of millions must not be.
    """
    limit = config.delta.driver_write_rows
    return 0 < rows <= limit and locations.local_path(config.delta.root) is not None


@contextmanager
def placed(
    config: Config, df: DataFrame, bound: int | None = None, *, exact: bool = False
) -> Iterator[tuple[pa.Table | None, DataFrame]]:
    """Where ``df``'s rows are written: ``(rows as Arrow, df)`` if they go through the driver
    (:func:`on_driver`), ``(None, df persisted)`` if Spark writes them.

    ``bound``: an upper bound of ``df``'s rows, if known (a batch's offset commits bound any
    aggregate of them): within what the driver takes, the rows come there in one Spark job,
    with no count first, which for a live batch's few thousand rows costs a job of its own.
    Otherwise (or if none came) ``df`` is persisted and counted to decide. ``exact``:
    ``bound`` is ``df``'s count and ``df`` reads a persisted frame, so that reading it again
    is a scan: beyond what the driver takes, Spark writes ``df`` as it is, neither counted
    nor persisted again (a copy of a start-up's million rows, seconds)."""
    if bound is not None and on_driver(config, bound):
        data = driver_tally.arrow("writes", df.toArrow())
        if data.num_rows:
            yield data, df
            return
    if exact:
        yield None, df
        return
    df = df.persist()
    try:
        taken = on_driver(config, df.count())
        yield (driver_tally.arrow("writes", df.toArrow()) if taken else None), df
    finally:
        df.unpersist()


def local_table(config: Config, table: Table) -> Path:
    """The local folder of a table whose root is on this machine's file system."""
    path = locations.local_path(config.table_path(table.name))
    if path is None:
        raise ValueError(f"{table.name}: {config.table_path(table.name)} is not a local path")
    return path


def conform(df: DataFrame, table: Table) -> DataFrame:
    """Select the table's columns, in order, cast to their declared types."""
    from pyspark.sql import functions as F

    return df.select(*[F.col(f"`{c.name}`").cast(c.ddl).alias(c.name) for c in table.columns])


def append_once(df: DataFrame, table: Table, config: Config, app_id: str, batch_id: int) -> None:
    """Append ``df`` unless this (app, batch) was already appended to the table."""
    rows = conform(df, table)
    shape: dict[str, str] = {}
    if table.read_by:
        # Each file sorted by the column, in small row groups: a read by key opens few.  The
        # row group size is the Hadoop configuration's, which a write option does not reach
        # and the session's settings do (Spark copies them into each write's).
        rows = rows.sortWithinPartitions(table.read_by)
        shape["parquet.block.size"] = str(KEYED_ROW_GROUP_BYTES)
    with session_settings(df.sparkSession, shape):
        (
            rows.write.format("delta")
            .mode("append")
            .option("txnAppId", app_id)
            .option("txnVersion", batch_id)
            .save(config.table_path(table.name))
        )


def merge(
    spark: SparkSession, df: DataFrame, table: Table, config: Config, *, update: bool = True
) -> Callable[[], object]:
    """An upsert of ``df`` on the table's key (insert only, with ``update=False``), not yet run.

    Run it inside :func:`transaction` so that a replayed batch skips it.
    """
    from delta.tables import DeltaTable

    target = DeltaTable.forPath(spark, config.table_path(table.name))
    on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in table.key)
    # Not narrowed to the batch's buckets (``Table.merge_scope`` of no groups): Spark writes
    # the large batches, whose groups are in most of them.
    scope = table.merge_scope(())
    if scope:
        on += f" AND {scope}"
    builder = target.alias("t").merge(conform(df, table).alias("s"), on)
    kept = None
    if table.removed_when:
        # The first matching clause applies: a removal deletes, the others update.
        builder = builder.whenMatchedDelete(condition=table.removed_when)
        kept = f"NOT ({table.removed_when})"
    if update:
        builder = builder.whenMatchedUpdateAll(condition=kept)
    builder = builder.whenNotMatchedInsertAll(condition=kept)
    return builder.execute


@contextmanager
def transaction(spark: SparkSession, app_id: str, batch_id: int) -> Iterator[None]:
    """Every Delta MERGE/UPDATE/DELETE run inside carries (app, batch) and is skipped by Delta
    if that table already committed it.

    The settings are session-wide, so every write run inside must belong to this batch.
    """
    with session_settings(spark, {_TXN_APP: app_id, _TXN_VERSION: str(batch_id)}):
        yield


@contextmanager
def commit_note(spark: SparkSession, note: str) -> Iterator[None]:
    """Delta commits made inside carry ``note`` as their ``userMetadata`` in the history."""
    with session_settings(spark, {_USER_METADATA: note}):
        yield


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """The session's SQL settings changed for what runs inside, then put back as they were
    (a setting that was not set is unset again)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, was in before.items():
            if was is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, was)


#: Attempts of a write that lost a commit race (:func:`retried`).
CONFLICT_ATTEMPTS = 5


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Delta's "another commit won the race" (a concurrent OPTIMIZE removed
    files a MERGE read, ...): Delta Spark's ``DeltaConcurrentModificationException`` family,
    however Py4J or PySpark wrapped it."""
    seen: BaseException | None = exc
    while seen is not None:
        text = f"{type(seen).__name__}: {seen}"
        if "Concurrent" in type(seen).__name__ or "io.delta.exceptions.Concurrent" in text:
            return True
        seen = seen.__cause__
    return False


def retried(command: Callable[[], object], what: str) -> None:
    """Run a Delta write, again if it lost a commit race (up to ``CONFLICT_ATTEMPTS``).

    Safe to repeat: nothing of a losing commit is in the table, every job write carries its
    batch's transaction id, and a MERGE plans again on the table the winner left."""
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            command()
            return
        except Exception as exc:
            if attempt == CONFLICT_ATTEMPTS or not is_conflict(exc):
                raise
            log.warning("%s lost a commit race (attempt %d), trying again: %s", what, attempt, exc)


def run_once(
    spark: SparkSession, command: Callable[[], object], app_id: str, batch_id: int
) -> None:
    """Run one Delta MERGE/UPDATE/DELETE under a transaction id: skipped if already committed,
    run again if it lost a commit race."""
    with transaction(spark, app_id, batch_id):
        retried(command, f"batch {batch_id}'s write")


def run_in_order(writes: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Run a batch's writes one after the other; seconds per write, for the log.

    Not concurrently: on two cores, four writes of a 200,000-record batch took 19.7 s when run
    from four threads (each thread's Spark jobs and Delta commit contend for the same cores
    and the driver) against 6.4 s in turn; a one-record batch's writes are no faster either.
    """
    seconds = {}
    for name, write in writes.items():
        started = time.perf_counter()
        try:
            retried(write, name)
        except Exception as exc:
            raise RuntimeError(f"writing {name} failed: {exc}") from exc
        seconds[name] = time.perf_counter() - started
    return seconds
