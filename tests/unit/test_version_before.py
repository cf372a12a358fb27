"""``group_offsets`` as it was before a batch's own MERGE, found in the table's log by the
MERGE's note (``offsets.version_before``), read from the driver: on a real table written by
the job's driver writer, with upkeep's commits after the MERGE and a batch whose MERGE has not
run yet (a replay's and a first run's cases)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import DeltaTable, write_deltalake

from groupwatch import config as config_mod
from groupwatch import tables, upkeep
from groupwatch.delta import read as deltaread
from groupwatch.delta import write as deltawrite
from groupwatch.spark import offsets, sinks

ROOT = Path(__file__).resolve().parents[2]
TABLE = tables.GROUP_OFFSETS


def _config(root: Path) -> config_mod.Config:
    return config_mod.load(ROOT / "conf" / "local.toml", env={}, overrides=[f"delta.root={root}"])


def _merge(path: Path, batch_id: int, topic: str) -> None:
    rows = pa.table(
        {
            "group": ["g"],
            "topic": [topic],
            "max_partition": pa.array([batch_id], pa.int32()),
            "commits": pa.array([1], pa.int64()),
            "last_commit_time": pa.array(
                [dt.datetime(2026, 11, 29, 9, batch_id, tzinfo=dt.UTC)], pa.timestamp("us", "UTC")
            ),
        }
    )
    deltawrite.merge_once(
        path,
        TABLE,
        rows,
        sinks.APP_ID,
        batch_id,
        on=("group", "topic"),
        update={"max_partition": "s.max_partition"},
        null_safe=False,
        note=offsets.batch_note(batch_id),
    )


def _vacuum(path: Path) -> None:
    """Upkeep's VACUUM (two commits, START and END, changing no row) of the files the MERGEs
    replaced."""
    removed = DeltaTable(str(path)).vacuum(
        retention_hours=0,
        enforce_retention_duration=False,
        dry_run=False,
        commit_properties=upkeep._note(),
    )
    assert removed


def test_the_version_before_a_batchs_merge(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    path = Path(cfg.table_path(TABLE.name))
    write_deltalake(str(path), deltaread.schema(TABLE.name).empty_table())  # version 0
    _merge(path, 3, "a")  # 1
    _merge(path, 4, "a")  # 2: the row rewritten
    # A replay of batch 4 reads the table before its own MERGE; batch 5 (not merged yet) the
    # newest version.
    assert offsets.version_before(None, cfg, 4) == 1  # type: ignore[arg-type]
    assert offsets.version_before(None, cfg, 5) == 2  # type: ignore[arg-type]
    _vacuum(path)  # 3 and 4
    assert DeltaTable(str(path)).version() == 4
    # Upkeep's commits after the MERGE are looked past.
    assert offsets.version_before(None, cfg, 4) == 1  # type: ignore[arg-type]
    assert offsets.version_before(None, cfg, 5) == 4  # type: ignore[arg-type]
    _merge(path, 5, "c")  # 5
    assert offsets.version_before(None, cfg, 5) == 4  # type: ignore[arg-type]
    # The version found holds what the earlier batches merged and not this batch's rows.
    before = DeltaTable(str(path), version=offsets.version_before(None, cfg, 5))  # type: ignore[arg-type]
    rows = before.to_pyarrow_table().to_pylist()
    assert [(r["topic"], r["max_partition"]) for r in rows] == [("a", 4)]


def test_the_newest_commits_decide() -> None:
    note, work = offsets.batch_note, upkeep.UPKEEP_NOTE
    assert offsets.before_note([(7, note(2)), (8, work), (9, work)], 2) == 6
    # The newest commit that is not upkeep's is an earlier batch's: this one has not merged.
    assert offsets.before_note([(7, note(1)), (8, work)], 2) == 8
    # Another writer's commits after the MERGE (an operator's OPTIMIZE, a DELETE, a note of
    # their own): looked past as upkeep's are, so a replay reads what its first attempt read.
    assert offsets.before_note([(7, note(2)), (8, None), (9, "nightly"), (10, work)], 2) == 6
    assert offsets.before_note([(7, note(1)), (8, None)], 2) == 8
    # A note that only starts as a batch's is not one.
    assert offsets.before_note([(7, note(2)), (8, note(2) + "x")], 2) == 6
    assert offsets.before_note([(0, None)], 0) == 0
