"""Upkeep of one Delta table on the local file system, from the driver with delta-rs.

A long-running job adds a commit to a table's log and (for appends) a small data file to its
current partition every batch, and every MERGE leaves the files it rewrote on disk.  Left
alone, a table's current snapshot, its log listing and its folder grow with uptime, and so do
the time of each commit (delta-rs and Spark read the log from the newest checkpoint and list
``_delta_log``) and of every query.  :func:`tidy` brings one table back to a size set by the
configuration, not by uptime:

1. history retention, one rule for a group's history (:func:`expire_history`): a day of
   snapshots (a ``snapshot_date`` partition) expires when it is more than
   ``upkeep.history_retention_days`` before the stream's clock *and* its rows were written more
   than that long ago (the newest data file of the day, by the wall clock), and it expires from
   every table at once: its ``group_snapshots`` and ``member_assignments`` rows, the findings
   raised on its records and the ownership intervals that closed on it.  A replay, a backfill or
   a mirror of older records is so kept for the retention from when it was read, and never
   deleted by the batch that wrote it.  Closed ``partition_ownership`` intervals also expire
   ``upkeep.ownership_retention_days`` after they closed, by the same two clocks; the lag
   history tables' rows older than ``lag.history_hours``, and the findings detected more than
   ``upkeep.findings_retention_days`` before the clock (the files that held them rewritten);
2. clustering: one past day of the history tables (a ``snapshot_date`` or ``to_date`` partition
   before the stream's clock's day) whose files are not yet sorted by group is rewritten sorted
   by group in row groups of ``upkeep.cluster_row_group_rows`` (:mod:`groupwatch.clustering`):
   a day is written to while it lasts and read for a month after, one group at a time;
3. compaction: files smaller than ``upkeep.target_file_mb`` in a partition (or an unpartitioned
   table) are rewritten into as few files as that size allows;
4. VACUUM: files no version within ``delta.deletedFileRetentionDuration`` refers to are removed;
5. log retention: log entries older than ``delta.logRetentionDuration`` are removed, never the
   checkpoint the oldest kept version is read from.

Every step is one Delta commit or a deletion of what no kept version refers to, so a step
killed half-way leaves a consistent table and the next turn does the rest.  None touches a
transaction (``txn``) action: the job's exactly-once ids live in every checkpoint, so removing
the log entries before a checkpoint loses none of them.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from deltalake import CommitProperties, DeltaTable, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError

from groupwatch import clustering
from groupwatch.config import UpkeepConfig
from groupwatch.delta import checksum
from groupwatch.delta import write as deltawrite
from groupwatch.tables import Table

log = logging.getLogger("groupwatch.job")

#: The ``userMetadata`` of upkeep's commits: the job tells them from its own writes by it.
UPKEEP_NOTE = "groupwatch upkeep"
#: The partition column history retention goes by.
HISTORY_COLUMN = "snapshot_date"


def properties(upkeep: UpkeepConfig, *, local: bool = True) -> dict[str, str]:
    """The Delta table properties that bound a table's log and deleted files.

    With upkeep on and the table on the driver's file system (``local``), the writers do not
    remove expired log entries after their commits (``delta.enableExpiredLogCleanup``):
    upkeep does it in each table's turn (``cleanup_metadata``, which the property does not
    stop).  On an object store upkeep's turn is Spark's, which has no such step: there the
    log is cut back by the writers' own cleanup, as before.  delta-rs's cleanup after every
    commit lists and reads the whole log: at 3,000 log entries it was half of a ten-row
    append's time (33 against 17 ms), and what made the appends slow down with uptime
    (bench/HISTORY.md, "Ageing: what weeks of batches leave in the tables, and table upkeep",
    *The writers' log cleanup*).  With upkeep off, the writers clean as Delta's default."""
    return {
        "delta.enableExpiredLogCleanup": (
            "false" if upkeep.every_n_batches > 0 and local else "true"
        ),
        "delta.checkpointInterval": str(upkeep.checkpoint_interval),
        "delta.logRetentionDuration": f"interval {upkeep.log_retention_hours} hours",
        "delta.deletedFileRetentionDuration": (
            f"interval {upkeep.deleted_file_retention_hours} hours"
        ),
    }


def clock_day(clock_ms: int | None) -> dt.date | None:
    """The UTC day of the stream's clock (None without one): the days before it are past."""
    if clock_ms is None:
        return None
    return dt.datetime.fromtimestamp(clock_ms / 1000, tz=dt.UTC).date()


def _days_before(days: int, clock_ms: int | None) -> dt.date | None:
    """The UTC day ``days`` before the stream's clock; None for no retention or no clock."""
    today = clock_day(clock_ms)
    if days <= 0 or today is None:
        return None
    return today - dt.timedelta(days=days)


def history_cutoff(upkeep: UpkeepConfig, clock_ms: int | None) -> dt.date | None:
    """The first ``snapshot_date`` kept whatever its rows' write time: ``history_retention_days``
    before the stream's clock (the newest record time of the batch, as state expiry counts);
    None: keep everything."""
    return _days_before(upkeep.history_retention_days, clock_ms)


def written_before(days: int, now_ms: int | None = None) -> int | None:
    """The write-time floor of a retention of ``days``: rows written (by the wall clock, in ms)
    at or after it are kept whatever the time of their records; None: no retention."""
    if days <= 0:
        return None
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return now - days * 86_400_000


def newest_writes(target: DeltaTable, column: str) -> dict[dt.date, int]:
    """Per day of the partition column ``column``: when its newest data file was written (ms).

    A data file's write time is the ingestion of its rows, or later (compaction and clustering
    write the same rows anew): a floor on it keeps rows at least that long after they were read."""
    adds = pa.table(target.get_add_actions(flatten=True))
    if adds.num_rows == 0:
        return {}
    newest: dict[dt.date, int] = {}
    for day, written in zip(
        adds.column(f"partition.{column}").to_pylist(),
        adds.column("modification_time").to_pylist(),
        strict=True,
    ):
        if day is None:
            continue
        when = dt.date.fromisoformat(str(day))
        stamp = (
            int(written.timestamp() * 1000) if isinstance(written, dt.datetime) else int(written)
        )
        newest[when] = max(newest.get(when, stamp), stamp)
    return newest


def old_days(
    newest: dict[dt.date, int], before: dt.date | None, floor_ms: int | None
) -> list[dt.date]:
    """The days before ``before`` whose newest write is older than ``floor_ms``: the ones that
    expire (none without either bound)."""
    if before is None or floor_ms is None:
        return []
    return sorted(day for day, written in newest.items() if day < before and written < floor_ms)


def merge_writes(*per_table: dict[dt.date, int]) -> dict[dt.date, int]:
    """The newest write of each day over several tables: a day is as young as its youngest."""
    out: dict[dt.date, int] = {}
    for newest in per_table:
        for day, written in newest.items():
            out[day] = max(out.get(day, written), written)
    return out


def day_list(days: Sequence[dt.date]) -> str:
    """The days as the IN list of a delete predicate."""
    return ", ".join(f"'{d.isoformat()}'" for d in days)


def day_ranges_ms(days: Sequence[dt.date]) -> str:
    """A predicate on ``source.timestamp`` (ms): the record is of one of ``days`` (UTC)."""
    parts = []
    for day in days:
        start = int(dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC).timestamp() * 1000)
        parts.append(
            f"(source['timestamp'] >= {start} AND source['timestamp'] < {start + 86_400_000})"
        )
    return " OR ".join(parts)


