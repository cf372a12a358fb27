"""Table upkeep on real Delta tables written by the job's driver writers (delta-rs): files and
log bounded by the settings, rows and transaction ids untouched, readers undisturbed, a MERGE
that loses to a concurrent OPTIMIZE run again.

The job's own upkeep over many batches, against a run without it, is
``tests/integration/test_job_upkeep.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
import time
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable, write_deltalake

from groupwatch import tables, upkeep
from groupwatch.config import UpkeepConfig
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite

APP = "groupwatch-job"
T0 = dt.datetime(2026, 11, 24, 12, 0, tzinfo=dt.UTC)
DAY1, DAY2 = dt.date(2026, 11, 23), dt.date(2026, 11, 24)


def _create(root: Path, table: tables.Table, settings: UpkeepConfig) -> Path:
    path = root / table.name
    empty = deltaread.schema(table.name).empty_table()
    write_deltalake(
        str(path),
        empty,
        partition_by=list(table.partition_by) or None,
        configuration=upkeep.properties(settings),
    )
    return path


def _rows(path: Path) -> list[str]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _arrow(table: tables.Table, rows: list[dict[str, object]]) -> pa.Table:
    return pa.Table.from_pylist([{n: r.get(n) for n in table.column_names} for r in rows])


def _snapshots(batch: int, day: dt.date) -> pa.Table:
    return _arrow(
        tables.GROUP_SNAPSHOTS,
        [
            {
                "group": f"g{i}",
                "generation": batch,
                "member_count": i,
                "source_partition": i,
                "source_offset": batch,
                "snapshot_date": day,
            }
            for i in range(3)
        ],
    )


def _intervals(batch: int) -> pa.Table:
    """Batch b opens generation b's interval of each partition and closes b-1's."""
    rows = []
    for p in range(4):
        for start, end in ((batch - 1, batch), (batch, None)):
            if start < 0:
                continue
            rows.append(
                {
                    "group": "g",
                    "group_type": "classic",
                    "topic": "t",
                    "partition": p,
                    "member_id": f"m{start % 2}",
                    "from_generation": start,
                    "from_time": T0,
                    "to_generation": end,
                    "to_time": T0 if end is not None else None,
                }
            )
    return _arrow(tables.PARTITION_OWNERSHIP, rows)


def _write(paths: dict[str, Path], batch: int) -> None:
    day = DAY1 if batch < 30 else DAY2
    deltawrite.append_once(
        paths["group_snapshots"], tables.GROUP_SNAPSHOTS, _snapshots(batch, day), APP, batch
    )
    deltawrite.merge_once(
        paths["partition_ownership"], tables.PARTITION_OWNERSHIP, _intervals(batch), APP, batch
    )


def _age_log(path: Path, hours: float) -> None:
    """Every log entry made ``hours`` older: the time a long run takes, without waiting."""
    log_dir = path / "_delta_log"
    for name in os.listdir(log_dir):
        entry = log_dir / name
        stamp = entry.stat().st_mtime - hours * 3600
        os.utime(entry, (stamp, stamp))


def _files_per_partition(path: Path) -> dict[str, int]:
    adds = pa.table(DeltaTable(str(path)).get_add_actions(flatten=True)).to_pylist()
    counts: dict[str, int] = {}
    for add in adds:
        key = str(add.get("partition.snapshot_date"))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _parquet_on_disk(path: Path) -> int:
    return sum(
        1
        for folder, _, files in os.walk(path)
        for f in files
        if f.endswith(".parquet") and "_delta_log" not in folder
    )


UPKEPT = (tables.GROUP_SNAPSHOTS, tables.PARTITION_OWNERSHIP)


def test_upkeep_bounds_files_and_log_and_keeps_rows_and_transaction_ids(tmp_path: Path) -> None:
    every, interval = 5, 10
    settings = UpkeepConfig(
        every_n_batches=every,
        checkpoint_interval=interval,
        log_retention_hours=12,
        deleted_file_retention_hours=0,
    )
    kept = {t.name: _create(tmp_path / "kept", t, settings) for t in UPKEPT}
    plain = {t.name: _create(tmp_path / "plain", t, settings) for t in UPKEPT}
    batches = 60
    most_log = 0
    for batch in range(batches):
        _write(kept, batch)
        _write(plain, batch)
        if batch % every == every - 1:
            for table in UPKEPT:
                # Half a day passes between turns: what the previous turn left has expired.
                _age_log(kept[table.name], 13)
                upkeep.tidy(kept[table.name], table, settings, None)
                most_log = max(most_log, upkeep.log_entries(kept[table.name]))
    for table in UPKEPT:
        assert _rows(kept[table.name]) == _rows(plain[table.name]), table.name
        # The exactly-once ids outlive the log entries that carried them.
        target = DeltaTable(str(kept[table.name]))
        assert target.transaction_version(APP) == batches - 1
    # A replay of the last batch is still skipped, by either table.
    assert not deltawrite.append_once(
        kept["group_snapshots"],
        tables.GROUP_SNAPSHOTS,
        _snapshots(batches - 1, DAY2),
        APP,
        batches - 1,
    )
    # Files per partition: what one turn leaves (one file) plus a turn's batches.
    compacted = _files_per_partition(kept["group_snapshots"])
    assert compacted == {str(DAY1): 1, str(DAY2): 1}, compacted
    assert max(_files_per_partition(plain["group_snapshots"]).values()) == 30
    ownership = len(DeltaTable(str(kept["partition_ownership"])).file_uris())
    assert ownership == 1
    # VACUUM (retention 0 here) left no file of an older version on disk.
    assert _parquet_on_disk(kept["partition_ownership"]) == 1
    assert _parquet_on_disk(plain["partition_ownership"]) >= batches
    # The log: at most a checkpoint interval of commits, a turn's upkeep commits and the
    # entries made since (about 4 per turn), not one per batch since the start.
    assert most_log <= interval + every * 4 + 4, most_log
    assert upkeep.log_entries(plain["group_snapshots"]) >= batches


def test_history_retention_deletes_whole_old_days_only(tmp_path: Path) -> None:
    settings = UpkeepConfig(history_retention_days=1)
    path = _create(tmp_path, tables.GROUP_SNAPSHOTS, settings)
    for batch, day in enumerate((DAY1 - dt.timedelta(days=1), DAY1, DAY2)):
        deltawrite.append_once(path, tables.GROUP_SNAPSHOTS, _snapshots(batch, day), APP, batch)
    clock_ms = int(dt.datetime(2026, 11, 24, 23, 0, tzinfo=dt.UTC).timestamp() * 1000)
    cutoff = upkeep.history_cutoff(settings, clock_ms)
    assert cutoff == DAY1
    paths = {"group_snapshots": path}
    # Written a moment ago: kept, old records or not.
    assert upkeep.expire_history(paths, cutoff, upkeep.written_before(1)) == {"group_snapshots": 0}
    a_day_on = int(time.time() * 1000) + 86_400_000 + 1000
    done = upkeep.expire_history(paths, cutoff, upkeep.written_before(1, a_day_on))
    assert done == {"group_snapshots": 3}
    days = {r["snapshot_date"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}
    assert days == {DAY1, DAY2}
    again = upkeep.expire_history(paths, cutoff, upkeep.written_before(1, a_day_on))
    assert again == {"group_snapshots": 0}
    assert upkeep.history_cutoff(UpkeepConfig(history_retention_days=0), clock_ms) is None


def test_readers_see_every_row_while_upkeep_compacts_and_vacuums(tmp_path: Path) -> None:
    """A reader (the dashboard's delta-rs) reading again and again while batches append and
    upkeep compacts and vacuums: every read is a whole version, never an error."""
    settings = UpkeepConfig()  # the shipped retention
    path = _create(tmp_path, tables.GROUP_SNAPSHOTS, settings)
    written = [0]
    errors: list[BaseException] = []
    reads = [0]
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                before = written[0]
                rows = DeltaTable(str(path)).to_pyarrow_table().num_rows
                after = written[0]
                # Each batch is 3 rows: a whole number of batches, no fewer than were
                # committed before the read started.
                if rows % 3 or rows < before * 3 or rows > (after + 1) * 3:
                    errors.append(AssertionError(f"{rows} rows between {before} and {after}"))
                reads[0] += 1
            except Exception as exc:  # noqa: BLE001 - the test reports any failure
                errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for batch in range(40):
            deltawrite.append_once(
                path, tables.GROUP_SNAPSHOTS, _snapshots(batch, DAY2), APP, batch
            )
            written[0] = batch + 1
            if batch % 4 == 3:
                upkeep.tidy(path, tables.GROUP_SNAPSHOTS, settings, None)
    finally:
        done.set()
        reader.join()
    assert not errors, errors[:3]
    assert reads[0] > 10
    assert _files_per_partition(path) == {str(DAY2): 1}


def _findings(batch: int) -> pa.Table:
    return _arrow(
        tables.FINDINGS,
        [
            {"finding_id": f"f{batch}-{i}", "kind": "k", "group": "g", "generation": batch}
            for i in range(2)
        ],
    )


def test_a_merge_that_loses_to_a_concurrent_optimize_is_run_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An analyst's OPTIMIZE commits between the moment the job's insert-only MERGE of
    findings loaded the table (and chose the files it reads) and its commit: the MERGE loses
    its commit race, is run again on the table as the OPTIMIZE left it, and the table ends as
    one the OPTIMIZE never touched.

    The OPTIMIZE is put in that window on purpose, at chosen batches: left to two threads'
    timing, the two met in some runs and not in others (455 MERGEs beside 454 OPTIMIZEs
    once passed each other without a conflict), so the test proved nothing when it passed."""
    settings = UpkeepConfig()
    path = _create(tmp_path / "raced", tables.FINDINGS, settings)
    plain = _create(tmp_path / "plain", tables.FINDINGS, settings)
    raced_batches = {3, 4, 9}
    optimized: list[int] = []
    loaded = deltawrite.DeltaTable

    class OptimizedUnderfoot(loaded):
        """The job's view of the raced table: at a raced batch's first MERGE, another writer
        compacts the table after this load and before the MERGE commits."""

        batch = -1

        def merge(self, *args: object, **kwargs: object) -> object:
            merger = super().merge(*args, **kwargs)
            here = Path(self.table_uri.removeprefix("file://")).resolve()
            if here == path.resolve() and self.batch in raced_batches:
                raced_batches.discard(self.batch)
                metrics = loaded(str(path)).optimize.compact()
                optimized.append(int(metrics["numFilesRemoved"]))
            return merger

    monkeypatch.setattr(deltawrite, "DeltaTable", OptimizedUnderfoot)
    caplog.set_level(logging.WARNING, logger="groupwatch.job")
    for batch in range(12):
        OptimizedUnderfoot.batch = batch
        for target in (path, plain):
            assert deltawrite.merge_once(
                target, tables.FINDINGS, _findings(batch), APP, batch, update=False
            )
    lost = [r.getMessage() for r in caplog.records if "lost a commit race" in r.getMessage()]
    # Each OPTIMIZE removed files the MERGE had read, and each such MERGE lost once.
    assert len(optimized) == 3 and all(n > 1 for n in optimized), optimized
    assert len(lost) == 3, lost
    assert all("findings merge" in m and "attempt 1" in m for m in lost), lost
    assert _rows(path) == _rows(plain)
    # Compacted (not as many files as commits), and each batch's transaction id kept.
    assert DeltaTable(str(path)).transaction_version(APP) == 11
    assert len(DeltaTable(str(path)).file_uris()) < len(DeltaTable(str(plain)).file_uris())


def test_lag_history_is_trimmed_to_history_hours(tmp_path: Path) -> None:
    settings = UpkeepConfig()
    path = _create(tmp_path, tables.END_OFFSETS, settings)
    now = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    times = [now - dt.timedelta(hours=h) for h in (200, 169, 167, 1)]
    rows = pa.Table.from_pylist(
        [
            {"topic": "t", "partition": 0, "start_offset": 0, "end_offset": i, "observed_at": at}
            for i, at in enumerate(times)
        ],
        schema=deltaread.schema("end_offsets"),
    )
    deltawrite.append_once(path, tables.END_OFFSETS, rows, APP, 0)
    cutoff = upkeep.observed_cutoff(168, now)
    done = upkeep.tidy(path, tables.END_OFFSETS, settings, None, cutoff)
    assert done.expired_rows == 2
    kept = DeltaTable(str(path)).to_pyarrow_table().column("end_offset").to_pylist()
    assert sorted(kept) == [2, 3]
    assert upkeep.observed_cutoff(0, now) is None


def test_share_history_is_trimmed_to_history_hours(tmp_path: Path) -> None:
    """``share_partition_history`` rows by their record's time, as the lag history."""
    settings = UpkeepConfig()
    path = _create(tmp_path, tables.SHARE_PARTITION_HISTORY, settings)
    now = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    times = [now - dt.timedelta(hours=h) for h in (200, 169, 167, 1)]
    rows = pa.Table.from_pylist(
        [
            {"group": "q", "topic_id": "t", "partition": 0, "source_offset": i, "observed_at": at}
            for i, at in enumerate(times)
        ],
        schema=deltaread.schema("share_partition_history"),
    )
    deltawrite.append_once(path, tables.SHARE_PARTITION_HISTORY, rows, APP, 0)
    done = upkeep.tidy(
        path, tables.SHARE_PARTITION_HISTORY, settings, None, upkeep.observed_cutoff(168, now)
    )
    assert done.expired_rows == 2
    kept = DeltaTable(str(path)).to_pyarrow_table().column("source_offset").to_pylist()
    assert sorted(kept) == [2, 3]


def test_closed_ownership_intervals_expire_and_open_ones_stay(tmp_path: Path) -> None:
    """Closed intervals that ended on a day more than ``ownership_retention_days`` before the
    stream's clock go (their partitions); those that ended since, and every open interval
    however old, stay."""
    settings = UpkeepConfig(ownership_retention_days=30)
    path = _create(tmp_path, tables.PARTITION_OWNERSHIP, settings)
    clock = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
    old, recent = clock - dt.timedelta(days=31), clock - dt.timedelta(days=29)
    ancient = clock - dt.timedelta(days=400)

    def interval(partition: int, start: dt.datetime, end: dt.datetime | None) -> dict[str, object]:
        return {
            "group": "g",
            "group_type": "classic",
            "topic": "t",
            "partition": partition,
            "member_id": f"m{partition}",
            "client_id": "c",
            "from_generation": 1,
            "from_time": start,
            "to_generation": None if end is None else 2,
            "to_time": end,
            "to_date": None if end is None else end.date(),
        }

    rows = [
        interval(0, ancient, old),  # closed a month and a day ago: expires
        interval(1, ancient, recent),  # closed 29 days ago: stays
        interval(2, ancient, None),  # open for 400 days: stays
    ]
    deltawrite.merge_once(
        path,
        tables.PARTITION_OWNERSHIP,
        deltawrite.conform(_arrow(tables.PARTITION_OWNERSHIP, rows), tables.PARTITION_OWNERSHIP),
        APP,
        0,
    )
    clock_ms = int(clock.timestamp() * 1000)
    cutoff = upkeep.closed_cutoff(settings, clock_ms)
    assert cutoff == (clock - dt.timedelta(days=30)).date()
    # Just written: nothing goes in the batch that wrote it, however old its records.
    now_floor = upkeep.written_before(30)
    fresh = upkeep.tidy(
        path,
        tables.PARTITION_OWNERSHIP,
        settings,
        None,
        None,
        cutoff,
        closed_written_before=now_floor,
    )
    assert fresh.expired_rows == 0
    # Thirty days after the write (the floor past it): the old day goes.
    later = upkeep.written_before(30, int(time.time() * 1000) + 31 * 86_400_000)
    done = upkeep.tidy(
        path, tables.PARTITION_OWNERSHIP, settings, None, None, cutoff, closed_written_before=later
    )
    assert done.expired_rows == 1
    kept = DeltaTable(str(path)).to_pyarrow_table().column("partition").to_pylist()
    assert sorted(kept) == [1, 2]
    again = upkeep.tidy(
        path, tables.PARTITION_OWNERSHIP, settings, None, None, cutoff, closed_written_before=later
    )
    assert again.expired_rows == 0
    assert upkeep.closed_cutoff(UpkeepConfig(ownership_retention_days=0), clock_ms) is None
    assert upkeep.closed_cutoff(settings, None) is None


def test_findings_expire_a_year_after_they_were_detected(tmp_path: Path) -> None:
    """Findings detected before the UTC day ``findings_retention_days`` before the stream's
    clock go; those detected since stay."""
    settings = UpkeepConfig(findings_retention_days=365)
    path = _create(tmp_path, tables.FINDINGS, settings)
    clock = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)

    def finding(n: int, detected: dt.datetime) -> dict[str, object]:
        return {
            "finding_id": f"f{n}",
            "kind": "consumer_stopped",
            "severity": "warning",
            "group": "g",
            "detail": "stopped",
            "detected_at": detected,
        }

    rows = [
        finding(0, clock - dt.timedelta(days=366)),  # before the cutoff's day: expires
        finding(1, clock - dt.timedelta(days=365, hours=11)),  # on the cutoff's day: stays
        finding(2, clock - dt.timedelta(days=3)),
    ]
    deltawrite.merge_once(
        path,
        tables.FINDINGS,
        deltawrite.conform(_arrow(tables.FINDINGS, rows), tables.FINDINGS),
        APP,
        0,
        update=False,
    )
    clock_ms = int(clock.timestamp() * 1000)
    cutoff = upkeep.findings_cutoff(settings, clock_ms)
    assert cutoff == dt.datetime(2025, 11, 25, tzinfo=dt.UTC)
    done = upkeep.tidy(path, tables.FINDINGS, settings, None, None, None, cutoff)
    assert done.expired_rows == 1
    kept = DeltaTable(str(path)).to_pyarrow_table().column("finding_id").to_pylist()
    assert sorted(kept) == ["f1", "f2"]
    # 0 keeps everything, and so does a job with no clock yet.
    assert upkeep.findings_cutoff(UpkeepConfig(findings_retention_days=0), clock_ms) is None
    assert upkeep.findings_cutoff(settings, None) is None


