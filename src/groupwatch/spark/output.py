"""The Python stage's output: one Arrow table of typed rows for every table a group feeds.

Each output row carries one table's rows: ``tbl`` names the table and the column of that name
holds them as an array of structs of the table's declared columns (the other tables' arrays
are null); Spark takes them apart with ``inline``.  Typed structs cross from Python to the JVM
as Arrow; no JSON is written in Python and parsed back in Spark, which on a backlog of
50-member groups (half a million member rows) cost more than the analysis itself.

An array per table, not a struct per row: a null struct still fills every column of its table
in Arrow, so a row of one table carried the other five tables' 75 columns as nulls, about a
kilobyte a row.  The cluster model's start-up returned 2 GB from Python for 1.9 million rows
this way, most of them ownership intervals of a hundred bytes (bench/HISTORY.md, "Start-up:
the first commits by position, a key's form once per prefix, arrays per table").  A
group's rows of one table now travel as one array value, in output rows of at most
:data:`BATCH_ROWS` table rows.
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
    tables.SHARE_PARTITION_STATE,
    tables.SHARE_PARTITION_HISTORY,
)
#: Table rows per Arrow batch of the output (and so per array value): a binary column of one
#: Arrow array holds at most 2 GB, and a long backlog of a group's bad records carries each
#: record's value on its quarantine row.
BATCH_ROWS = 2048
#: Filled in by the JVM, not by Python.
_JVM_COLUMNS = {tables.GROUP_STATE.name: ("batch_id",)}


def struct_columns(table: tables.Table) -> tuple[tables.Column, ...]:
    """The table's columns that travel inside its struct."""
    skip = set(_JVM_COLUMNS.get(table.name, ()))
    return tuple(c for c in table.columns if c.name not in skip)


def output_ddl() -> str:
    """The Spark schema of the Python stage's output."""
    arrays = [
        f"`{t.name}` array<struct<"
        + ", ".join(f"`{c.name}`: {c.ddl}" for c in struct_columns(t))
        + ">>"
        for t in OUTPUT_TABLES
    ]
    return ", ".join(["tbl string", "grp string", *arrays])


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
    pieces: list[tuple[tables.Table, Sequence[tables.Row]]] = []
    held = 0
    for table in OUTPUT_TABLES:
        every = rows.get(table.name) or ()
        for start in range(0, len(every), BATCH_ROWS):
            piece = every[start : start + BATCH_ROWS]
            if held + len(piece) > BATCH_ROWS:
                batches.append(_batch(group, pieces, schema))
                pieces, held = [], 0
            pieces.append((table, piece))
            held += len(piece)
    if pieces:
        batches.append(_batch(group, pieces, schema))
    return pa.Table.from_batches(batches, schema=schema)


def _batch(
    group: str,
    pieces: Sequence[tuple[tables.Table, Sequence[tables.Row]]],
    schema: pa.Schema,
) -> pa.RecordBatch:
    """One Arrow batch, an output row per piece (a table and some of its rows, at most one
    piece of each table): each table's column an array value on its piece's row, null on the
    others.

    A table's struct is built column by column from the rows' fields (one Arrow conversion per
    column rather than one per row and field).
    """
    import pyarrow as pa

    n = len(pieces)
    columns: list[pa.Array] = [
        pa.array([table.name for table, _ in pieces], pa.string()),
        pa.array([group] * n, pa.string()),
    ]
    for other in OUTPUT_TABLES:
        kind = schema.field(other.name).type
        at = [i for i, (table, _) in enumerate(pieces) if table is other]
        if not at:
            columns.append(pa.nulls(n, kind))
            continue
        (i,) = at
        table_rows = pieces[i][1]
        struct_type = kind.value_type
        values = zip(*map(_columns_of(other), table_rows), strict=True)
        fields = [struct_type.field(k) for k in range(struct_type.num_fields)]
        arrays = [pa.array(list(v), f.type) for v, f in zip(values, fields, strict=True)]
        struct = pa.StructArray.from_arrays(arrays, fields=fields)
        offsets = pa.array([0] * (i + 1) + [len(table_rows)] * (n - i), pa.int32())
        mask = pa.array([k != i for k in range(n)], pa.bool_())
        columns.append(pa.ListArray.from_arrays(offsets, struct, type=kind, mask=mask))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def table_column(out: pa.Table, table: tables.Table) -> pa.StructArray:
    """A table's rows of an output on the driver, as one struct array."""
    import pyarrow as pa

    lists = out.column(table.name)
    if lists.num_chunks == 0:
        return pa.array([], lists.type.value_type)
    return lists.combine_chunks().flatten()


def column_lists(table: pa.Table, names: Iterable[str]) -> list[list[Any]]:
    """Columns of an Arrow table as Python lists (cheaper than going through pandas)."""
    return [table.column(name).to_pylist() for name in names]
