"""A local table's newest commits read from their log files (``deltalog.newest_notes``) against
delta-rs's own history of the same real table: commits with and without notes, by the job's
writers and by upkeep's, before and after the log is cut back to a checkpoint."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import CommitProperties, DeltaTable, write_deltalake

from groupwatch import upkeep
from groupwatch.delta import log as deltalog


def _history(path: Path, count: int) -> list[tuple[int, str | None]]:
    return [
        (int(e["version"]), e.get("userMetadata")) for e in DeltaTable(str(path)).history(count)
    ]


def _append(path: Path, k: int, note: str | None) -> None:
    props = CommitProperties(custom_metadata={"userMetadata": note}) if note is not None else None
    write_deltalake(path, pa.table({"k": [k]}), mode="append", commit_properties=props)


def test_the_newest_notes_are_those_of_the_tables_history(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for k in range(12):
        # Notes, no notes, a note with quotes and a line break, and upkeep's.
        note = [f"batch {k}", None, 'a "quoted"\nnote', upkeep._note().custom_metadata][k % 4]
        if isinstance(note, dict):
            note = note.get("userMetadata")
        _append(path, k, note)
    for count in (1, 3, 5, 12, 20):
        assert deltalog.newest_notes(path, count) == _history(path, count)
    assert [v for v, _ in deltalog.newest_notes(path, 3)] == [11, 10, 9]

    # The log cut back to a checkpoint: the newest commits are still read, none older than
    # the files kept is made up.
    table = DeltaTable(str(path))
    table.create_checkpoint()
    _append(path, 12, "after the checkpoint")
    log = path / "_delta_log"
    for old in sorted(log.glob("0000000000000000000[0-4].json")):
        old.unlink()
    notes = deltalog.newest_notes(path, 20)
    assert notes[0] == (12, "after the checkpoint")
    assert [v for v, _ in notes] == list(range(12, 4, -1))
    assert notes == _history(path, 20)[: len(notes)]