@pytest.mark.parametrize("every", [0, 5])
def test_the_writers_leave_expired_log_entries_to_upkeep_when_it_is_on(
    tmp_path: Path, every: int
) -> None:
    """With upkeep on, an append does not remove the log entries that expired (delta-rs's
    cleanup after a commit reads the whole log: what made appends slow down with uptime);
    upkeep's turn does.  With it off, the writers clean as Delta's default."""
    settings = UpkeepConfig(every_n_batches=every, checkpoint_interval=10, log_retention_hours=12)
    path = _create(tmp_path, tables.GROUP_SNAPSHOTS, settings)
    for batch in range(25):
        deltawrite.append_once(path, tables.GROUP_SNAPSHOTS, _snapshots(batch, DAY1), APP, batch)
    _age_log(path, 13)
    for batch in range(25, 40):  # past a checkpoint: what Delta cleans after
        deltawrite.append_once(path, tables.GROUP_SNAPSHOTS, _snapshots(batch, DAY1), APP, batch)
    entries = upkeep.log_entries(path)
    if every:
        assert entries >= 40, entries
        upkeep.tidy(path, tables.GROUP_SNAPSHOTS, settings, None)
        assert upkeep.log_entries(path) <= 30
    else:
        assert entries <= 30, entries


def test_on_an_object_store_the_writers_still_clean_the_log() -> None:
    """Upkeep's turn there is Spark's, which removes no log entry itself."""
    on = UpkeepConfig(every_n_batches=20)
    assert upkeep.properties(on)["delta.enableExpiredLogCleanup"] == "false"
    assert upkeep.properties(on, local=False)["delta.enableExpiredLogCleanup"] == "true"