#: The tables a day of snapshots expires from together, and the column each is cut by.
HISTORY_TABLES = ("group_snapshots", "member_assignments")


def expire_history(
    paths: dict[str, Path], cutoff: dt.date | None, floor_ms: int | None
) -> dict[str, int]:
    """The history rule over every table at once; the rows each table lost.

    ``paths``: the tables on the driver's file system (a table missing there, or not created
    yet, is left out).  The days come from ``group_snapshots`` and ``member_assignments``
    together (a day compacted in one is as young as its newest write in either), so a snapshot
    and its members go in the same turn, and with them the findings raised on records of those
    days and the ownership intervals that closed on them: no table keeps members, ownership or
    findings of a snapshot the history dropped."""
    loaded: dict[str, DeltaTable] = {}
    for name, path in paths.items():
        try:
            loaded[name] = DeltaTable(str(path))
        except Exception:  # noqa: BLE001 (not created yet: nothing to expire)
            continue
    newest = merge_writes(
        *(newest_writes(loaded[n], HISTORY_COLUMN) for n in HISTORY_TABLES if n in loaded)
    )
    days = old_days(newest, cutoff, floor_ms)
    expired = {name: 0 for name in loaded}
    if not days:
        return expired
    for name in HISTORY_TABLES:
        if name in loaded:
            # On the partition column only: whole files are dropped.
            done = loaded[name].delete(
                f"{HISTORY_COLUMN} IN ({day_list(days)})", commit_properties=_note()
            )
            expired[name] += int(done.get("num_deleted_rows", 0))
    if FINDINGS_TABLE in loaded:
        done = loaded[FINDINGS_TABLE].delete(day_ranges_ms(days), commit_properties=_note())
        expired[FINDINGS_TABLE] += int(done.get("num_deleted_rows", 0))
    for name in CLOSED_TABLES:
        if name in loaded:
            done = loaded[name].delete(
                f"{CLOSED_COLUMN} IN ({day_list(days)})", commit_properties=_note()
            )
            expired[name] += int(done.get("num_deleted_rows", 0))
    for name in loaded:
        checksum.forget_stale(paths[name])
    return expired


