"""The latest committed offset per (group, topic, partition): each task of a batch takes the
offset, leader epoch and metadata size out of its commit values as columns and keeps each
partition's newest commit of the batch (:mod:`groupwatch.spark.commit_aggregates`), and the
batch MERGEs those into ``committed_offsets``; a batch whose newest record for a
partition is a tombstone (the offset was deleted or expired, the group deleted) removes the
row.

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
from groupwatch.delta import checksum
from groupwatch.delta import write as deltawrite
from groupwatch.spark import sinks

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("groupwatch.job")

#: The app id of this table's writes (a transaction per batch, apart from ``group_offsets``').
APP_ID = f"{sinks.APP_ID}-committed"
#: The app id of a fold's MERGE (:class:`CommitFolder`), whose version is the newest batch
#: folded: a fold run again after a crash skips what is already in.
FOLD_APP_ID = f"{sinks.APP_ID}-committed-fold"


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
    spark: SparkSession,
    config: Config,
    newest: DataFrame,
    batch_id: int,
    rows: int | None = None,
) -> None:
    """MERGE the batch's newest commit per partition (``newest``:
    :func:`groupwatch.spark.commit_aggregates.per_partition`, read from a persisted frame) into
    ``committed_offsets`` (once per batch). ``rows``: ``newest``'s rows, if known
    (:func:`groupwatch.spark.sinks.placed`)."""
    with sinks.placed(config, newest, rows, exact=rows is not None) as (data, newest):
        if data is not None:
            _merge_on_driver(config, data, batch_id)
        elif rows != 0:
            _merge_by_spark(spark, config, newest, batch_id)


def merge_newest(config: Config, rows: pa.Table, batch_id: int) -> None:
    """:func:`merge` of the newest commits found on the driver
    (:func:`groupwatch.spark.commits_columns.newest`), MERGEd from there (none: nothing to do)."""
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
        """The batch's newest commits (:func:`groupwatch.spark.commits_columns.newest`) appended
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
        newest: DataFrame,
        batch_id: int,
        rows: int | None = None,
    ) -> None:
        """:func:`merge` at once (Spark's or the driver's), after what is pending."""
        self._at_once(batch_id, lambda: merge(spark, config, newest, batch_id, rows))

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
        checksum.forget_stale(self._changes)
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
