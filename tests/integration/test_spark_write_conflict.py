"""A Spark MERGE of the job's that loses its commit race to an analyst's OPTIMIZE is run again,
not fatal: the large batches' writer, as ``tests/unit/test_upkeep.py`` holds the driver's.

The OPTIMIZE is committed inside the MERGE's window on purpose: the MERGE's source goes
through a Python function that, the first time it is called, tells the test it has started
(the MERGE's transaction has read the table's snapshot by then) and waits until the test has
compacted the table with delta-rs. The MERGE then commits over a table that changed under
it, Delta refuses it (``ConcurrentAppendException``: "a concurrent OPTIMIZE added data ... that
should have been read by this operation"), and ``sinks.run_once`` runs it again. With
``sinks.is_conflict`` blind to it, the test fails on that exception.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from groupwatch.spark import sinks

pytestmark = [pytest.mark.spark]

APP = "groupwatch-job"


def _held_until(started: Path, go: Path) -> Any:
    """A function of a key that, the first time a worker calls it, marks ``started`` and waits
    for ``go``; after that, the key as it is."""

    def hold(key: int) -> int:
        if not go.exists():
            started.touch()
            deadline = time.monotonic() + 120
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return key

    return hold


def test_a_spark_merge_that_loses_to_a_concurrent_optimize_is_run_again(
    spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    path = tmp_path / "table"
    for k in range(4):  # four small files: something for OPTIMIZE to compact
        write_deltalake(str(path), pa.table({"k": [k], "v": [k]}), mode="append")
    started, go = tmp_path / "merging", tmp_path / "optimized"
    held = F.udf(_held_until(started, go), "long")
    source = spark.createDataFrame([(k, 100 + k) for k in range(2, 6)], "k long, v long").select(
        held("k").alias("k"), "v"
    )
    compacted: list[int] = []

    def analyst() -> None:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        compacted.append(int(RsTable(str(path)).optimize.compact()["numFilesRemoved"]))
        go.touch()

    def merge() -> None:
        (
            DeltaTable.forPath(spark, str(path))
            .alias("t")
            .merge(source.alias("s"), "t.k = s.k")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    racer = threading.Thread(target=analyst)
    racer.start()
    caplog.set_level(logging.WARNING, logger="groupwatch.job")
    try:
        sinks.run_once(spark, merge, APP, 7)
    finally:
        go.touch()  # never leave the function waiting, whatever happened
        racer.join()

    assert compacted == [4], compacted
    lost = [r.getMessage() for r in caplog.records if "lost a commit race" in r.getMessage()]
    assert len(lost) == 1 and "attempt 1" in lost[0], lost
    table = RsTable(str(path))
    rows = sorted((r["k"], r["v"]) for r in table.to_pyarrow_table().to_pylist())
    assert rows == [(0, 0), (1, 1), (2, 102), (3, 103), (4, 104), (5, 105)]
    assert table.transaction_version(APP) == 7
    operations = [h["operation"] for h in reversed(table.history())]
    assert operations[-2:] == ["OPTIMIZE", "MERGE"], operations


def test_a_write_that_fails_otherwise_is_not_run_again(spark: Any, tmp_path: Path) -> None:
    """Only a lost race is retried: any other failure of a write ends it at once."""
    calls = [0]

    def broken() -> None:
        calls[0] += 1
        spark.sql(f"SELECT * FROM delta.`{tmp_path / 'missing'}`").collect()

    with pytest.raises(Exception, match="(?i)not a delta table|path does not exist"):
        sinks.run_once(spark, broken, APP, 1)
    assert calls == [1]