#: The table whose closed intervals expire, and its partition column they expire by (the day
#: an interval closed; null while open).
CLOSED_TABLES = ("partition_ownership",)
CLOSED_COLUMN = "to_date"


def closed_cutoff(upkeep: UpkeepConfig, clock_ms: int | None) -> dt.date | None:
    """The first day of closed ownership intervals kept: ``ownership_retention_days`` before
    the stream's clock, as the history's cutoff; None: keep everything."""
    return _days_before(upkeep.ownership_retention_days, clock_ms)


#: The table whose rows expire by when they were detected, and the column.
FINDINGS_TABLE = "findings"
FINDINGS_COLUMN = "detected_at"


def findings_cutoff(upkeep: UpkeepConfig, clock_ms: int | None) -> dt.datetime | None:
    """The oldest ``detected_at`` kept in ``findings``: the start of the UTC day
    ``findings_retention_days`` before the stream's clock; None: keep everything."""
    day = _days_before(upkeep.findings_retention_days, clock_ms)
    return None if day is None else dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)


@dataclass(frozen=True)
class Tidied:
    """What one upkeep of one table did."""

    table: str
    #: Files compaction rewrote, and the files it wrote instead.
    compacted: int = 0
    written: int = 0
    #: Past days rewritten sorted by group (at most one a turn).
    clustered: int = 0
    #: Files VACUUM removed.
    vacuumed: int = 0
    #: Rows history retention deleted.
    expired_rows: int = 0
    #: ``_delta_log`` entries removed.
    log_removed: int = 0
    #: A step lost a commit race with another writer; the next turn does it.
    conflict: bool = False
    seconds: float = 0.0


def log_entries(path: Path) -> int:
    """Entries in the table's ``_delta_log`` folder (commits, checksums, checkpoints)."""
    try:
        return len(os.listdir(path / "_delta_log"))
    except FileNotFoundError:
        return 0


def _note() -> CommitProperties:
    return CommitProperties(custom_metadata={"userMetadata": UPKEEP_NOTE})