LIVE_DAY = dt.date(2026, 11, 24)
OLD_DAY = dt.date(2026, 6, 1)
REPLAY_DAY = dt.date(2023, 5, 2)


def _day_ms(day: dt.date, hour: int = 12) -> int:
    return int(dt.datetime.combine(day, dt.time(hour), tzinfo=dt.UTC).timestamp() * 1000)


def _history_batch(group: str, day: dt.date, generations: range) -> dict[str, pa.Table]:
    """One group's snapshots on ``day``, their members, a finding each and the ownership
    intervals they closed, as the job writes them in one batch."""
    at = dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)
    snaps, members, found, owned = [], [], [], []
    for n, gen in enumerate(generations):
        offset = _day_ms(day) // 1000 + n
        snaps.append(
            {"group": group, "generation": gen, "source_partition": 0, "source_offset": offset,
             "source_timestamp": at, "snapshot_date": day}
        )  # fmt: skip
        members.append(
            {"group": group, "generation": gen, "member_id": "m", "source_partition": 0,
             "source_offset": offset, "source_timestamp": at, "snapshot_date": day}
        )  # fmt: skip
        found.append(
            {"finding_id": f"{group}-{gen}", "kind": "assignment_overlap", "group": group,
             "generation": gen, "detected_at": dt.datetime.now(tz=dt.UTC),
             "source": {"topic": "__consumer_offsets", "partition": 0, "offset": offset,
                        "timestamp": _day_ms(day)}}
        )  # fmt: skip
        owned.append(
            {"group": group, "group_type": "classic", "topic": "t", "partition": gen,
             "member_id": "m", "from_generation": gen - 1, "from_time": at,
             "to_generation": gen, "to_time": at, "to_date": day}
        )  # fmt: skip
    return {
        "group_snapshots": _arrow(tables.GROUP_SNAPSHOTS, snaps),
        "member_assignments": _arrow(tables.MEMBER_ASSIGNMENTS, members),
        "findings": _arrow(tables.FINDINGS, found),
        "partition_ownership": _arrow(tables.PARTITION_OWNERSHIP, owned),
    }


