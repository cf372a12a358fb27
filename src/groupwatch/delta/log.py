"""A local Delta table's newest commits read from their log files, without loading the table.

A table's snapshot (what ``DeltaTable(path)`` loads, and its ``history``) replays the log from
its newest checkpoint: 0.1-0.2 s for a table the job MERGEs every batch.  What a batch wants of
``group_offsets``' log is the note of its few newest commits, which are the newest commit files
themselves: one listing of ``_delta_log`` and a read of a few small JSON files.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

#: A commit's file: its version, zero-padded to 20 digits (checkpoints, checksums and
#: temporary files have other names).
_COMMIT = re.compile(r"^(\d{20})\.json$")


def newest_notes(path: Path, count: int) -> list[tuple[int, str | None]]:
    """(version, ``userMetadata``) of the table's ``count`` newest commits, newest first
    (None: a commit without a note).  The commit files are the log's own: a version whose
    file log retention removed is never among the newest."""
    versions = sorted(
        (int(m.group(1)) for m in map(_COMMIT.match, os.listdir(path / "_delta_log")) if m),
        reverse=True,
    )
    return [(v, _note(path / "_delta_log" / f"{v:020}.json")) for v in versions[:count]]


def _note(commit: Path) -> str | None:
    with commit.open(encoding="utf-8") as lines:
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            info = action.get("commitInfo")
            if info is not None:
                note = info.get("userMetadata")
                return note if isinstance(note, str) else None
    return None