#: The lag history tables, trimmed by the brokers' answer time to ``lag.history_hours``; the
#: share partitions' history by its records' time (the share coordinator's topic itself keeps
#: only minutes of it: its records are recent when read).
OBSERVED_COLUMN = "observed_at"
OBSERVED_TABLES = ("end_offsets", "lag_history", "share_partition_history")


def observed_cutoff(history_hours: int, now: dt.datetime | None = None) -> dt.datetime | None:
    """The oldest ``observed_at`` kept in the lag history tables (None: keep everything)."""
    if history_hours <= 0:
        return None
    return (now or dt.datetime.now(tz=dt.UTC)) - dt.timedelta(hours=history_hours)


#: The tables whose past days are clustered, and the day column they are partitioned by.
CLUSTERED_TABLES = {
    "group_snapshots": HISTORY_COLUMN,
    "member_assignments": HISTORY_COLUMN,
    "partition_ownership": CLOSED_COLUMN,
}
#: What a day's rows are sorted by: the pages and the analysts read one group's rows.
CLUSTER_COLUMN = "group"


def unclustered_days(
    path: Path, target: DeltaTable, column: str, today: dt.date, max_rows: int
) -> list[str]:
    """The partitions of ``column`` before ``today`` whose files are not clustered by group
    (:func:`groupwatch.clustering.clustered`), newest first: the days upkeep has still to
    rewrite.  Reads the footers of the past days' files (a few per day)."""
    adds = pa.table(target.get_add_actions(flatten=True))
    files: dict[str, list[str]] = {}
    for rel, day in zip(
        adds.column("path").to_pylist(),
        adds.column(f"partition.{column}").to_pylist(),
        strict=True,
    ):
        if day is not None and dt.date.fromisoformat(str(day)) < today:
            files.setdefault(str(day), []).append(rel)
    return [
        day
        for day in sorted(files, reverse=True)
        if not clustering.clustered(
            [
                clustering.row_group_bounds(pq.read_metadata(path / unquote(rel)), CLUSTER_COLUMN)
                for rel in files[day]
            ],
            max_rows,
        )
    ]


def cluster_day(
    target: DeltaTable,
    column: str,
    day: str,
    upkeep: UpkeepConfig,
    partition_by: Sequence[str],
) -> None:
    """Rewrite one day's partition sorted by group, in row groups of
    ``upkeep.cluster_row_group_rows`` (one commit replacing the day's files).

    Sorted here rather than by delta-rs's Z-order: its key keeps a value's first 16 bytes, so
    the long group names that share them (``connect-...``) came out in any order.  A past day
    is read into memory whole (tens of MB for a day of 10,000 groups).  ``partition_by``: the
    table's partition columns, ``column`` among them."""
    data = target.to_pyarrow_table(filters=pc.field(column) == dt.date.fromisoformat(day))
    ordered = data.take(pc.sort_indices(data, sort_keys=[(CLUSTER_COLUMN, "ascending")]))
    write_deltalake(
        target,
        ordered,
        mode="overwrite",
        predicate=f"{column} = '{day}'",
        partition_by=list(partition_by),
        target_file_size=upkeep.target_file_mb * 1_000_000,
        writer_properties=WriterProperties(
            max_row_group_size=upkeep.cluster_row_group_rows,
            statistics_truncate_length=clustering.STATISTICS_BYTES,
        ),
        commit_properties=_note(),
    )


