"""The job's table upkeep (``docs/job.md``, "Table upkeep").

Every ``upkeep.every_n_batches`` batches each table has its turn, the turns spread over those
batches so that one batch pays for one table's upkeep, not all of them.  A table on the
driver's file system is tidied with delta-rs (:mod:`groupwatch.upkeep`: no Spark job,
milliseconds for a table of small files) at the end of the batch whose turn it is, inside
``foreachBatch``: the stream never stops, and the job's own writes never race it.

A table on an object store is tidied with Spark's own OPTIMIZE, DELETE and VACUUM (Spark
removes expired log entries itself after each checkpoint), and a turn there costs seconds to
tens of seconds of Spark jobs whatever the table's size (``docs/performance.md``, "Tables on
S3").  Taken inside the batch, it held the stream up that long; so there the batch hands its
turn to :class:`UpkeepThread`, which tidies on a thread of the driver beside the batches,
through a session of its own (its SQL settings apart from the batches' transaction ids and
commit notes).  Its commits race the batches' like any other writer's: Delta's conflict
detection decides, a batch's write that loses is run again (``sinks.retried``), a turn's step
that loses is left for the table's next turn, and on S3 Delta's log store lets one commit of a
version through per driver.

Upkeep changes no row a batch reads back (the state versions, the offsets table's previous
version) and no transaction id, so a batch replayed after a crash in the middle of its upkeep
skips its writes as before and the turn, taken again, finds what the first attempt did already
done.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from groupwatch import locations
from groupwatch import upkeep as tidying
from groupwatch.config import Config
from groupwatch.spark import sinks
from groupwatch.tables import KEYED_ROW_GROUP_BYTES, TABLES, Table

if TYPE_CHECKING:
    from delta.tables import DeltaTable
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")

_MAX_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"


def due(config: Config, batch_id: int) -> tuple[Table, ...]:
    """The tables whose turn this batch is: each once per ``every_n_batches`` batches, the
    turns spread evenly (all at once only if ``every_n_batches`` is below the table count)."""
    every = config.upkeep.every_n_batches
    if every <= 0:
        return ()
    ordered = tuple(TABLES.values())
    return tuple(
        table
        for k, table in enumerate(ordered)
        if batch_id % every == (k * every // len(ordered)) % every
    )


def run(
    spark: SparkSession, config: Config, batch_id: int, clock_ms: int | None
) -> list[tidying.Tidied]:
    """This batch's upkeep: the tables whose turn it is, tidied; what was done to each."""
    return tidy(spark, config, due(config, batch_id), batch_id, clock_ms)


def tidy(
    spark: SparkSession,
    config: Config,
    turns: Iterable[Table],
    batch_id: int,
    clock_ms: int | None,
) -> list[tidying.Tidied]:
    """The tables of ``turns`` tidied as of the stream's clock ``clock_ms`` (``batch_id``: the
    batch whose turns they are, for the log); what was done to each."""
    cutoff = tidying.history_cutoff(config.upkeep, clock_ms)
    history_floor = tidying.written_before(config.upkeep.history_retention_days)
    observed = tidying.observed_cutoff(config.lag.history_hours)
    closed = tidying.closed_cutoff(config.upkeep, clock_ms)
    closed_floor = tidying.written_before(config.upkeep.ownership_retention_days)
    detected = tidying.findings_cutoff(config.upkeep, clock_ms)
    today = tidying.clock_day(clock_ms)
    done = []
    for table in turns:
        local = locations.local_path(config.table_path(table.name))
        history_expired = 0
        if table.name == "group_snapshots":
            # The history's turn is the snapshots' and covers every table at once.
            history_expired = _expire_history(spark, config, cutoff, history_floor)
        if local is not None:
            result = tidying.tidy(
                local, table, config.upkeep, None, observed, closed, detected, today, closed_floor
            )
        else:
            result = _tidy_by_spark(spark, config, table, observed, closed, closed_floor, detected)
        if history_expired:
            result = dataclasses.replace(result, expired_rows=result.expired_rows + history_expired)
        done.append(result)
        log.info(
            "batch %d: upkeep of %s: %d past day(s) clustered, %d file(s) compacted into %d, "
            "%d vacuumed, %d expired row(s), %d log entr(ies) removed%s in %.2f s",
            batch_id,
            result.table,
            result.clustered,
            result.compacted,
            result.written,
            result.vacuumed,
            result.expired_rows,
            result.log_removed,
            " (a step lost a commit race)" if result.conflict else "",
            result.seconds,
        )
    return done


