"""A job's start leaves a local table to Spark only when delta-rs's reading of its log does not
show it as declared (``groupwatch.spark.sinks._as_declared``); that Spark then adds columns,
repartitions and sets properties is ``tests/integration/test_table_upgrade.py``'s part."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import write_deltalake

from groupwatch import config, tables, upkeep
from groupwatch.delta import read as deltaread
from groupwatch.spark.sinks import _as_declared

WANTED = upkeep.properties(config.UpkeepConfig())
TABLE = tables.PARTITION_OWNERSHIP  # two partition columns


def _made(
    path: Path,
    schema: pa.Schema,
    partition_by: tuple[str, ...],
    properties: dict[str, str],
) -> Path:
    write_deltalake(
        str(path),
        schema.empty_table(),
        partition_by=list(partition_by) or None,
        configuration=properties,
    )
    return path


def test_a_table_as_declared_is_left_alone(tmp_path: Path) -> None:
    schema = deltaread.schema(TABLE.name)
    path = _made(tmp_path / "t", schema, TABLE.partition_by, WANTED)
    assert _as_declared(path, {}, TABLE, WANTED)


def test_anything_else_goes_to_spark(tmp_path: Path) -> None:
    schema = deltaread.schema(TABLE.name)
    assert not _as_declared(tmp_path / "missing", {}, TABLE, WANTED)
    fewer = schema.remove(schema.get_field_index("client_id"))
    assert not _as_declared(
        _made(tmp_path / "a", fewer, TABLE.partition_by, WANTED), {}, TABLE, WANTED
    )
    other_parts = _made(tmp_path / "b", schema, TABLE.partition_by[:1], WANTED)
    assert not _as_declared(other_parts, {}, TABLE, WANTED)
    unsplit = _made(tmp_path / "c", schema, (), WANTED)
    assert not _as_declared(unsplit, {}, TABLE, WANTED)
    older = {**WANTED, "delta.checkpointInterval": "10"}
    assert not _as_declared(
        _made(tmp_path / "d", schema, TABLE.partition_by, older), {}, TABLE, WANTED
    )
    (tmp_path / "e" / "_delta_log").mkdir(parents=True)  # a log delta-rs cannot read
    (tmp_path / "e" / "_delta_log" / "00000000000000000000.json").write_text("{not json")
    assert not _as_declared(tmp_path / "e", {}, TABLE, WANTED)
