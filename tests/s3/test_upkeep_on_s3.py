"""Table upkeep with the tables on the S3 server: Spark's turns compact, vacuum and expire
there as delta-rs does on a local disk, and the upkeep thread that takes them beside the
batches (tables on an object store) loses none of a batch's writes racing it.

The job's turns there are Spark's (one library per table on object storage: docs/deploy.md,
"Tables on S3"); on a local disk they are delta-rs's (tests/unit/test_upkeep.py)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch import config, tables
from groupwatch import upkeep as tidying
from groupwatch.delta.read import DeltaStore
from groupwatch.spark import sinks, upkeep
from tests.s3.server import S3Server
from tests.s3.spark_conf import hadoop_on_s3

pytestmark = [pytest.mark.spark]

BUCKET = "gw-upkeep"
APP = "groupwatch-job"
DAYS = (dt.date(2026, 11, 23), dt.date(2026, 11, 24))


@pytest.fixture(scope="module")
def on_s3(spark: Any, s3: S3Server) -> Iterator[config.Config]:
    # Every table's turn in every batch; a removed file is vacuumed at once.
    yield from hadoop_on_s3(
        spark,
        s3,
        BUCKET,
        "upkeep.every_n_batches=1",
        "upkeep.deleted_file_retention_hours=0",
        "upkeep.cluster_row_group_rows=0",
    )


def _create(spark: Any, cfg: config.Config, table: tables.Table) -> str:
    """The table made empty on S3 as the job makes it (``sinks.ensure_tables``, one table)."""
    from delta.tables import DeltaTable

    path = cfg.table_path(table.name)
    builder = DeltaTable.createIfNotExists(spark).location(path)
    for column in table.columns:
        builder = builder.addColumn(column.name, column.ddl)
    if table.partition_by:
        builder = builder.partitionedBy(*table.partition_by)
    for key, value in tidying.properties(cfg.upkeep, local=False).items():
        builder = builder.property(key, value)
    builder.execute()
    return path


def _frame(spark: Any, path: str, rows: list[dict[str, Any]]) -> Any:
    schema = spark.read.format("delta").load(path).schema
    return spark.createDataFrame([tuple(r.get(n) for n in schema.names) for r in rows], schema)


def _snapshots(batch: int) -> list[dict[str, Any]]:
    return [
        {"group": f"g{i}", "generation": batch, "member_count": i, "source_partition": i,
         "source_offset": batch, "snapshot_date": DAYS[batch % 2]}
        for i in range(3)
    ]  # fmt: skip


def _findings(batch: int) -> list[dict[str, Any]]:
    return [
        {"finding_id": f"f{batch}-{i}", "kind": "assignment_overlap", "group": f"g{i}",
         "generation": batch, "detected_at": dt.datetime.now(tz=dt.UTC)}
        for i in range(2)
    ]  # fmt: skip


def _sorted(store: DeltaStore, name: str) -> list[str]:
    rows = store.open_table(name).to_pyarrow_table().to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _files_per_day(store: DeltaStore, name: str) -> dict[str, int]:
    import pyarrow as pa  # type: ignore[import-untyped]

    adds = pa.table(store.open_table(name).get_add_actions(flatten=True)).to_pylist()
    counts: dict[str, int] = {}
    for add in adds:
        key = str(add.get("partition.snapshot_date"))
        counts[key] = counts.get(key, 0) + 1
    return counts


def _parquet_in_bucket(s3: S3Server, cfg: config.Config, name: str) -> set[str]:
    """The data files of the table as the S3 server holds them (its objects are files)."""
    folder = s3.data / BUCKET / "groupwatch" / "delta" / name
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*.parquet")
        if "_delta_log" not in p.parts
    }


def _referenced(store: DeltaStore, name: str) -> set[str]:
    import pyarrow as pa

    adds = pa.table(store.open_table(name).get_add_actions(flatten=True)).to_pylist()
    from urllib.parse import unquote

    return {unquote(a["path"]) for a in adds}


def test_a_turn_on_s3_compacts_and_vacuums_and_keeps_every_row(
    spark: Any, s3: S3Server, on_s3: config.Config
) -> None:
    path = _create(spark, on_s3, tables.GROUP_SNAPSHOTS)
    for batch in range(8):
        _frame(spark, path, _snapshots(batch)).write.format("delta").mode("append").save(path)
    store = DeltaStore(on_s3.delta.root, on_s3.storage)
    before = _sorted(store, "group_snapshots")
    assert max(_files_per_day(store, "group_snapshots").values()) >= 4

    done = upkeep.tidy(spark, on_s3, (tables.GROUP_SNAPSHOTS,), 0, None)

    assert [d.table for d in done] == ["group_snapshots"]
    assert done[0].compacted >= 8 and not done[0].conflict
    store = DeltaStore(on_s3.delta.root, on_s3.storage)
    assert _sorted(store, "group_snapshots") == before
    # One file a day, and (vacuumed, no retention) nothing else left in the bucket.
    assert _files_per_day(store, "group_snapshots") == {str(d): 1 for d in DAYS}
    assert _parquet_in_bucket(s3, on_s3, "group_snapshots") == _referenced(store, "group_snapshots")
    # The turn's commit is marked as upkeep's, for the replay's look past it.
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().collect()
    assert [h["userMetadata"] for h in history if h["operation"] == "OPTIMIZE"] == [
        tidying.UPKEEP_NOTE
    ]

    # A second turn, after two more batches: the same result.
    for batch in range(8, 10):
        _frame(spark, path, _snapshots(batch)).write.format("delta").mode("append").save(path)
    before = _sorted(DeltaStore(on_s3.delta.root, on_s3.storage), "group_snapshots")
    upkeep.tidy(spark, on_s3, (tables.GROUP_SNAPSHOTS,), 1, None)
    store = DeltaStore(on_s3.delta.root, on_s3.storage)
    assert _sorted(store, "group_snapshots") == before
    assert _files_per_day(store, "group_snapshots") == {str(d): 1 for d in DAYS}
    assert _parquet_in_bucket(s3, on_s3, "group_snapshots") == _referenced(store, "group_snapshots")


def test_history_expires_on_s3_as_on_a_local_disk(
    spark: Any, s3: S3Server, on_s3: config.Config, tmp_path: Path
) -> None:
    """The history rule's Spark twin (tables on S3) cuts the days delta-rs cuts locally."""
    from deltalake import write_deltalake

    from groupwatch.delta import read as deltaread
    from groupwatch.delta import write as deltawrite

    cfg = config.load(
        None,
        env=s3.env(),
        overrides=[*s3.overrides(f"s3a://{BUCKET}/history"), "upkeep.every_n_batches=1"],
    )
    local: dict[str, Path] = {}
    rows = {
        "group_snapshots": [dict(r, snapshot_date=d) for d in DAYS for r in _snapshots(1)],
        "member_assignments": [
            {
                "group": "g0",
                "generation": 1,
                "member_id": "m",
                "source_partition": 0,
                "source_offset": n,
                "snapshot_date": d,
            }
            for n, d in enumerate(DAYS)
        ],  # fmt: skip
    }
    for name in (*tidying.HISTORY_TABLES, tidying.FINDINGS_TABLE, *tidying.CLOSED_TABLES):
        table = tables.TABLES[name]
        path = _create(spark, cfg, table)
        if name in rows:
            _frame(spark, path, rows[name]).write.format("delta").mode("append").save(path)
        local[name] = tmp_path / name
        import pyarrow as pa

        data = pa.Table.from_pylist(
            [{c: r.get(c) for c in table.column_names} for r in rows.get(name, [])],
            schema=deltaread.schema(name),
        )
        write_deltalake(
            str(local[name]),
            deltawrite.conform(data, table),
            partition_by=list(table.partition_by) or None,
        )
    # Everything written before now + 1 h counts as old; the first day is before the cutoff.
    floor = int(dt.datetime.now(tz=dt.UTC).timestamp() * 1000) + 3_600_000
    cutoff = DAYS[1]
    tidying.expire_history(local, cutoff, floor)
    upkeep._expire_history_by_spark(spark, cfg, cutoff, floor)
    there = DeltaStore(cfg.delta.root, cfg.storage)
    for name in tidying.HISTORY_TABLES:
        from deltalake import DeltaTable

        here = sorted(
            json.dumps(r, sort_keys=True, default=str)
            for r in DeltaTable(str(local[name])).to_pyarrow_table().to_pylist()
        )
        assert _sorted(there, name) == here, name
        assert {json.loads(r)["snapshot_date"] for r in here} == {str(DAYS[1])}, name