HISTORY = (
    tables.GROUP_SNAPSHOTS,
    tables.MEMBER_ASSIGNMENTS,
    tables.FINDINGS,
    tables.PARTITION_OWNERSHIP,
)


def _append(paths: dict[str, Path], batch: dict[str, pa.Table]) -> None:
    for table in HISTORY:
        write_deltalake(
            str(paths[table.name]),
            deltawrite.conform(batch[table.name], table),
            mode="append",
            partition_by=list(table.partition_by) or None,
        )


def _generations(path: Path, table: str) -> set[tuple[str, int]]:
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    column = "to_generation" if table == "partition_ownership" else "generation"
    return {(r["group"], r[column]) for r in rows}


def _turns(paths: dict[str, Path], settings: UpkeepConfig, clock_ms: int, now_ms: int) -> None:
    """Every table's upkeep turn, as the job runs them (the history's in the snapshots' turn)."""
    floor = upkeep.written_before(settings.history_retention_days, now_ms)
    upkeep.expire_history(paths, upkeep.history_cutoff(settings, clock_ms), floor)
    for table in HISTORY:
        upkeep.tidy(
            paths[table.name],
            table,
            settings,
            None,
            closed_before=upkeep.closed_cutoff(settings, clock_ms),
            detected_before=upkeep.findings_cutoff(settings, clock_ms),
            closed_written_before=upkeep.written_before(settings.ownership_retention_days, now_ms),
        )


