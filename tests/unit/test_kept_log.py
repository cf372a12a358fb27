"""The dashboard's reader keeps each table's log as loaded and reads it forward by the commits
the job adds, not from its checkpoint again at every version: what it lists and reads stays what
a load from scratch gives, through compaction, VACUUM, the log cut back to a checkpoint, and a
table deleted and written again.  Real Delta tables written by the job's driver writer."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import DeltaTable, write_deltalake

from groupwatch import tables, upkeep
from groupwatch.config import UpkeepConfig
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite

APP = "groupwatch-job"
SETTINGS = UpkeepConfig(
    every_n_batches=5,
    checkpoint_interval=10,
    log_retention_hours=12,
    deleted_file_retention_hours=0,
)
TABLE = tables.MEMBER_ASSIGNMENTS
GROUPS = [f"g{i}" for i in range(7)]


def _create(path: Path) -> None:
    write_deltalake(
        str(path),
        deltaread.schema(TABLE.name).empty_table(),
        partition_by=list(TABLE.partition_by) or None,
        configuration=upkeep.properties(SETTINGS),
    )


def _batch(path: Path, batch: int) -> None:
    rows = [
        {"group": GROUPS[(batch + i) % len(GROUPS)], "generation": batch, "member_id": f"m{i}",
         "source_offset": batch, "source_partition": i,
         "snapshot_date": f"2026-11-{20 + batch % 3}"}
        for i in range(3)
    ]  # fmt: skip
    names = TABLE.column_names
    arrow = pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows])
    arrow = arrow.cast(deltaread.schema(TABLE.name))
    assert deltawrite.append_once(path, TABLE, arrow, APP, batch)


def _age_log(path: Path, hours: float, but: int | None = None) -> None:
    """The log's entries made ``hours`` older, but for commit ``but``'s."""
    log_dir = path / "_delta_log"
    for name in os.listdir(log_dir):
        if but is not None and name == f"{but:020}.json":
            continue
        stamp = (log_dir / name).stat().st_mtime - hours * 3600
        os.utime(log_dir / name, (stamp, stamp))


def _rows(frame: Any) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in frame.to_dict("records"))


def _same_as_a_fresh_load(store: deltaread.DeltaStore, root: Path, counted: type) -> None:
    """What ``store`` lists and reads equals what a store loading from scratch does; only
    ``store``'s loads go through ``counted``."""
    fresh = deltaread.DeltaStore(root)
    fresh_listing = fresh.files(TABLE.name)
    fresh_rows = _rows(fresh.read(TABLE.name))
    fresh_groups = [_rows(fresh.read_rows(TABLE.name, "group", g)) for g in ("g1", "g4")]
    deltaread.DeltaTable = counted
    try:
        kept_listing = store.files(TABLE.name)
        kept_rows = _rows(store.read(TABLE.name))
        kept_groups = [_rows(store.read_rows(TABLE.name, "group", g)) for g in ("g1", "g4")]
    finally:
        deltaread.DeltaTable = DeltaTable
    assert kept_listing is not None and fresh_listing is not None
    assert kept_listing[0] == fresh_listing[0] == DeltaTable(str(root / TABLE.name)).version()
    assert sorted(kept_listing[1], key=str) == sorted(fresh_listing[1], key=str)
    assert kept_rows == fresh_rows
    assert kept_groups == fresh_groups


def test_a_tables_log_is_read_forward_with_what_a_fresh_load_gives(tmp_path: Path) -> None:
    loads: list[str] = []

    class Counted(DeltaTable):  # type: ignore[misc]
        def __init__(self, uri: str, *args: Any, **kwargs: Any) -> None:
            loads.append(uri)
            super().__init__(uri, *args, **kwargs)

    path = tmp_path / TABLE.name
    _create(path)
    store = deltaread.DeltaStore(tmp_path)
    compacted = 0
    for batch in range(32):
        _batch(path, batch)
        if batch % SETTINGS.every_n_batches == SETTINGS.every_n_batches - 1:
            # Half a day between turns, the store's last read a moment ago: the turn
            # compacts, vacuums and cuts the log back to its newest checkpoint, under the
            # kept log's feet.
            _age_log(path, 13, but=DeltaTable(str(path)).version() - 1)
            compacted += upkeep.tidy(path, TABLE, SETTINGS, None).compacted
        _same_as_a_fresh_load(store, tmp_path, Counted)
    assert compacted > 0
    assert not (path / "_delta_log" / f"{0:020}.json").exists()  # the log was cut back
    assert loads == [str(path)]  # one load; every version after it read forward

    # Read last before the log's retention: the commit it read is gone, loaded from scratch.
    _batch(path, 32)
    _age_log(path, 13)
    upkeep.tidy(path, TABLE, SETTINGS, None)
    _batch(path, 33)
    _same_as_a_fresh_load(store, tmp_path, Counted)
    assert loads == [str(path)] * 2

    # Deleted and written again, to a version past the one kept: loaded from scratch.
    kept = DeltaTable(str(path)).version()
    shutil.rmtree(path)
    _create(path)
    for batch in range(70):
        _batch(path, batch)
    assert DeltaTable(str(path)).version() > kept
    _same_as_a_fresh_load(store, tmp_path, Counted)
    assert loads == [str(path)] * 3
