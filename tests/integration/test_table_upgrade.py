"""A table written by an older groupwatch gains the columns added since, keeping its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import config, tables, upkeep
from groupwatch.spark import sinks

pytestmark = pytest.mark.spark


def test_missing_columns_are_added(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = config.load(None, env={}, overrides=[f"delta.root={tmp_path / 'delta'}"])
    path = cfg.table_path(tables.GROUP_STATE.name)
    old = [c for c in tables.GROUP_STATE.columns if not c.name.startswith("pending_")]
    assert len(old) < len(tables.GROUP_STATE.columns)
    spark.createDataFrame(
        [("g", 1, "{}", None, False)], ", ".join(f"`{c.name}` {c.ddl}" for c in old)
    ).write.format("delta").save(path)
    sinks.ensure_tables(spark, cfg)
    df = spark.read.format("delta").load(path)
    assert tuple(df.columns) == tables.GROUP_STATE.column_names
    row = df.collect()[0]
    assert (row.group, row.batch_id, row.pending_until) == ("g", 1, None)
    properties = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()["properties"]
    assert upkeep.properties(cfg.upkeep).items() <= dict(properties).items()


@pytest.mark.parametrize("layout", ["unpartitioned", "by_day"])
def test_ownership_made_before_is_rewritten_by_day_and_open_intervals_by_bucket(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path, layout: str
) -> None:
    """``partition_ownership`` as groupwatch wrote it before it was partitioned (no
    ``to_date``), or before its open intervals were bucketed (partitioned by ``to_date``, no
    ``open_bucket``): one rewrite at start, every row kept, ``to_date`` filled from
    ``to_time`` and an open interval's ``open_bucket`` by Spark as the job's rows compute it
    in Python (``tables.group_bucket``), the job's transaction ids kept (a replayed batch is
    still skipped); a second start does nothing."""
    import datetime as dt

    from deltalake import DeltaTable

    cfg = config.load(None, env={}, overrides=[f"delta.root={tmp_path / 'delta'}"])
    table = tables.PARTITION_OWNERSHIP
    path = cfg.table_path(table.name)
    dropped = {"to_date", "open_bucket"} if layout == "unpartitioned" else {"open_bucket"}
    old = [c for c in table.columns if c.name not in dropped]
    closed = dt.datetime(2026, 11, 20, 23, 30, tzinfo=dt.UTC)
    day = [closed.date()] if layout == "by_day" else []
    rows = [
        ("g", "classic", "t", 0, "m1", "c", 1, closed, 2, closed, *day),
        ("g", "classic", "t", 0, "m2", "c", 2, closed, None, None, *[None for _ in day]),
        ("日本-é", "classic", "t", 0, "m3", "c", 2, closed, None, None, *[None for _ in day]),
    ]
    with sinks.transaction(spark, sinks.APP_ID, 7):
        written = spark.createDataFrame(rows, ", ".join(f"`{c.name}` {c.ddl}" for c in old))
        writer = written.write.format("delta")
        if layout == "by_day":
            writer = writer.partitionBy("to_date")
        writer.save(path)
    sinks.ensure_tables(spark, cfg)
    target = DeltaTable(path)
    assert target.metadata().partition_columns == ["to_date", "open_bucket"]
    # The upkeep's properties, which the old table lacked, are set on the rewritten one.
    assert upkeep.properties(cfg.upkeep).items() <= target.metadata().configuration.items()
    assert target.transaction_version(sinks.APP_ID) == 7
    got = sorted(
        (r["member_id"], r["to_date"], r["open_bucket"])
        for r in target.to_pyarrow_table().to_pylist()
    )
    assert got == [
        ("m1", dt.date(2026, 11, 20), None),
        ("m2", None, tables.group_bucket("g")),
        ("m3", None, tables.group_bucket("日本-é")),
    ]
    version = target.version()
    sinks.ensure_tables(spark, cfg)
    assert DeltaTable(path).version() == version


def test_lag_history_made_unpartitioned_is_rewritten_by_group_bucket(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    """``lag_history`` as groupwatch wrote it before it was partitioned by a hash of the group:
    one rewrite at start, every row kept, ``group_bucket`` filled by Spark as the job's poll
    computes it in Python (``tables.group_bucket``), so that a group's rows written before and
    after the rewrite are in the same partition; a second start does nothing."""
    import datetime as dt

    from deltalake import DeltaTable

    cfg = config.load(None, env={}, overrides=[f"delta.root={tmp_path / 'delta'}"])
    table = tables.LAG_HISTORY
    path = cfg.table_path(table.name)
    old = [c for c in table.columns if c.name != "group_bucket"]
    at = dt.datetime(2026, 11, 20, 23, 30, tzinfo=dt.UTC)
    names = ["billing", "orders-etl", "g00042", "", "consumer-ü-组", "a" * 300]
    names += [f"group-{i}" for i in range(40)]
    rows = [(n, "t", at, 1, 5, 1.5, "ok") for n in names]
    spark.createDataFrame(rows, ", ".join(f"`{c.name}` {c.ddl}" for c in old)).write.format(
        "delta"
    ).save(path)
    sinks.ensure_tables(spark, cfg)
    target = DeltaTable(path)
    assert target.metadata().partition_columns == ["group_bucket"]
    got = {r["group"]: r["group_bucket"] for r in target.to_pyarrow_table().to_pylist()}
    assert got == {n: tables.group_bucket(n) for n in names}
    assert len(set(got.values())) > 8  # the names spread over the buckets
    version = target.version()
    sinks.ensure_tables(spark, cfg)
    assert DeltaTable(path).version() == version
