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

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from groupwatch import committed_fold, locations, tables
from groupwatch.config import Config
from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import deltawrite, keys, sinks

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("groupwatch.job")

#: The app id of this table's writes (a transaction per batch, apart from ``group_offsets``').
APP_ID = f"{sinks.APP_ID}-committed"
#: The app id of a fold's MERGE (:class:`CommitFolder`), whose version is the newest batch
#: folded: a fold run again after a crash skips what is already in.
FOLD_APP_ID = f"{sinks.APP_ID}-committed-fold"


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


def _value_fields(value: Column) -> list[Column]:
    """Tombstone, committed offset, leader epoch and metadata size of commit values."""
    from pyspark.sql import functions as F

    version = F.conv(F.hex(value.substr(F.lit(1), F.lit(2))), 16, 10).cast("int")
    meta_pos = F.when(version >= 3, F.lit(15)).otherwise(F.lit(11))
    first = F.conv(F.hex(value.substr(meta_pos, F.lit(1))), 16, 10).cast("int")
    short = F.conv(F.hex(value.substr(meta_pos, F.lit(2))), 16, 10).cast("int")
    return [
        value.isNull().alias("tombstone"),
        _int(value, 3, 8).alias("committed_offset"),
        F.when(version >= 3, _int(value, 11, 4).cast("int")).alias("leader_epoch"),
        F.when(version >= 4, F.when(first < 128, first - 1))
        .otherwise(short)
        .cast("int")
        .alias("metadata_size"),
    ]


def _offset_bytes(value: Column) -> Column:
    """The committed offset's eight bytes (null where :func:`_int` gives null): equal bytes are
    equal offsets, so changes are found without reading the number."""
    from pyspark.sql import functions as F

    raw = value.substr(F.lit(3), F.lit(8))
    return F.when(F.octet_length(raw) == 8, raw)


#: Bytes of a commit value that hold every field :func:`_value_fields` reads: the version
#: (2), the offset (8), the leader epoch (4) and the metadata's length (at most 2).
_HEAD = 16

#: Bits of the key's hash that pick the window's partition: each holds the records of many
#: keys, few enough to sort and scan in memory.
_BUCKET_BITS = 12


