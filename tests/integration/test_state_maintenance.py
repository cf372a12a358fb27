"""State maintenance on a real ``group_state`` Delta table: superseded versions, deleted groups
and silent groups go; what a replay of the batch would read stays."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from groupwatch import config, tables
from tests.integration.empty_tables import EmptyTables

pytestmark = pytest.mark.spark

HOUR_MS = 3_600_000
NOW_MS = 1_700_000_000_000
BATCH = 10


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


@pytest.fixture(params=["driver", "spark"])
def where(request, monkeypatch) -> str:  # type: ignore[no-untyped-def]
    """Maintenance from the driver (local tables, delta-rs) or by Spark (as on an object
    store)."""
    if request.param == "spark":
        from groupwatch.spark import state_store

        monkeypatch.setattr(state_store, "_local_tables", lambda config: None)
    return str(request.param)


def _job(spark, tables_: EmptyTables, root: Path, *extra: str):  # type: ignore[no-untyped-def]
    from groupwatch.spark.query import GroupwatchQuery

    cfg = config.load(
        None,
        env={},
        overrides=[
            f"delta.root={root / 'delta'}",
            f"checkpoint.root={root / 'checkpoints'}",
            "job.state_maintenance_every_n_batches=5",
            "job.expire_idle_groups_hours=24",
            *extra,
        ],
    )
    tables_.create(spark, cfg)
    return GroupwatchQuery(spark, cfg, cfg.detect.detector()), cfg


def _state(spark, cfg, rows):  # type: ignore[no-untyped-def]
    """(group, batch_id, state, last_event_time, deleted) rows, nothing awaiting confirmation."""
    frame = spark.createDataFrame([(*r, None, None) for r in rows], tables.GROUP_STATE.ddl)
    frame.write.format("delta").mode("append").save(cfg.table_path("group_state"))


def _left(spark, cfg) -> set[tuple[str, int]]:  # type: ignore[no-untyped-def]
    df = spark.read.format("delta").load(cfg.table_path("group_state"))
    return {(r.group, r.batch_id) for r in df.collect()}


def test_maintenance_keeps_what_a_replay_reads(
    spark, empty_tables: EmptyTables, tmp_path: Path, where: str
) -> None:  # type: ignore[no-untyped-def]
    job, cfg = _job(spark, empty_tables, tmp_path)
    fresh, old = _ts(NOW_MS - HOUR_MS), _ts(NOW_MS - 48 * HOUR_MS)
    _state(
        spark,
        cfg,
        [
            # active: three older versions and one of this batch
            ("active", 3, '{"v": 3}', fresh, False),
            ("active", 6, '{"v": 6}', fresh, False),
            ("active", 8, '{"v": 8}', fresh, False),
            ("active", BATCH, '{"v": 10}', fresh, False),
            # quiet for 48 h but still committing offsets (below): kept
            ("committing", 2, '{"v": 2}', old, False),
            # silent for 48 h: forgotten
            ("silent", 1, '{"v": 1}', old, False),
            ("silent", 4, '{"v": 4}', old, False),
            # deleted (tombstone) in batch 7: forgotten
            ("deleted", 5, '{"v": 5}', fresh, False),
            ("deleted", 7, None, fresh, True),
            # deleted in batch 7, back in this batch: only the new life stays
            ("reborn", 7, None, fresh, True),
            ("reborn", BATCH, '{"v": 10}', fresh, False),
        ],
    )
    spark.createDataFrame(
        [("committing", "t", 3, 100, fresh)], tables.GROUP_OFFSETS.ddl
    ).write.format("delta").mode("append").save(cfg.table_path("group_offsets"))

    job._maintain_state(BATCH, NOW_MS)

    assert _left(spark, cfg) == {
        ("active", 8),  # the newest version before the batch: a replay of it reads this one
        ("active", BATCH),
        ("committing", 2),
        ("reborn", BATCH),
    }
    # A replay of the same batch (its maintenance already committed) changes nothing.
    job._maintain_state(BATCH, NOW_MS)
    assert len(_left(spark, cfg)) == 4


def test_maintenance_every_n_batches_or_never(
    spark, empty_tables: EmptyTables, tmp_path: Path, where: str
) -> None:  # type: ignore[no-untyped-def]
    job, cfg = _job(spark, empty_tables, tmp_path / "a")
    rows = [("g", 1, "{}", _ts(NOW_MS), False), ("g", 2, "{}", _ts(NOW_MS), False)]
    _state(spark, cfg, rows)
    job._maintain_state(4, NOW_MS)  # not a 5th batch
    assert _left(spark, cfg) == {("g", 1), ("g", 2)}
    job._maintain_state(5, NOW_MS)
    assert _left(spark, cfg) == {("g", 2)}

    off, cfg_off = _job(
        spark,
        empty_tables,
        tmp_path / "b",
        "job.state_maintenance_every_n_batches=0",
    )
    _state(spark, cfg_off, rows)
    off._maintain_state(5, NOW_MS)
    assert _left(spark, cfg_off) == {("g", 1), ("g", 2)}


def test_expiry_can_be_off(spark, empty_tables: EmptyTables, tmp_path: Path, where: str) -> None:  # type: ignore[no-untyped-def]
    job, cfg = _job(spark, empty_tables, tmp_path, "job.expire_idle_groups_hours=0")
    _state(spark, cfg, [("silent", 1, "{}", _ts(NOW_MS - 10_000 * HOUR_MS), False)])
    job._maintain_state(BATCH, NOW_MS)
    assert _left(spark, cfg) == {("silent", 1)}


def test_the_driver_maintains_as_spark_does(
    spark, empty_tables: EmptyTables, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Random versions (superseded, deleted, reborn, silent, without an event time) and
    commits, maintained by each path on its own copy: the same versions left, the same
    counts and the same groups forgotten."""
    import random

    from groupwatch.spark import state_store

    on_driver = state_store._local_tables
    for seed in range(4):
        rng = random.Random(seed)
        rows = []
        for g in range(12):
            for version in sorted(rng.sample(range(1, BATCH + 3), rng.randrange(1, 5))):
                age = rng.choice([1, 2, 30, 47, 49, 80])
                event = None if rng.random() < 0.1 else _ts(NOW_MS - age * HOUR_MS)
                gone = rng.random() < 0.2
                rows.append((f"g{g}", version, None if gone else "{}", event, gone))
        commits = [
            (f"g{g}", "t", 1, 1, _ts(NOW_MS - rng.choice([1, 30, 60]) * HOUR_MS))
            for g in range(12)
            if rng.random() < 0.4
        ]
        done = {}
        left = {}
        for path in ("driver", "spark"):
            monkeypatch.setattr(
                state_store,
                "_local_tables",
                on_driver if path == "driver" else (lambda config: None),
            )
            job, cfg = _job(spark, empty_tables, tmp_path / f"{seed}-{path}")
            _state(spark, cfg, rows)
            if commits:
                spark.createDataFrame(commits, tables.GROUP_OFFSETS.ddl).write.format("delta").mode(
                    "append"
                ).save(cfg.table_path("group_offsets"))
            done[path] = state_store.maintain(spark, cfg, BATCH, NOW_MS)
            left[path] = _left(spark, cfg)
        assert left["driver"] == left["spark"], seed
        assert done["driver"] == done["spark"], seed
        assert done["spark"] is not None and done["spark"].dropped, seed
