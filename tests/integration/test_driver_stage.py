"""The Python stage of a small batch on the driver (``spark.driver_stage``): every group, with
records or state or both, run once, and its output counted and split by table on the driver
(``writes.tally_arrow``, ``writes.collect_arrow``) as Spark's job would."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from groupwatch.detect import DetectorConfig
from groupwatch.spark import driver_stage, python_stage, writes
from tests.unit.test_driver_stage import _rows

pytestmark = [pytest.mark.spark]


def _state(groups: list[str]) -> pa.Table:
    n = len(groups)
    return pa.table(
        {
            "group": pa.array(groups, pa.string()),
            "state": pa.nulls(n, pa.string()),
            "last_event_ms": pa.nulls(n, pa.int64()),
            "topic": pa.array(["t"] * n, pa.string()),
            "max_partition": pa.array([3] * n, pa.int32()),
            "last_commit_ms": pa.array([5] * n, pa.int64()),
        }
    )


def test_every_group_with_records_runs_once_and_state_alone_only_with_a_saved_state(
    spark,
) -> None:  # type: ignore[no-untyped-def]
    spark_schema, schema = python_stage.output_schemas(spark)
    # Garbage values: each record is quarantined under its group, which shows who ran.
    records, _ = driver_stage.records_of(
        _rows([("g2", 0, 1, True), ("g1", 0, 2, True), ("g2", 0, 3, True)]), []
    )
    out = driver_stage.run(
        records,
        _state(["g1", "g3"]),  # g3: offset hints but no saved state: nothing to judge
        DetectorConfig(),
        schema,
        dt.datetime(2026, 11, 29, tzinfo=dt.UTC),
        {0: 2000},
        quiescent=False,
    )
    collected = writes.collect_arrow(out)
    quarantined = collected["quarantine"]
    assert sorted(quarantined.column("group").to_pylist()) == ["g1", "g2", "g2"]
    assert sorted(collected["group_state"].column("group").to_pylist()) == ["g1", "g2"]
    tally = writes.tally_arrow(out)
    assert tally.counts["quarantine"] == 3 and tally.counts["group_state"] == 2
    assert sum(tally.quarantine.values()) == 3
    # The counts are Spark's own over the same rows.
    frame = spark.createDataFrame(out, schema=spark_schema)
    assert writes.tally(frame) == tally