def test_the_upkeep_thread_loses_none_of_the_batches_writes(
    spark: Any, s3: S3Server, on_s3: config.Config
) -> None:
    """While the thread compacts and vacuums ``findings``, batches MERGE into it under their
    transaction ids: every row lands once, every batch's commit carries its own transaction id
    and no upkeep note, and the turns' carry the note and no transaction id (each writer's
    session-wide settings stay its own)."""
    from delta.tables import DeltaTable

    path = _create(spark, on_s3, tables.FINDINGS)
    first, last = 0, 16
    thread = upkeep.UpkeepThread(spark, on_s3)
    try:
        for batch in range(first, last):
            frame = _frame(spark, path, _findings(batch))
            sinks.run_once(spark, sinks.merge(spark, frame, tables.FINDINGS, on_s3), APP, batch)
            # Offered as the query offers it, at the end of each batch; the next batch's
            # MERGE runs while the turn does.
            thread.offer((tables.FINDINGS,), batch, None)
        during = len(thread.tidied)
        assert thread.idle(600)
    finally:
        thread.stop()
    # Turns ran while batches wrote, and more than one: the thread does not wait for an idle
    # stream, and a turn offered while one runs is taken after it.
    assert during >= 1 and len(thread.tidied) >= 2, (during, thread.tidied)
    assert any(t.compacted for t in thread.tidied), thread.tidied

    ids = {r["finding_id"] for r in spark.read.format("delta").load(path).collect()}
    assert ids == {f"f{b}-{i}" for b in range(first, last) for i in range(2)}
    history = DeltaTable.forPath(spark, path).history().collect()
    merges = [h for h in history if h["operation"] == "MERGE"]
    assert len(merges) == last - first
    assert all(h["userMetadata"] != tidying.UPKEEP_NOTE for h in merges)
    tidied = [h for h in history if h["operation"] == "OPTIMIZE"]
    assert tidied and all(h["userMetadata"] == tidying.UPKEEP_NOTE for h in tidied)
    # Each batch's transaction id is in the log once, on its own MERGE: a replay skips each
    # of them, and no commit of upkeep's carries one.
    txn = spark.read.json(f"{path}/_delta_log/*.json").where("txn is not null")
    versions = sorted(int(r["txn"]["version"]) for r in txn.collect())
    assert versions == list(range(first, last))
