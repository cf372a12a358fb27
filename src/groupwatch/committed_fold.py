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

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

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
    **{name: f"s.{name}" for name in VALUES[:4]},
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


def fold_by_values(rows: pa.Table) -> dict[Key, Change]:
    """:func:`fold` one value at a time, by :func:`then`: the rule as it reads."""
    folded: dict[Key, Change] = {}
    for _, key, change in sorted(changes_of(rows), key=lambda r: r[0]):
        before = folded.get(key)
        folded[key] = change if before is None else then(before, change)
    return folded


#: The columns :func:`fold` gives: a batch's MERGE source's, and ``replace``.
FOLDED = ("group", "topic", "partition", "tombstone", *VALUES, "changes", "commits", "replace")


def fold(rows: pa.Table) -> pa.Table:
    """One row per partition of ``rows`` (``committed_changes``' columns, any batches, any
    order; a batch holds one row per partition), as :func:`then` folds them in batch order,
    computed as columns (a poll at 4,000 commits/s folds 150,000 rows; a value per row took
    seconds).

    Folding by :func:`then` comes down to this, for a partition's rows in batch order whose
    last is ``k``: a last tombstone is the result; otherwise the rows after the last tombstone
    (a *run*, from ``s``) give ``k``'s values, the sum of their commits, ``replace`` if a
    tombstone came before ``s``, and the moved time and change count of ``m``, the first of
    the rows that, up to ``k``, each kept the offset of the row before (a row that did not
    change the offset within its batch and equals it); ``m``'s change count is raised to 1
    unless ``m`` is ``s``."""
    out_types = {name: (rows.schema.field(name).type if name != "replace" else pa.bool_())
                 for name in FOLDED}  # fmt: skip
    n = rows.num_rows
    if n == 0:
        return pa.table({name: pa.array([], t) for name, t in out_types.items()})
    order = pc.sort_indices(
        rows,
        sort_keys=[("group", "ascending"), ("topic", "ascending"),
                   ("partition", "ascending"), ("batch_id", "ascending")],
    )  # fmt: skip
    rows = rows.take(order)
    idx = np.arange(n)
    same = np.zeros(n, dtype=bool)
    if n > 1:
        # A row's key equals the one before it.
        same[1:] = np.logical_and.reduce(
            [_np_bool(pc.equal(rows.column(k).slice(1), rows.column(k).slice(0, n - 1)))
             for k in ("group", "topic", "partition")]
        )  # fmt: skip
    tomb = _np_bool(rows.column("tombstone"))
    offset = rows.column("committed_offset")
    valid = _np_bool(pc.is_valid(offset))
    off, changes, commits = (
        _np_int(c) for c in (offset, rows.column("changes"), rows.column("commits"))
    )
    prev_tomb = np.zeros(n, dtype=bool)
    prev_tomb[1:] = tomb[:-1]
    # A run of rows without a tombstone starts at a partition's first row or after a tombstone.
    run_start = ~same | prev_tomb
    equal_prev = np.zeros(n, dtype=bool)
    equal_prev[1:] = valid[1:] & valid[:-1] & (off[1:] == off[:-1])
    keeps = same & ~prev_tomb & ~tomb & (changes == 0) & equal_prev
    # The nearest such row at or before each row (a partition's first row is both).
    s = np.maximum.accumulate(np.where(run_start, idx, -1))
    m = np.maximum.accumulate(np.where(~keeps, idx, -1))
    last = np.ones(n, dtype=bool)
    last[:-1] = ~same[1:]
    k = idx[last]
    sk, mk, tk = s[k], m[k], tomb[k]
    summed = np.cumsum(commits)
    run_commits = summed[k] - np.where(sk > 0, summed[np.maximum(sk - 1, 0)], 0)
    folded_changes = np.where(mk == sk, changes[mk], np.maximum(changes[mk], 1))
    replace = same[sk] & ~tk  # a tombstone of the partition came before the run
    out = {name: rows.column(name).take(pa.array(k)) for name in FOLDED[:-4]}
    out["moved_time"] = rows.column("moved_time").take(pa.array(np.where(tk, k, mk)))
    out["changes"] = pa.array(np.where(tk, changes[k], folded_changes), out_types["changes"])
    out["commits"] = pa.array(np.where(tk, commits[k], run_commits), out_types["commits"])
    out["replace"] = pa.array(replace, pa.bool_())
    return pa.table({name: out[name] for name in FOLDED}).cast(
        pa.schema([pa.field(name, t) for name, t in out_types.items()])
    )


def _np_int(values: Any) -> Any:
    """An integer column as an int64 numpy array, null as 0."""
    filled = pc.fill_null(pc.cast(values, pa.int64()), 0)
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)


def _np_bool(values: Any) -> Any:
    """A boolean column as a numpy array, null as false."""
    filled = pc.fill_null(pc.cast(values, pa.bool_()), False)
    if isinstance(filled, pa.ChunkedArray):
        filled = filled.combine_chunks()
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)
