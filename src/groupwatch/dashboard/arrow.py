"""Spark DDL types from ``tables.py`` as Arrow types, so delta-rs readers and writers agree
with the tables Spark writes (timestamps are microseconds in UTC, as Delta stores them)."""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]

from groupwatch.tables import TABLES

_SCALARS: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "binary": pa.binary(),
}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside ``<...>``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def arrow_type(ddl: str) -> pa.DataType:
    """The Arrow type of one Spark DDL type, e.g. ``array<struct<topic: string>>``."""
    ddl = ddl.strip()
    lowered = ddl.lower()
    if lowered in _SCALARS:
        return _SCALARS[lowered]
    if lowered.startswith("array<") and ddl.endswith(">"):
        return pa.list_(arrow_type(ddl[6:-1]))
    if lowered.startswith("struct<") and ddl.endswith(">"):
        fields = []
        for part in _split_top(ddl[7:-1]):
            name, _, inner = part.partition(":")
            fields.append(pa.field(name.strip().strip("`"), arrow_type(inner)))
        return pa.struct(fields)
    raise ValueError(f"unsupported Spark DDL type {ddl!r}")


def schema(table: str) -> pa.Schema:
    """The Arrow schema of one table declared in ``groupwatch.tables``."""
    return pa.schema([pa.field(c.name, arrow_type(c.ddl)) for c in TABLES[table].columns])