def test_a_groups_history_expires_from_every_table_at_once_and_a_replay_stays(
    tmp_path: Path,
) -> None:
    """The history rule: a day of snapshots goes when its records are older than the retention
    and its rows were written longer ago than that, from every table together; a replay of
    2023 records is never deleted by the batch that wrote it, and is kept for the retention
    from when it was read.  After every turn, the tables hold the same groups and generations."""
    settings = UpkeepConfig(
        history_retention_days=90, ownership_retention_days=90, cluster_row_group_rows=0
    )
    paths = {t.name: _create(tmp_path, t, settings) for t in HISTORY}
    # Two batches: two files of the day, which compaction rewrites into one.
    _append(paths, _history_batch("old-live", OLD_DAY, range(1, 3)))
    _append(paths, _history_batch("old-live", OLD_DAY, range(3, 4)))
    written_old = int(time.time() * 1000)
    time.sleep(0.05)
    _append(paths, _history_batch("kafka-7026", REPLAY_DAY, range(1, 5)))
    _append(paths, _history_batch("live", LIVE_DAY, range(1, 3)))
    clock_ms = _day_ms(LIVE_DAY, 23)

    def same_everywhere() -> set[tuple[str, int]]:
        snaps = _generations(paths["group_snapshots"], "group_snapshots")
        for table in HISTORY[1:]:
            assert _generations(paths[table.name], table.name) == snaps, table.name
        return snaps

    # The batch that wrote them (and every turn within the retention of their write): all kept.
    upkeep.expire_history(
        paths, upkeep.history_cutoff(settings, clock_ms), upkeep.written_before(90)
    )
    every = {("old-live", g) for g in (1, 2, 3)} | {("kafka-7026", g) for g in (1, 2, 3, 4)}
    assert same_everywhere() == every | {("live", 1), ("live", 2)}

    # The same day compacted in one table only: it is as young as its youngest write.
    assert DeltaTable(str(paths["member_assignments"])).optimize.compact()["numFilesRemoved"] == 2
    # 90 days after the first write, before the replay's and the compaction's: nothing goes
    # yet (old-live's day was rewritten in member_assignments since), in no table.
    cutoff = upkeep.history_cutoff(settings, clock_ms)
    upkeep.expire_history(paths, cutoff, written_old + 10)
    assert ("old-live", 1) in same_everywhere()

    # 90 days after every write: the old records go from every table, the replay too (its
    # retention from its read is over), the live day (after the records' cutoff) stays.
    _turns(paths, settings, clock_ms, int(time.time() * 1000) + 90 * 86_400_000 + 1000)
    assert same_everywhere() == {("live", 1), ("live", 2)}
