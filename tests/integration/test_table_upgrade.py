"""A table written by an older groupwatch gains the columns added since, keeping its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import config, tables
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
