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

import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
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


@functools.cache
def _columns_of(table: tables.Table) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving a row's struct columns as a tuple, in the struct's order."""
    names = [c.name for c in struct_columns(table)]
    if len(names) == 1:
        get = operator.attrgetter(names[0])
        return lambda row: (get(row),)
    return operator.attrgetter(*names)


def to_arrow(group: str, rows: Mapping[str, Sequence[tables.Row]], schema: pa.Schema) -> pa.Table:
    """One group's rows per table (name -> rows of that table's row type) as one Arrow table
    in the output schema."""
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
    table_rows: Sequence[tables.Row],
    schema: pa.Schema,
) -> pa.RecordBatch:
    """One Arrow batch of ``table``'s rows: its struct filled, the other tables' null.

    Built column by column from the rows' fields (one Arrow conversion per column rather than
    one per row and field).
    """
    import pyarrow as pa

    n = len(table_rows)
    columns: list[pa.Array] = [
        pa.array([table.name] * n, pa.string()),
        pa.array([group] * n, pa.string()),
        *(pa.array([getattr(r, c, None) for r in table_rows], pa.binary()) for c in RAW_COLUMNS),
    ]
    for other in OUTPUT_TABLES:
        kind = schema.field(other.name).type
        if other is not table:
            columns.append(pa.nulls(n, kind))
            continue
        values = zip(*map(_columns_of(table), table_rows), strict=True)
        fields = [kind.field(i) for i in range(kind.num_fields)]
        arrays = [pa.array(list(v), f.type) for v, f in zip(values, fields, strict=True)]
        columns.append(pa.StructArray.from_arrays(arrays, fields=fields))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def column_lists(table: pa.Table, names: Iterable[str]) -> list[list[Any]]:
    """Columns of an Arrow table as Python lists (cheaper than going through pandas)."""
    return [table.column(name).to_pylist() for name in names]