def tidy(
    path: Path,
    table: Table,
    upkeep: UpkeepConfig,
    cutoff: dt.date | None,
    observed_before: dt.datetime | None = None,
    closed_before: dt.date | None = None,
    detected_before: dt.datetime | None = None,
    today: dt.date | None = None,
    closed_written_before: int | None = None,
) -> Tidied:
    """One upkeep of the table at ``path`` (steps in the module's doc); ``cutoff``: not used
    here any more, the history's days expire from every table at once (:func:`expire_history`);
    ``observed_before``: the lag history tables' rows observed before it are deleted;
    ``closed_before``: the ownership intervals that ended before it and were written before
    ``closed_written_before`` (ms; None: none expire); ``detected_before``: the findings detected
    before it; ``today``: the stream's clock's day, before which days are clustered (None:
    none is)."""
    started = time.monotonic()
    counts = {"compacted": 0, "written": 0, "vacuumed": 0, "expired_rows": 0, "clustered": 0}
    conflict = False
    try:
        target = DeltaTable(str(path))
        if observed_before is not None and table.name in OBSERVED_TABLES:
            counts["expired_rows"] += _expire(target, OBSERVED_COLUMN, _stamp(observed_before))
        if detected_before is not None and table.name == FINDINGS_TABLE:
            counts["expired_rows"] += _expire(target, FINDINGS_COLUMN, _stamp(detected_before))
        if table.name in CLOSED_TABLES:
            # On the partition column, whole files go; an open interval's is null and is never
            # among the days.  Only days written long enough ago: a replayed interval that
            # closed years ago stays for the retention from when it was read.
            closed_days = old_days(
                newest_writes(target, CLOSED_COLUMN), closed_before, closed_written_before
            )
            if closed_days:
                done = target.delete(
                    f"{CLOSED_COLUMN} IN ({day_list(closed_days)})", commit_properties=_note()
                )
                counts["expired_rows"] += int(done.get("num_deleted_rows", 0))
        day_column = CLUSTERED_TABLES.get(table.name)
        if today is not None and day_column is not None and upkeep.cluster_row_group_rows > 0:
            # One day a turn: a start-up over weeks of backlog spreads the rewrites over the
            # turns instead of holding one batch for all of them; the newest first, the most read.
            days = unclustered_days(path, target, day_column, today, upkeep.cluster_row_group_rows)
            if days:
                cluster_day(target, day_column, days[0], upkeep, table.partition_by)
                counts["clustered"] = 1
        metrics = target.optimize.compact(
            target_size=upkeep.target_file_mb * 1_000_000,
            # One rewrite at a time: the job's two cores also run the next batch.
            max_concurrent_tasks=1,
            commit_properties=_note(),
            # A table read by key keeps its small row groups (each file's runs stay sorted).
            writer_properties=deltawrite.shaped(table),
        )
        counts["compacted"] = int(metrics.get("numFilesRemoved", 0))
        counts["written"] = int(metrics.get("numFilesAdded", 0))
        # The retention comes from the table's own deletedFileRetentionDuration.  Full: the
        # folder listed, not only the log's remove actions, which log retention may already
        # have taken away with the entries that held them.
        removed = target.vacuum(dry_run=False, full=True, commit_properties=_note())
        counts["vacuumed"] = len(removed)
    except CommitFailedError as exc:
        # Another writer (an analyst's OPTIMIZE or DELETE) committed first: nothing of this
        # step was committed, and the next turn finds the table as that writer left it.
        log.warning("upkeep of %s lost a commit race, left for its next turn: %s", table.name, exc)
        conflict = True
    before = log_entries(path)
    DeltaTable(str(path)).cleanup_metadata()
    # A checkpoint of this turn's commits leaves Spark's checksum of the last one stale.
    checksum.forget_stale(path)
    return Tidied(
        table=table.name,
        log_removed=max(0, before - log_entries(path)),
        conflict=conflict,
        seconds=time.monotonic() - started,
        **counts,
    )


def _stamp(when: dt.datetime) -> str:
    """A time as the delete predicates compare it (UTC, to the second)."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _expire(target: DeltaTable, column: str, before: str) -> int:
    """Delete the rows whose ``column`` is below ``before`` (one commit); how many went."""
    done = target.delete(f"{column} < '{before}'", commit_properties=_note())
    return int(done.get("num_deleted_rows", 0))


def is_upkeep(user_metadata: str | None) -> bool:
    """Whether a commit with this ``userMetadata`` is one of upkeep's."""
    return user_metadata == UPKEEP_NOTE
