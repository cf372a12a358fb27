"""Delta sinks: tables created from ``groupwatch.tables``, written exactly once per micro-batch.

Exactly once across a crash: Spark replays the last unfinished micro-batch with the same id and
the same input.  Appends carry Delta's ``txnAppId``/``txnVersion`` (the batch id), so a replayed
append that already committed is skipped by Delta itself; MERGEs match on the table's key and
carry the same transaction id through the session confs, so they are skipped too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

from groupwatch.config import Config
from groupwatch.tables import TABLES, Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"


def ensure_tables(spark: SparkSession, config: Config) -> None:
    """Create every missing table, empty, with its declared schema and partitioning."""
    from delta.tables import DeltaTable

    for table in TABLES.values():
        path = config.table_path(table.name)
        if DeltaTable.isDeltaTable(spark, path):
            continue
        builder = DeltaTable.createIfNotExists(spark).location(path)
        for column in table.columns:
            builder = builder.addColumn(column.name, column.ddl, comment=column.doc)
        if table.partition_by:
            builder = builder.partitionedBy(*table.partition_by)
        builder.comment(table.doc).execute()


def conform(df: DataFrame, table: Table) -> DataFrame:
    """Select the table's columns, in order, cast to their declared types."""
    from pyspark.sql import functions as F

    return df.select(*[F.col(f"`{c.name}`").cast(c.ddl).alias(c.name) for c in table.columns])


def append_once(df: DataFrame, table: Table, config: Config, app_id: str, batch_id: int) -> None:
    """Append ``df`` unless this (app, batch) was already appended to the table."""
    (
        conform(df, table)
        .write.format("delta")
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
    builder = target.alias("t").merge(conform(df, table).alias("s"), on)
    if update:
        builder = builder.whenMatchedUpdateAll()
    builder = builder.whenNotMatchedInsertAll()
    return builder.execute


@contextmanager
def transaction(spark: SparkSession, app_id: str, batch_id: int) -> Iterator[None]:
    """Every Delta MERGE/UPDATE/DELETE run inside carries (app, batch) and is skipped by Delta
    if that table already committed it.

    The settings are session-wide, so concurrent writes inside must all belong to this batch.
    """
    spark.conf.set(_TXN_APP, app_id)
    spark.conf.set(_TXN_VERSION, str(batch_id))
    try:
        yield
    finally:
        spark.conf.unset(_TXN_APP)
        spark.conf.unset(_TXN_VERSION)


def run_once(
    spark: SparkSession, command: Callable[[], object], app_id: str, batch_id: int
) -> None:
    """Run one Delta MERGE/UPDATE/DELETE under a transaction id: skipped if already committed."""
    with transaction(spark, app_id, batch_id):
        command()


def run_concurrently(writes: dict[str, Callable[[], object]]) -> None:
    """Run independent writes (to different tables) at the same time.

    Each Delta commit on a small batch is mostly driver-side waiting (log listing, snapshot
    rebuild, task scheduling), so a batch's five or six writes overlap well even on two cores.
    The first failure is raised after every write has finished.
    """
    if len(writes) <= 1:
        for write in writes.values():
            write()
        return
    with ThreadPoolExecutor(max_workers=len(writes), thread_name_prefix="groupwatch-write") as pool:
        futures = {name: pool.submit(write) for name, write in writes.items()}
    for name, future in futures.items():
        exc = future.exception()
        if exc is not None:
            raise RuntimeError(f"writing {name} failed: {exc}") from exc
