"""Where a lag poll reads and writes its tables, wherever ``delta.root`` is.

A poll reads ``committed_offsets``, the owners and the end-offset history with delta-rs, on a
file system or an object store alike (reads commit nothing).  Its commits follow the rule of
the job's other tables (docs/deploy.md, "Tables on S3": one library per table on object
storage): on this machine's file system delta-rs writes them from the driver, in milliseconds;
on an object store they go through Spark, the library every other commit to the job's tables
there goes through (the batches write ``findings`` too), so no two libraries ever race for a
version of a table on a store without an atomic rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from groupwatch import locations, storage
from groupwatch.config import Config
from groupwatch.delta import checksum
from groupwatch.delta import write as deltawrite
from groupwatch.spark import sinks
from groupwatch.tables import Table

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from deltalake import DeltaTable
    from pyspark.sql import DataFrame, SparkSession


def is_local(config: Config) -> bool:
    """Whether the tables are on a file system the driver sees (delta-rs commits there)."""
    return locations.local_path(config.delta.root) is not None


def open_table(config: Config, table: Table) -> DeltaTable:
    """The table for delta-rs to read: its local folder, or its object-store location with the
    storage options ``[storage]`` gives (the AWS chain's credentials are delta-rs's own)."""
    from deltalake import DeltaTable

    location = config.table_path(table.name)
    local = locations.local_path(location)
    if local is not None:
        return DeltaTable(str(local))
    return DeltaTable(
        storage.for_delta_rs(location),
        storage_options=storage.delta_rs_options(config.storage, location),
    )


def read_columns(
    config: Config, table: Table, columns: list[str], where: Any = None
) -> pa.Table | None:
    """The table's ``columns`` (rows matching ``where``, an Arrow filter), None while the table
    does not exist yet (a first poll before the batches made it)."""
    from deltalake.exceptions import TableNotFoundError

    try:
        return open_table(config, table).to_pyarrow_table(columns=columns, filters=where)
    except (TableNotFoundError, FileNotFoundError):
        return None


# A poll belongs to no micro-batch: it is made on the brokers' clock, beside the batches (a
# driver thread, ``lag_thread``), or at the end of one in a run that stops when caught up.  Its
# writes carry no transaction id, because nothing replays a poll: a batch Spark runs again
# after a failure polls afresh, at a later time, so its history rows are new rows, and the
# findings are inserted only where their id is absent: a finding's id is a hash of what it
# names and when its state began (``_since`` in detect/lag/judge.py), so the same finding
# raised again by a later poll, after a restart or not, matches the row already there.
class PollWrites(Protocol):
    """A poll's three kinds of commit (no batch transaction: a poll belongs to no batch)."""

    def append(self, table: Table, data: pa.Table) -> None: ...

    def overwrite(self, table: Table, data: pa.Table) -> None: ...

    def insert_new(self, table: Table, data: pa.Table) -> None:
        """The rows whose key the table does not hold yet."""


class SparkWrites:
    """A poll's commits through Spark, for tables on an object store.  Called with the
    batches' lock held (``GroupwatchQuery._write_lag``), so no batch's session-wide
    transaction settings are in force meanwhile."""

    def __init__(self, spark: SparkSession, config: Config) -> None:
        self.spark = spark
        self.config = config

    def _frame(self, table: Table, data: pa.Table) -> DataFrame:
        return sinks.conform(self.spark.createDataFrame(data), table)

    def append(self, table: Table, data: pa.Table) -> None:
        # The table's partitioning is its own (``ensure_tables`` made it): an append keeps it.
        self._frame(table, data).write.format("delta").mode("append").save(
            self.config.table_path(table.name)
        )

    def overwrite(self, table: Table, data: pa.Table) -> None:
        self._frame(table, data).write.format("delta").mode("overwrite").save(
            self.config.table_path(table.name)
        )

    def insert_new(self, table: Table, data: pa.Table) -> None:
        sinks.merge(self.spark, self._frame(table, data), table, self.config, update=False)()


class DeltaRsWrites:
    """A poll's commits with delta-rs, for tables on this machine's file system."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def append(self, table: Table, data: pa.Table) -> None:
        path = sinks.local_table(self.config, table)
        _append(path, table, data)
        checksum.forget_stale(path)

    def overwrite(self, table: Table, data: pa.Table) -> None:
        from deltalake import write_deltalake

        path = sinks.local_table(self.config, table)
        write_deltalake(str(path), data, mode="overwrite")
        checksum.forget_stale(path)

    def insert_new(self, table: Table, data: pa.Table) -> None:
        path = sinks.local_table(self.config, table)
        _insert_new(path, table, data)
        checksum.forget_stale(path)


def _append(path: Path, table: Table, data: pa.Table) -> None:
    from deltalake import write_deltalake

    write_deltalake(
        str(path),
        deltawrite.conform(data, table),
        mode="append",
        partition_by=list(table.partition_by) or None,
    )


def _insert_new(path: Path, table: Table, data: pa.Table) -> None:
    """Findings whose id the table does not hold yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import CommitFailedError

    for attempt in range(1, deltawrite.CONFLICT_ATTEMPTS + 1):
        try:
            DeltaTable(str(path)).merge(
                deltawrite.conform(data, table),
                " AND ".join(f"t.`{k}` = s.`{k}`" for k in table.key),
                source_alias="s",
                target_alias="t",
            ).when_not_matched_insert_all().execute()
            return
        except CommitFailedError:
            # An analyst's OPTIMIZE may win the race; the merge runs again on what it left.
            if attempt == deltawrite.CONFLICT_ATTEMPTS:
                raise