def newest(df: DataFrame) -> DataFrame:
    """Each partition's newest commit (or tombstone) of the batch, and when its committed
    offset last changed within the batch (``changes`` = how many times it did).

    By record offset, a commit ``changed`` the offset when the commit before it has none (there
    is none, or it is a tombstone or too short to hold one) or both have one and they differ;
    ``changes`` counts them, leaving out the partition's first commit (and any commit after
    one with neither offset nor time). A partition's records have distinct record offsets:
    its commits all live in one partition of ``__consumer_offsets``.

    Records are keyed by their raw key bytes (the prefix naming the group and topic, and the
    partition's four bytes): the group and topic are read once per partition, after the
    aggregation, and the shuffle carries bytes rather than two strings; likewise only each
    partition's newest value is parsed. The commit before each record comes from a window
    over a hash bucket of many keys, ordered by the key's hash, the key, then the record
    offset: a window per key costs more per key than the sort, the comparison and the
    aggregation together (1.2 M partitions in a start-up's batch).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = F.col("key")
    rows = (
        df.where(F.col("rtype").isin(*OFFSET_COMMIT_TYPES))
        .select(
            keys.commit_prefix(key).alias("prefix"),
            keys.commit_partition_bytes(key).alias("pbytes"),
            # The fields read from the newest value all lie in its first _HEAD bytes: the
            # sort and the shuffle carry those, not commit timestamps and metadata strings.
            F.col("value").substr(F.lit(1), F.lit(_HEAD)).alias("value"),
            _offset_bytes(F.col("value")).alias("co"),
            F.col("ts"),
            F.col("offset"),
        )
        .where(F.col("prefix").isNotNull() & F.col("pbytes").isNotNull())
        .withColumn("h", F.xxhash64("prefix", "pbytes"))
        .withColumn("b", F.shiftright("h", 64 - _BUCKET_BITS))
    )
    # Sorted by the hash first: Spark sorts a window's input by its partition column first
    # and compares rows by a long prefix of their first sort column, which the bucket shares
    # with all its rows, so that every comparison went to the whole rows. Sorted by the hash,
    # the prefix decides nearly every comparison, and the window's own sort then finds its
    # input in order (a merge sort of runs already sorted: about one comparison a row).
    rows = rows.repartition("b").sortWithinPartitions("h", "prefix", "pbytes", "offset")
    w = Window.partitionBy("b").orderBy("h", "prefix", "pbytes", "offset")
    prev = F.lag(F.struct("prefix", "pbytes", "co", "ts")).over(w)
    rows = rows.withColumn("prev", prev)
    same = F.coalesce(
        (F.col("prev.prefix") == F.col("prefix")) & (F.col("prev.pbytes") == F.col("pbytes")),
        F.lit(False),
    )
    before = F.when(same, F.col("prev.co"))
    before_ts = F.when(same, F.col("prev.ts"))
    changed = before.isNull() | (F.col("co") != before)
    first = before.isNull() & before_ts.isNull()
    last = F.max_by(F.struct("value", "ts"), F.col("offset"))
    value = F.col("last.value")
    prefix = F.col("prefix")
    return (
        # Grouped by the window's bucket too, so the rows stay where the window put them.
        rows.groupBy("b", "h", "prefix", "pbytes")
        .agg(
            last.alias("last"),
            F.max(F.when(changed, F.col("ts"))).alias("moved_ms"),
            F.sum(F.when(changed & ~first, 1).otherwise(0)).alias("changes"),
            F.count(F.lit(1)).alias("commits"),
        )
        .select(
            keys.prefix_group(prefix).alias("group"),
            keys.prefix_topic(prefix).alias("topic"),
            keys.partition_of(F.col("pbytes")).alias("partition"),
            # No newest row at all when every record offset is null (max_by skips those).
            F.when(F.col("last").isNotNull(), value.isNull()).alias("tombstone"),
            *_value_fields(value)[1:],
            F.timestamp_millis("last.ts").alias("commit_time"),
            F.timestamp_millis("moved_ms").alias("moved_time"),
            "changes",
            "commits",
        )
        .where(
            F.col("group").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
        )
    )


#: How a partition's row takes the batch's newest commit (SQL over t and s, both writers).
_UPDATE = {
    **{name: f"s.{name}" for name in committed_fold.VALUES[:4]},
    # Unchanged through the batch and equal to the table's: it has not moved since then.
    "moved_time": "CASE WHEN s.changes = 0 AND s.committed_offset = t.committed_offset "
    "THEN t.moved_time ELSE s.moved_time END",
    "commits": "t.commits + s.commits",
}
_INSERT = {c.name: f"s.{c.name}" for c in tables.COMMITTED_OFFSETS.columns}
_ON = "t.group = s.group AND t.topic = s.topic AND t.partition = s.partition"


def merge(
    spark: SparkSession, config: Config, df: DataFrame, batch_id: int, commits: int | None = None
) -> None:
    """MERGE the batch's newest commits into ``committed_offsets`` (once per batch).

    ``commits``: the batch's offset-commit records, if known: at most one row per commit
    comes out (:func:`groupwatch.spark.sinks.placed`)."""
    with sinks.placed(config, newest(df), commits) as (data, rows):
        if data is not None:
            _merge_on_driver(config, data, batch_id)
        else:
            _merge_by_spark(spark, config, rows, batch_id)


def merge_newest(config: Config, rows: pa.Table, batch_id: int) -> None:
    """:func:`merge` of the newest commits found on the driver
    (:func:`groupwatch.spark.commits_arrow.newest`), MERGEd from there (none: nothing to do)."""
    if rows.num_rows:
        _merge_on_driver(config, rows, batch_id)


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


def _merge_on_driver(config: Config, rows: pa.Table, batch_id: int) -> None:
    deltawrite.merge_rows_once(
        sinks.local_table(config, tables.COMMITTED_OFFSETS),
        rows,
        APP_ID,
        batch_id,
        on=_ON,
        delete_when="s.tombstone",
        update=_UPDATE,
        insert=_INSERT,
        insert_when="NOT s.tombstone",
    )


class CommitFolder:
    """Where a batch's newest commits go: MERGEd into ``committed_offsets`` at once (a job
    without a lag poll beside its batches, a large batch), or appended to
    ``committed_changes`` and folded into ``committed_offsets`` by one MERGE before the next
    lag poll (:meth:`fold`), which is the table's only reader in the job.

    A live batch's MERGE rewrote the whole table for a few thousand commits (1.2 M committed
    partitions: about 1 s of a 4 s batch); a poll every ``lag.poll_seconds`` folds the batches
    between polls in one MERGE of the same cost, and the batches only append.  The fold is
    :func:`groupwatch.committed_fold.fold`, so the table is what the batches' MERGEs would
    have made, exactly once: the fold's commit carries :data:`FOLD_APP_ID` with the newest
    batch folded, the batches' appends their own id, and a batch MERGEd at once first folds
    what is pending (and is skipped if a run before appended it).  ``lock`` keeps the batch
    thread's and the poll's folds apart.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        #: delta-rs reaches the tables (else every batch is MERGEd at once, by Spark).
        self.local = locations.local_path(config.delta.root) is not None
        self.lock = threading.Lock()
        #: Whether this process read ``committed_changes`` yet (a run before may have left
        #: batches there unfolded).
        self._checked = False
        #: Rows appended since the last fold.
        self._staged = 0
        #: The newest batch folded, and the newest whose rows were deleted from the changes.
        self._folded: int | None = None
        self._trimmed = -1
        #: Batches this process handled (only the first of a run can be a replay).
        self._batches = 0

    @property
    def _target(self) -> Path:
        return sinks.local_table(self.config, tables.COMMITTED_OFFSETS)

    @property
    def _changes(self) -> Path:
        return sinks.local_table(self.config, tables.COMMITTED_CHANGES)

    @property
    def pending(self) -> bool:
        """Whether a fold may have something to do."""
        return not self._checked or self._staged > 0

    # -- the batches ----------------------------------------------------------------------
    def stage(self, rows: pa.Table, batch_id: int) -> None:
        """The batch's newest commits (:func:`groupwatch.spark.commits_arrow.newest`) appended
        to ``committed_changes``, for the next fold."""
        import pyarrow as pa
        from deltalake import DeltaTable

        first = self._batches == 0
        self._batches += 1
        if not rows.num_rows:
            return
        if first:
            # A replay of a batch a run before MERGEd at once is in the table already.
            version = DeltaTable(str(self._target)).transaction_version(APP_ID)
            if version is not None and version >= batch_id:
                return
        self._trim()
        batch = pa.array([batch_id] * rows.num_rows, pa.int64())
        deltawrite.append_once(
            self._changes, tables.COMMITTED_CHANGES, rows.append_column("batch_id", batch),
            APP_ID, batch_id,
        )  # fmt: skip
        self._staged += rows.num_rows
        if self._staged > max(1, self.config.delta.driver_write_rows):
            # No poll folded for long (its fold failing, or polls stretched): the batch does,
            # so that the changes stay a batch's size for the driver.
            self.fold()

    def merge_newest(self, rows: pa.Table, batch_id: int) -> None:
        """:func:`merge_newest` at once, after what is pending."""
        self._at_once(batch_id, lambda: merge_newest(self.config, rows, batch_id))

    def merge(
        self,
        spark: SparkSession,
        config: Config,
        df: DataFrame,
        batch_id: int,
        commits: int | None = None,
    ) -> None:
        """:func:`merge` at once (Spark's or the driver's), after what is pending."""
        self._at_once(batch_id, lambda: merge(spark, config, df, batch_id, commits))

    def _at_once(self, batch_id: int, write: Callable[[], None]) -> None:
        """``write`` the batch's MERGE after folding what is pending, unless the batch is a
        replay whose rows a run before appended (folded now)."""
        first = self._batches == 0
        self._batches += 1
        with self.lock:
            self._fold_locked()
            if not (first and self._appended(batch_id)):
                write()

    def _appended(self, batch_id: int) -> bool:
        """Whether this batch's rows went to ``committed_changes`` in a run before (a replay,
        which only the first batch of a run can be): folded now, not to be MERGEd again."""
        if not self.local:
            return False
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            version = DeltaTable(str(self._changes)).transaction_version(APP_ID)
        except (TableNotFoundError, FileNotFoundError):
            return False
        return version is not None and version >= batch_id

    def _trim(self) -> None:
        """The folded batches' rows deleted from ``committed_changes`` (by the batch thread,
        its only writer besides upkeep)."""
        from deltalake import DeltaTable

        folded = self._folded
        if folded is None or folded <= self._trimmed:
            return
        DeltaTable(str(self._changes)).delete(f"batch_id <= {folded}")
        self._trimmed = folded

    # -- the polls ------------------------------------------------------------------------
    def fold(self) -> int:
        """The batches in ``committed_changes`` not yet folded MERGEd into
        ``committed_offsets`` as one; rows read (0: none pending)."""
        with self.lock:
            return self._fold_locked()

    def _fold_locked(self) -> int:
        if not self.pending:
            return 0
        if not self.local:
            # No delta-rs there: batches are MERGEd at once, nothing is ever appended.
            self._checked = True
            return 0
        import pyarrow.compute as pc  # type: ignore[import-untyped]
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        started = time.monotonic()
        # Counted before the reading: rows appended after it stay counted for the next fold.
        staged = self._staged
        try:
            changes = DeltaTable(str(self._changes))
            target = DeltaTable(str(self._target))
        except (TableNotFoundError, FileNotFoundError):
            self._checked = True
            return 0
        version = target.transaction_version(FOLD_APP_ID)
        folded = -1 if version is None else version
        rows = changes.to_pyarrow_table(filters=pc.field("batch_id") > folded)
        if rows.num_rows:
            newest = int(pc.max(rows.column("batch_id")).as_py())
            data = committed_fold.fold(rows)
            deltawrite.merge_rows_once(
                self._target,
                data,
                FOLD_APP_ID,
                newest,
                on=_ON,
                delete_when="s.tombstone",
                update=committed_fold.FOLD_UPDATE,
                insert=_INSERT,
                insert_when="NOT s.tombstone",
            )
            folded = newest
            log.debug(
                "committed offsets: %d row(s) of the batches up to %d folded in %.2f s",
                rows.num_rows,
                newest,
                time.monotonic() - started,
            )
        self._folded = folded
        self._checked = True
        self._staged = max(0, self._staged - staged)
        return int(rows.num_rows)
