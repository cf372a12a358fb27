"""The Python stage of a small batch on the driver (``spark.driver_stage``): every group, with
records or state or both, run once, and its output counted and split by table on the driver
(``writes.tally_arrow``, ``writes.collect_arrow``) as Spark's job would."""

from __future__ import annotations

import datetime as dt
import json

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


def _batch_of(spark, raw: list[dict[str, object]]):  # type: ignore[no-untyped-def]
    """The raw records as a batch of the Kafka source, split as the job splits it."""
    import base64

    from groupwatch.spark import source

    def b(text: object) -> bytes | None:
        return None if text is None else base64.b64decode(str(text))

    rows = [
        (
            b(r["key"]),
            b(r["value"]),
            str(r["topic"]),
            int(str(r["partition"])),
            int(str(r["offset"])),
            dt.datetime.fromtimestamp(int(str(r["timestamp"])) / 1000, tz=dt.UTC),
        )
        for r in raw
    ]
    frame = spark.createDataFrame(
        rows,
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp",
    )
    return source.split(frame)


def test_a_batch_gives_the_same_state_in_the_workers_and_on_the_driver(spark) -> None:  # type: ignore[no-untyped-def]
    """A batch holding a group's generation, then its commits of three partitions and a later
    commit of one of them (``LATE_COMMIT``): the Python stage in Spark gets only some of the commits
    (``source.first_commits``, ``source.commits_before``), the driver's every one, and both
    save the same state (the group's newest commit among it)."""
    from groupwatch.spark import source
    from groupwatch_dev.scenarios.builder import raw_records
    from tests.scenarios.test_reduced_commits import LATE_COMMIT

    group = "g"
    raw = raw_records(LATE_COMMIT)
    split = _batch_of(spark, raw)
    detector = DetectorConfig(partitions_per_topic={"t": 3})
    at = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
    clocks = {int(str(raw[0]["partition"])): int(str(raw[-1]["timestamp"]))}
    hints = _state([group])  # earlier batches' commits, the same for both
    try:
        stats = source.stats(split)
        records = source.python_records(split.mine, None)
        groups = records.select("group").distinct()
        records = records.unionByName(
            source.first_commits(split.mine, groups, stats.positions_fit).select(
                *source.RECORD_COLUMNS
            )
        ).unionByName(source.commits_before(split.mine))
        spark_schema, schema = python_stage.output_schemas(spark)
        in_spark = python_stage.run(
            records,
            spark.createDataFrame(hints),
            detector,
            (spark_schema, schema),
            at,
            clocks,
            quiescent=False,
        ).toArrow()
        rows = source.driver_rows(split.mine, None).toArrow()
        on_driver = driver_stage.run(
            driver_stage.records_of(rows, [])[0], hints, detector, schema, at, clocks, False
        )
    finally:
        split.read.unpersist()

    def saved(out: pa.Table) -> list[str]:
        states = writes.collect_arrow(out)["group_state"]
        return [str(s) for s in states.column("state").to_pylist()]

    newest = int(str(raw[-1]["timestamp"]))
    assert [json.loads(s)["detect"]["stuck"]["last_commit_ms"] for s in saved(on_driver)] == [
        newest
    ]
    assert saved(in_spark) == saved(on_driver)
