"""The driver's state cache against a real ``group_state`` table: a batch reads from the cache
exactly what it would read from the table, and falls back to the table when it must."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from groupwatch import config, tables
from groupwatch.spark import sinks, state_store

pytestmark = pytest.mark.spark

NOW_MS = 1_700_000_000_000
BATCH = 10


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _cfg(root: Path, *extra: str) -> config.Config:
    return config.load(
        None,
        env={},
        overrides=[f"delta.root={root / 'delta'}", f"checkpoint.root={root / 'ck'}", *extra],
    )


def _append(spark, cfg, rows):  # type: ignore[no-untyped-def]
    """(group, batch_id, state, last_event_time, deleted, pending_until, pending_partition)."""
    frame = spark.createDataFrame(rows, tables.GROUP_STATE.ddl)
    frame.write.format("delta").mode("append").save(cfg.table_path("group_state"))


ROWS = [
    ("plain", 3, '{"v": 3}', _ts(NOW_MS - 5_000), False, None, None),
    ("plain", 8, '{"v": 8}', _ts(NOW_MS - 1_234), False, None, None),
    # awaiting confirmation on partition 0 (due at 1,000 ms past NOW), and on any partition
    ("on-p0", 6, '{"p": 0}', _ts(NOW_MS), False, _ts(NOW_MS + 1_000), 0),
    ("anywhere", 7, '{"p": null}', _ts(NOW_MS), False, _ts(NOW_MS + 2_000), None),
    # an old pending version superseded by a calm one
    ("settled", 2, '{"s": 2}', _ts(NOW_MS), False, _ts(NOW_MS), 0),
    ("settled", 9, '{"s": 9}', _ts(NOW_MS), False, None, None),
    # deleted: no state, never due
    ("gone", 4, '{"g": 4}', _ts(NOW_MS), False, _ts(NOW_MS), 0),
    ("gone", 5, None, _ts(NOW_MS), True, None, None),
    # written by this batch already (a replay): not read by it
    ("plain", BATCH, '{"v": 10}', _ts(NOW_MS), False, _ts(NOW_MS), 0),
]
GROUPS = ["plain", "on-p0", "anywhere", "settled", "gone", "unknown"]
CLOCKS = [{0: NOW_MS + 999}, {0: NOW_MS + 1_000}, {1: NOW_MS + 2_000}, {0: NOW_MS, 3: NOW_MS}]


def _rows(df) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in df.collect())


def test_the_cache_reads_what_the_table_reads(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = _cfg(tmp_path)
    sinks.ensure_tables(spark, cfg)
    _append(spark, cfg, ROWS)
    groups = spark.createDataFrame([(g,) for g in GROUPS], "group string")
    store = state_store.StateStore(spark, cfg)
    batch_rows = spark.conf.get("spark.sql.parquet.columnarReaderBatchSize")

    for clocks in CLOCKS:
        assert store.due_groups(BATCH, clocks) == state_store.due_groups(spark, cfg, BATCH, clocks)
    assert store.due_groups(BATCH, {0: NOW_MS + 1_000}) == ["on-p0"]
    from_table = _rows(state_store.prior_state(spark, cfg, groups, BATCH))
    assert _rows(store.prior_state(groups, BATCH)) == from_table
    assert [r[0] for r in from_table] == ["anywhere", "on-p0", "plain", "settled"]
    assert ("plain", '{"v": 8}', NOW_MS - 1_234, None, None, None) in from_table
    assert store.cache.covers(BATCH)
    # The load read the state column in small batches, and left the session as it was.
    assert spark.conf.get("spark.sql.parquet.columnarReaderBatchSize") == batch_rows


def test_a_replayed_batch_leaves_the_next_one_to_the_table(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = _cfg(tmp_path)
    sinks.ensure_tables(spark, cfg)
    _append(spark, cfg, ROWS)  # holds a version of BATCH: this batch is a replay
    store = state_store.StateStore(spark, cfg)
    assert store.due_groups(BATCH, {0: NOW_MS}) == []
    # This attempt computed another version than the first attempt wrote (its write skipped).
    again = ("plain", BATCH, '{"v": -1}', _ts(NOW_MS), False, _ts(NOW_MS), 1)
    written = spark.createDataFrame([again], tables.GROUP_STATE.ddl).drop("batch_id")
    store.record(BATCH, written.toArrow())
    store.settle(BATCH, completed=True)
    assert not store.cache.covers(BATCH + 1)
    # The next batch reloads: the version this batch's first attempt wrote is what it reads.
    assert store.due_groups(BATCH + 1, {0: NOW_MS}) == ["plain"]


def test_a_batch_reads_its_predecessors_versions_from_the_cache(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = _cfg(tmp_path)
    sinks.ensure_tables(spark, cfg)
    _append(spark, cfg, ROWS[:-1])
    store = state_store.StateStore(spark, cfg)
    assert store.due_groups(BATCH, {0: NOW_MS}) == []  # loads the cache
    mine = [("plain", BATCH, '{"v": 10}', _ts(NOW_MS), False, _ts(NOW_MS), 0)]
    _append(spark, cfg, mine)  # the batch's own write, as the job makes it
    store.record(BATCH, spark.createDataFrame(mine, tables.GROUP_STATE.ddl).toArrow())
    store.settle(BATCH, completed=True)
    # A version the table gets behind the cache's back is not seen: batch 11 reads the cache.
    _append(spark, cfg, [("sneaky", BATCH, "{}", _ts(NOW_MS), False, _ts(NOW_MS), 0)])
    assert store.due_groups(BATCH + 1, {0: NOW_MS}) == ["plain"]
    assert state_store.due_groups(spark, cfg, BATCH + 1, {0: NOW_MS}) == ["plain", "sneaky"]
    # A failed batch drops it: the next one reads the table.
    store.settle(BATCH + 1, completed=False)
    assert store.due_groups(BATCH + 1, {0: NOW_MS}) == ["plain", "sneaky"]


def test_over_its_budget_the_store_keeps_the_keys_and_reads_texts_by_key(
    spark, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Texts over ``job.state_cache_mb``: the cache keeps every group's key and timer, and a
    batch reads the texts it lacks from the table by key, in the workers (a large batch) or on
    the driver with delta-rs (a small one), what the table's own read gives either way; also
    from files delta-rs's MERGE rewrote (state maintenance), which read as ``string_view``."""
    import pyarrow as pa

    from groupwatch.delta import write as deltawrite

    cfg = _cfg(tmp_path, "job.state_cache_mb=1")
    sinks.ensure_tables(spark, cfg)
    big = '{"x": "' + "x" * 1_100_000 + '"}'
    _append(spark, cfg, [*ROWS, ("big", 1, big, _ts(NOW_MS), False, None, None)])
    deltawrite.delete_matching_once(
        tmp_path / "delta" / "group_state",
        pa.table({"group": ["plain"], "batch_id": pa.array([3], pa.int64())}),
        sinks.MAINTENANCE_APP_ID,
        BATCH,
        on="t.`group` = s.`group` AND t.batch_id = s.batch_id",
    )
    names = [*GROUPS, "big"]
    groups = spark.createDataFrame([(g,) for g in names], "group string")
    from_table = _rows(state_store.prior_state(spark, cfg, groups, BATCH))
    assert "big" in [r[0] for r in from_table]
    store = state_store.StateStore(spark, cfg)
    assert _rows(store.prior_state(groups, BATCH)) == from_table
    assert store.cache.covers(BATCH)
    assert not store.cache.holds_all_texts  # loaded with keys alone: the texts are over
    assert len(store.cache) == 6 and store.cache.size_bytes < 1_000_000
    assert store.due_groups(BATCH, {0: NOW_MS + 1_000}) == ["on-p0"]
    on_driver = store.prior_arrow(names, BATCH)
    assert _rows(spark.createDataFrame(on_driver)) == from_table
    # No room for texts (``job.state_cache_mb = 0``): every group's key, every text by key.
    keys_only = state_store.StateStore(spark, _cfg(tmp_path, "job.state_cache_mb=0"))
    assert keys_only.due_groups(BATCH, {0: NOW_MS + 1_000}) == ["on-p0"]
    assert keys_only.cache.split(names)[0] == [] and len(keys_only.cache) == 6
    assert _rows(keys_only.prior_state(groups, BATCH)) == from_table
    assert _rows(spark.createDataFrame(keys_only.prior_arrow(names, BATCH))) == from_table