def on_object_store(config: Config) -> bool:
    """Whether the job's tables are on an object store (upkeep's turns then run beside the
    batches, :class:`UpkeepThread`), not on the driver's file system."""
    return locations.local_path(config.delta.root) is None


class UpkeepThread:
    """Upkeep's turns on a daemon thread of the driver, beside the batches: ``offer`` hands it
    a batch's turns and returns at once; the thread tidies them one table at a time.

    Turns offered while it works wait, each table once (a table offered again is not tidied
    twice), with the newest stream clock: a thread slower than the batches falls behind by
    tables, not by a queue that grows with uptime.  ``stop`` lets the table under way finish
    (each step of it is one commit, so even a kill leaves consistent tables) and drops the rest:
    the next run's batches offer them again.
    """

    def __init__(self, spark: SparkSession, config: Config) -> None:
        # A session of its own: the batches set their transaction id and commit note as
        # session-wide SQL settings (``sinks.transaction``), which a commit of upkeep's made in
        # the same session while a batch writes would carry, and the reverse.
        self._spark = spark.newSession()
        self._config = config
        self._waiting: dict[str, Table] = {}
        self._batch_id = 0
        self._clock_ms: int | None = None
        self._changed = threading.Condition()
        self._stopping = False
        self._busy = False
        #: Tables tidied by this thread (the tests and the log read it).
        self.tidied: list[tidying.Tidied] = []
        self._thread = threading.Thread(target=self._run, name="groupwatch-upkeep", daemon=True)
        self._thread.start()

    def offer(self, turns: Iterable[Table], batch_id: int, clock_ms: int | None) -> None:
        """Batch ``batch_id``'s turns (``due``) handed over, with the stream's clock then."""
        with self._changed:
            for table in turns:
                self._waiting.setdefault(table.name, table)
            self._batch_id = batch_id
            if clock_ms is not None:
                self._clock_ms = clock_ms
            self._changed.notify()

    def idle(self, timeout: float) -> bool:
        """Waits until no turn waits or runs (at most ``timeout`` s); whether it is so."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._waiting or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def stop(self, timeout: float = 600.0) -> None:
        """Ends the thread: the table under way is finished (up to ``timeout`` s), the
        waiting ones are dropped."""
        with self._changed:
            self._stopping = True
            self._waiting.clear()
            self._changed.notify_all()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._stopping:
                    self._changed.wait()
                if self._stopping:
                    return
                name = next(iter(self._waiting))
                table = self._waiting.pop(name)
                batch_id, clock_ms = self._batch_id, self._clock_ms
                self._busy = True
            try:
                self.tidied.extend(tidy(self._spark, self._config, (table,), batch_id, clock_ms))
            except Exception:
                # Never the end of the job: the table's next turn tries again.
                log.exception("upkeep of %s failed; its next turn tries again", table.name)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()


#: The tables the history rule cuts (:func:`groupwatch.upkeep.expire_history`).
_HISTORY_CUT = (*tidying.HISTORY_TABLES, tidying.FINDINGS_TABLE, *tidying.CLOSED_TABLES)


def _expire_history(
    spark: SparkSession, config: Config, cutoff: dt.date | None, floor_ms: int | None
) -> int:
    """The history rule over every table (rows expired in all): delta-rs for the tables on the
    driver's file system, Spark for those on an object store."""
    if cutoff is None or floor_ms is None:
        return 0
    local: dict[str, Path] = {}
    remote: list[str] = []
    for name in _HISTORY_CUT:
        path = locations.local_path(config.table_path(name))
        if path is not None:
            local[name] = path
        else:
            remote.append(name)
    if not remote:
        return sum(tidying.expire_history(local, cutoff, floor_ms).values())
    return _expire_history_by_spark(spark, config, cutoff, floor_ms)


