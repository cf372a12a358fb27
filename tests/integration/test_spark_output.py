"""The Python stage's typed output: every table's rows survive Arrow and Spark unchanged."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from groupwatch import tables
from groupwatch.spark import output, writes
from tests.scenario_groups import run_group, scenario_records

pytestmark = pytest.mark.spark

NOW = dt.datetime(2026, 1, 1, 12, 30, tzinfo=dt.UTC)


def _rows(name: str) -> dict[str, list[Any]]:
    """Rows of every table for one library scenario, as the worker has them."""
    records, _ = scenario_records(name)
    result = run_group("g", records, NOW)
    state = tables.StateRow(
        group="g",
        state="{}",
        last_event_time=NOW,
        deleted=False,
        pending_until=NOW,
        pending_partition=3,
    )
    return {**result.rows, tables.GROUP_STATE.name: [state]}


@pytest.mark.parametrize(
    ("scenario", "batch_rows"),
    [
        ("incidents/kafka_7026.json", output.BATCH_ROWS),
        ("kinds/decode_error.json", output.BATCH_ROWS),
        # Small Arrow batches: a table's rows spread over several, still in order.
        ("incidents/kafka_7026.json", 3),
    ],
)
def test_rows_survive_arrow_and_spark(  # type: ignore[no-untyped-def]
    spark, monkeypatch: pytest.MonkeyPatch, scenario: str, batch_rows: int
) -> None:
    monkeypatch.setattr(output, "BATCH_ROWS", batch_rows)
    rows = _rows(scenario)
    schema = output.output_schema(spark)
    table = output.to_arrow("g", rows, output.arrow_schema(schema))
    # At least one table of each kind the job writes, and rows that carry raw bytes.
    assert {"group_snapshots", "member_assignments", "partition_ownership"} <= set(rows)
    # No Arrow batch holds more than BATCH_ROWS table rows, and each output row holds the rows
    # of the one table it names.
    for batch in table.to_batches():
        held = 0
        for row in batch.to_pylist():
            assert [n for n in rows if row[n] is not None] == [row["tbl"]]
            assert row["grp"] == "g"
            held += len(row[row["tbl"]])
        assert 0 < held <= batch_rows
    assert len(table.to_batches()) >= -(-sum(len(r) for r in rows.values()) // batch_rows)

    frame = spark.createDataFrame(table, schema=schema)
    for name, expected in rows.items():
        spec = tables.TABLES[name]
        columns = [c.name for c in output.struct_columns(spec)]
        # Arrow keeps every declared column's value as the worker produced it, in order.
        got = output.table_column(table, spec).to_pylist()
        assert got == [{c: getattr(row, c) for c in columns} for row in expected]
        # Spark reads the rows back with the table's declared types and values, in order.
        read = writes.table_rows(frame, spec)
        back = read.collect()
        assert len(back) == len(expected)
        declared = {c.name: c.ddl for c in output.struct_columns(spec)}
        assert {f.name: f.dataType.simpleString() for f in read.schema.fields} == {
            k: spark.createDataFrame([], f"x {v}").schema["x"].dataType.simpleString()
            for k, v in declared.items()
        }
        for got_row, want in zip(back, expected, strict=True):
            for column in columns:
                value = got_row[column]
                if isinstance(value, dt.datetime):
                    # PySpark hands timestamps back naive, in the machine's local time.
                    value = value.astimezone(dt.UTC)
                if hasattr(value, "asDict"):
                    value = value.asDict(recursive=True)
                elif isinstance(value, list):
                    value = [v.asDict(recursive=True) if hasattr(v, "asDict") else v for v in value]
                assert value == getattr(want, column), (name, column)