def test_session_settings_are_put_back(spark) -> None:  # type: ignore[no-untyped-def]
    """What the job sets for one write (transaction ids, a commit note, the column batch) is
    gone afterwards: a setting left behind would tag or shape the next, unrelated write."""
    key, other = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"
    with sinks.transaction(spark, "app", 7):
        assert (spark.conf.get(key), spark.conf.get(other)) == ("app", "7")
    assert spark.conf.get(key, None) is None and spark.conf.get(other, None) is None
    spark.conf.set(key, "theirs")
    try:
        with pytest.raises(RuntimeError), sinks.session_settings(spark, {key: "mine"}):
            assert spark.conf.get(key) == "mine"
            raise RuntimeError("a failed write")
        assert spark.conf.get(key) == "theirs"
    finally:
        spark.conf.unset(key)


def test_group_state_is_written_sorted_by_group_in_small_row_groups(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Both writers of a batch's state versions (Spark's, delta-rs's) write each file sorted by
    group in small row groups, so that a read by key opens a few row groups of a start-up's
    file, not all of it; and the read by key gives every version asked for, from either."""
    import itertools
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from groupwatch import clustering
    from groupwatch.delta import write as deltawrite
    from groupwatch.spark.state_cache import Key

    cfg = _cfg(tmp_path)
    sinks.ensure_tables(spark, cfg)
    path = tmp_path / "delta" / "group_state"
    # Batch 1 by Spark: 2,000 groups of 3 KB each of text no codec shrinks, out of order.
    text = F.concat_ws(
        "",
        F.transform(
            F.sequence(F.lit(1), F.lit(48)),
            lambda i: F.sha2(F.concat("group", i.cast("string")), 256),
        ),
    )
    spark_rows = (
        spark.range(2_000)
        .select(F.format_string("g-%05d", (F.col("id") * 7919) % 2_000).alias("group"))
        .select(
            "group",
            F.lit(1).cast("long").alias("batch_id"),
            text.alias("state"),
            F.lit(_ts(NOW_MS)).alias("last_event_time"),
            F.lit(False).alias("deleted"),
            F.lit(None).cast("timestamp").alias("pending_until"),
            F.lit(None).cast("int").alias("pending_partition"),
        )
        .repartition(2)
    )
    sinks.append_once(spark_rows, tables.GROUP_STATE, cfg, "test", 1)
    # Batch 2 by delta-rs: 300 of them again, out of order.
    names = [f"g-{i:05d}" for i in random.Random(3).sample(range(2_000), 300)]
    deltawrite.append_once(
        path,
        tables.GROUP_STATE,
        pa.table(
            {
                "group": names,
                "batch_id": pa.array([2] * 300, pa.int64()),
                "state": [f'{{"n": "{n}"}}' for n in names],
                "last_event_time": pa.array([_ts(NOW_MS)] * 300, pa.timestamp("us", "UTC")),
                "deleted": [False] * 300,
                "pending_until": pa.nulls(300, pa.timestamp("us", "UTC")),
                "pending_partition": pa.nulls(300, pa.int32()),
            }
        ),
        "test",
        2,
    )
    files = sorted(path.glob("*.parquet"))
    assert len(files) == 3
    for f in files:
        bounds = clustering.row_group_bounds(pq.read_metadata(f), "group")
        assert len(bounds) >= 2, f  # more than one row group to a file
        # Sorted: each row group's range starts after the one before ends.
        assert all(
            a.high is not None and b.low is not None and a.high < b.low
            for a, b in itertools.pairwise(bounds)
        ), f
    asked = [Key("g-00007", 1, NOW_MS), Key(names[0], 2, NOW_MS), Key("g-01999", 1, NOW_MS)]
    got = state_store.local_keyed_state(path, asked)
    assert sorted(
        zip(got.column("group").to_pylist(), got.column("last_event_ms").to_pylist(), strict=True)
    ) == sorted((k.group, NOW_MS) for k in asked)
    assert f'{{"n": "{names[0]}"}}' in got.column("state").to_pylist()
