"""The Python stage's output: one Arrow table of typed rows for every table a group feeds.

Each output row is one table's row: ``tbl`` names the table and the column of that name holds
the row as a struct of the table's declared columns (the other tables' columns are null).
Typed structs cross from Python to the JVM as Arrow and are selected with ``<table>.*``; no
JSON is written in Python and parsed back in Spark, which on a backlog of 50-member groups
(half a million member rows) cost more than the analysis itself.

The raw key and value of the source record travel beside the struct, not inside it, and only
on quarantine rows, the one table that stores them. (A snapshot row that fails validation is
quarantined with bytes the JVM still holds: shipping every record's value back out of Python
would double the stage's Arrow traffic.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupwatch import tables

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

#: The tables whose rows come out of the Python stage, in output-column order.
OUTPUT_TABLES: tuple[tables.Table, ...] = (
    tables.GROUP_SNAPSHOTS,
    tables.MEMBER_ASSIGNMENTS,
    tables.PARTITION_OWNERSHIP,
    tables.FINDINGS,
    tables.QUARANTINE,
    tables.GROUP_STATE,
)
#: Columns beside the structs.
RAW_COLUMNS = ("key", "value")
#: Rows per Arrow batch of the output.
BATCH_ROWS = 2048
#: Filled in by the JVM, not by Python.
_JVM_COLUMNS = {tables.GROUP_STATE.name: ("batch_id",)}


def struct_columns(table: tables.Table) -> tuple[tables.Column, ...]:
    """The table's columns that travel inside its struct."""
    skip = set(RAW_COLUMNS) | set(_JVM_COLUMNS.get(table.name, ()))
    return tuple(c for c in table.columns if c.name not in skip)


def output_ddl() -> str:
    """The Spark schema of the Python stage's output."""
    structs = [
        f"`{t.name}` struct<" + ", ".join(f"`{c.name}`: {c.ddl}" for c in struct_columns(t)) + ">"
        for t in OUTPUT_TABLES
    ]
    return ", ".join(["tbl string", "grp string", "key binary", "value binary", *structs])


def output_schema(spark: SparkSession) -> StructType:
    """The output schema parsed by Spark (driver side)."""
    return spark.createDataFrame([], output_ddl()).schema


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow form of :func:`output_schema`, as Spark's Arrow serializer expects it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def to_arrow(
    group: str, rows: Mapping[str, Sequence[dict[str, Any]]], schema: pa.Schema
) -> pa.Table:
    """One group's rows per table as one Arrow table in the output schema.

    Row dicts may hold keys that are not columns (ignored) and miss nullable ones (null).
    """
    import pyarrow as pa

    batches = []
    for table in OUTPUT_TABLES:
        every = rows.get(table.name) or ()
        # Bounded batches: a binary column of one Arrow array holds at most 2 GB, and a long
        # backlog of a group's bad records carries each record's value on its quarantine row.
        for start in range(0, len(every), BATCH_ROWS):
            table_rows = every[start : start + BATCH_ROWS]
            batches.append(_batch(table, group, table_rows, schema))
    return pa.Table.from_batches(batches, schema=schema)


def _batch(
    table: tables.Table,
    group: str,
    table_rows: Sequence[dict[str, Any]],
    schema: pa.Schema,
) -> pa.RecordBatch:
    """One Arrow batch of ``table``'s rows: its struct filled, the other tables' null."""
    import pyarrow as pa

    n = len(table_rows)
    columns: list[pa.Array] = [
        pa.array([table.name] * n, pa.string()),
        pa.array([group] * n, pa.string()),
        *(pa.array([r.get(c) for r in table_rows], pa.binary()) for c in RAW_COLUMNS),
    ]
    for other in OUTPUT_TABLES:
        kind = schema.field(other.name).type
        if other is table:
            columns.append(pa.array(table_rows, kind))
        else:
            columns.append(pa.nulls(n, kind))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def column_lists(table: pa.Table, names: Iterable[str]) -> list[list[Any]]:
    """Columns of an Arrow table as Python lists (cheaper than going through pandas)."""
    return [table.column(name).to_pylist() for name in names]