def _expire_history_by_spark(
    spark: SparkSession, config: Config, cutoff: dt.date, floor_ms: int
) -> int:
    """:func:`groupwatch.upkeep.expire_history` with Spark: the days' newest writes from the
    data files' modification times (``_metadata``), the same deletes."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    newest: list[dict[dt.date, int]] = []
    for name in tidying.HISTORY_TABLES:
        frame = spark.read.format("delta").load(config.table_path(name))
        rows = (
            frame.groupBy(tidying.HISTORY_COLUMN)
            .agg(F.max(F.col("_metadata.file_modification_time")).alias("written"))
            .collect()
        )
        newest.append(
            {
                r[tidying.HISTORY_COLUMN]: int(r["written"].timestamp() * 1000)
                for r in rows
                if r[tidying.HISTORY_COLUMN] is not None
            }
        )
    days = tidying.old_days(tidying.merge_writes(*newest), cutoff, floor_ms)
    if not days:
        return 0
    with sinks.commit_note(spark, tidying.UPKEEP_NOTE):
        for name in tidying.HISTORY_TABLES:
            DeltaTable.forPath(spark, config.table_path(name)).delete(
                F.col(tidying.HISTORY_COLUMN).isin(days)
            )
        DeltaTable.forPath(spark, config.table_path(tidying.FINDINGS_TABLE)).delete(
            tidying.day_ranges_ms(days).replace("source['timestamp']", "source.timestamp")
        )
        for name in tidying.CLOSED_TABLES:
            DeltaTable.forPath(spark, config.table_path(name)).delete(
                F.col(tidying.CLOSED_COLUMN).isin(days)
            )
    # Spark's DELETE does not return its count through this API; the log line says 0.
    return 0


def _tidy_by_spark(
    spark: SparkSession,
    config: Config,
    table: Table,
    observed: dt.datetime | None = None,
    closed: dt.date | None = None,
    closed_floor: int | None = None,
    detected: dt.datetime | None = None,
) -> tidying.Tidied:
    """The same steps with Spark, for a table on an object store."""
    import time

    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    started = time.monotonic()
    target = DeltaTable.forPath(spark, config.table_path(table.name))
    settings = {_MAX_FILE_SIZE: str(config.upkeep.target_file_mb * 1_000_000)}
    conflict = False
    compacted = written = 0
    try:
        with sinks.session_settings(spark, settings), sinks.commit_note(spark, tidying.UPKEEP_NOTE):
            if observed is not None and table.name in tidying.OBSERVED_TABLES:
                target.delete(F.col(tidying.OBSERVED_COLUMN) < F.lit(observed))
            if (
                closed is not None
                and closed_floor is not None
                and table.name in tidying.CLOSED_TABLES
            ):
                # Closed before the cutoff and written before the floor (the data files'
                # modification time): a replayed interval stays for the retention after its read.
                modified = F.col("_metadata.file_modification_time")
                days = [
                    r[0]
                    for r in spark.read.format("delta")
                    .load(config.table_path(table.name))
                    .where(F.col(tidying.CLOSED_COLUMN) < F.lit(closed))
                    .groupBy(tidying.CLOSED_COLUMN)
                    .agg(F.max(modified).alias("written"))
                    .where(
                        F.col("written")
                        < F.lit(dt.datetime.fromtimestamp(closed_floor / 1000, dt.UTC))
                    )
                    .collect()
                ]
                if days:
                    target.delete(F.col(tidying.CLOSED_COLUMN).isin(days))
            if detected is not None and table.name == tidying.FINDINGS_TABLE:
                target.delete(F.col(tidying.FINDINGS_COLUMN) < F.lit(detected))
            # A table read by key keeps small row groups (Spark's writes of it have them).
            shape = {"parquet.block.size": str(KEYED_ROW_GROUP_BYTES)} if table.read_by else {}
            with sinks.session_settings(spark, shape):
                metrics = target.optimize().executeCompaction().first()
            if metrics is not None:
                compacted = int(metrics["metrics"]["numFilesRemoved"])
                written = int(metrics["metrics"]["numFilesAdded"])
            _vacuum(spark, config.table_path(table.name), target)
    except Exception as exc:
        if not sinks.is_conflict(exc):
            raise
        log.warning("upkeep of %s lost a commit race, left for its next turn: %s", table.name, exc)
        conflict = True
    return tidying.Tidied(
        table=table.name,
        compacted=compacted,
        written=written,
        conflict=conflict,
        seconds=time.monotonic() - started,
    )


#: Delta's refusal of a VACUUM LITE whose log no longer reaches back far enough.
_LITE_REFUSED = "DELTA_CANNOT_VACUUM_LITE"


def _vacuum(spark: SparkSession, path: str, target: DeltaTable) -> None:
    """VACUUM with the table's own ``deletedFileRetentionDuration``: LITE, the files to delete
    taken from the log's remove actions, without listing the table's folder; FULL where Delta
    refuses LITE (the log, cut back, no longer reaches the last VACUUM).

    On S3 a FULL VACUUM took 30-42 s a table whatever its size, empty tables too, most of it
    listing the folder through S3A; LITE 7 s (``docs/performance.md``, "Tables on S3").
    LITE does not see files no commit ever referenced (those of a write killed before its
    commit): they stay until a refusal brings a FULL one, or an operator's ``VACUUM``."""
    try:
        spark.sql(f"VACUUM delta.`{path}` LITE").collect()
    except Exception as exc:
        if _LITE_REFUSED not in str(exc):
            raise
        log.info("upkeep: VACUUM LITE refused for %s, a full one instead", path)
        target.vacuum()
