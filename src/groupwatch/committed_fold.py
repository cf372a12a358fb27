"""Several batches' newest commits as one MERGE source: what ``committed_offsets`` holds after
MERGEing each batch's rows in turn, computed from the rows alone.

A batch's MERGE (``groupwatch.spark.committed``) treats each partition's row of the batch, ``s``,
against the table's row, ``t``:

- ``s`` a tombstone: ``t`` is deleted (nothing happens if there is none);
- otherwise ``t`` takes ``s``'s values, but keeps its ``moved_time`` when the offset did not
  change within the batch (``s.changes = 0``) and equals ``t``'s, and adds ``s.commits`` to its
  ``commits``; without ``t``, ``s`` is inserted.

A live job defers that MERGE (it rewrites the whole table for a few thousand rows): batches
append their rows to ``committed_changes``, and :func:`fold` turns the rows of any run of
batches into one row per partition whose single MERGE, by :data:`FOLD_UPDATE`, leaves the
table as the batches' MERGEs one after the other would.  The folded row carries ``replace``:
true when the partition's row was deleted by one of the batches and made again by a later
one, so that the table's ``commits`` and ``moved_time`` from before do not count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

#: A partition's key.
Key = tuple[str, str, int]

#: The columns of a batch's row (and of ``committed_changes`` beside ``batch_id``).
VALUES = (
    "committed_offset",
    "leader_epoch",
    "metadata_size",
    "commit_time",
    "moved_time",
)


@dataclass(frozen=True, slots=True)
class Change:
    """One partition's row of one batch (or of several, folded)."""

    tombstone: bool
    values: tuple[Any, ...]
    changes: int
    commits: int
    replace: bool = False

    @property
    def offset(self) -> Any:
        return self.values[0]

    @property
    def moved(self) -> Any:
        return self.values[4]


def then(a: Change, b: Change) -> Change:
    """The row whose MERGE does what ``a``'s then ``b``'s do, for any table row."""
    if b.tombstone:
        # Whatever came before, the row is gone (or was never there).
        return b
    if a.tombstone:
        # Gone, then inserted anew by ``b``: the table's old values must not count.
        return replace(b, replace=True)
    if b.changes == 0 and b.offset is not None and b.offset == a.offset:
        # ``b`` keeps the moved time ``a`` left, which is the table's exactly when ``a``'s
        # condition held: the folded row carries ``a``'s moved time and condition.
        moved, changes = a.moved, a.changes
    else:
        # ``b``'s moved time, whatever the table holds: a change count that no table row can
        # meet keeps it (``b`` may equal the table's offset, moved away from and back to).
        moved, changes = b.moved, max(b.changes, 1)
    return Change(
        tombstone=False,
        values=(*b.values[:4], moved),
        changes=changes,
        commits=a.commits + b.commits,
        replace=a.replace,
    )


def merged(t: Mapping[str, Any] | None, s: Change) -> dict[str, Any] | None:
    """The table's row after the MERGE of ``s`` by :data:`FOLD_UPDATE` (None: no row): the
    rules as plain Python, for the tests and the reader who wants them in one place."""
    if s.tombstone:
        return None
    row = dict(zip(VALUES, s.values, strict=True))
    if t is None or s.replace:
        row["commits"] = s.commits
        return row
    keep = s.changes == 0 and s.offset is not None and s.offset == t["committed_offset"]
    if keep:
        row["moved_time"] = t["moved_time"]
    row["commits"] = t["commits"] + s.commits
    return row


#: The MERGE of a folded source (SQL over ``t``, the table, and ``s``, :func:`fold`'s rows):
#: a batch's own MERGE with ``replace`` honoured.
FOLD_UPDATE = {
    "committed_offset": "s.committed_offset",
    "leader_epoch": "s.leader_epoch",
    "metadata_size": "s.metadata_size",
    "commit_time": "s.commit_time",
    "moved_time": "CASE WHEN NOT s.replace AND s.changes = 0 "
    "AND s.committed_offset = t.committed_offset THEN t.moved_time ELSE s.moved_time END",
    "commits": "CASE WHEN s.replace THEN s.commits ELSE t.commits + s.commits END",
}


def changes_of(rows: pa.Table) -> Iterator[tuple[int, Key, Change]]:
    """``committed_changes`` rows as (batch, key, change), in the table's order."""
    columns = {
        name: rows.column(name).to_pylist()
        for name in ("batch_id", "group", "topic", "partition", "tombstone", "changes", "commits")
    }
    values = [rows.column(name).to_pylist() for name in VALUES]
    for i, batch in enumerate(columns["batch_id"]):
        yield (
            batch,
            (columns["group"][i], columns["topic"][i], columns["partition"][i]),
            Change(
                tombstone=bool(columns["tombstone"][i]),
                values=tuple(v[i] for v in values),
                changes=int(columns["changes"][i] or 0),
                commits=int(columns["commits"][i] or 0),
            ),
        )


def fold(rows: pa.Table) -> pa.Table:
    """One row per partition of ``rows`` (``committed_changes``' columns, any batches, any
    order; a batch holds one row per partition), folded in batch order by :func:`then`, with
    the columns a batch's MERGE source has and ``replace``."""
    ordered = sorted(changes_of(rows), key=lambda r: r[0])
    folded: dict[Key, Change] = {}
    for _, key, change in ordered:
        before = folded.get(key)
        folded[key] = change if before is None else then(before, change)
    out: dict[str, list[Any]] = {
        name: []
        for name in ("group", "topic", "partition", "tombstone", *VALUES, "changes", "commits")
    }
    out["replace"] = []
    for (group, topic, partition), change in folded.items():
        out["group"].append(group)
        out["topic"].append(topic)
        out["partition"].append(partition)
        out["tombstone"].append(change.tombstone)
        for name, value in zip(VALUES, change.values, strict=True):
            out[name].append(value)
        out["changes"].append(change.changes)
        out["commits"].append(change.commits)
        out["replace"].append(change.replace)
    schema = rows.schema
    fields = [schema.field(n) for n in out if n != "replace"] + [pa.field("replace", pa.bool_())]
    return pa.table({n: pa.array(v, f.type) for (n, v), f in zip(out.items(), fields, strict=True)})
