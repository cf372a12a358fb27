"""Writes to the job's Delta tables with delta-rs, from the driver, each at most once per batch.

A live cluster's micro-batch holds a few hundred rows per table.  Written by Spark, each of a
batch's commits costs about 1.5 s on two cores and the ``partition_ownership`` MERGE 6-9 s,
almost all of it fixed cost (planning, a job per step, the snapshot rebuilt after the commit);
delta-rs commits the same rows in milliseconds, and MERGEs a batch's intervals into a table of
a million in well under a second.  ``groupwatch.spark.sinks`` decides which batches come here.

Exactly once, as with Spark's writes: every commit carries Delta's transaction action with the
job's app id and the batch id (the action Spark's ``txnAppId``/``txnVersion`` write), and a
write is skipped when its table already holds that app's transaction at this batch or later.
Both writers read and write the same action, so Spark and delta-rs may take turns on a table
(a large catch-up batch by Spark, the live batches after it here).

A MERGE's source is a batch's rows, already in memory and bounded (``delta.driver_write_rows``),
so delta-rs takes it whole (``streamed_exec=False``) rather than as a stream (which is meant
for sources too large for memory, and keeps delta-rs from deriving a pruning predicate from
the source's values): the MERGE of a live batch's 4,000 newest commits into the 1.2 M rows of
``committed_offsets`` took 0.73 s against 0.85 s streamed (bench/HISTORY.md, "Fleet-scale
latency over 40 samples; the lag poll's child and its copies; a MERGE's source taken whole").

A write that loses a commit race it cannot resolve (an analyst's OPTIMIZE removed files a MERGE
read) is run again on the table as the winner left it, up to ``CONFLICT_ATTEMPTS`` times: the
losing commit left nothing behind, and the transaction id check runs again first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from deltalake import CommitProperties, DeltaTable, Transaction, WriterProperties, write_deltalake
from deltalake.exceptions import CommitFailedError
from deltalake.table import TableMerger

from groupwatch import clustering
from groupwatch.delta import checksum
from groupwatch.delta.read import schema
from groupwatch.tables import KEYED_ROW_GROUP_ROWS, Table

log = logging.getLogger("groupwatch.job")

#: Attempts of a write whose commit lost a race with another writer.
CONFLICT_ATTEMPTS = 5


def conform(data: pa.Table, table: Table) -> pa.Table:
    """``data``'s columns of ``table``, in the declared order, cast to the declared types."""
    target = schema(table.name)
    return data.select(target.names).cast(target)


def _written(table: DeltaTable, app_id: str, batch_id: int) -> bool:
    """Whether the table already holds ``app_id``'s commit of this batch (or a later one)."""
    version = table.transaction_version(app_id)
    return version is not None and version >= batch_id


def _commit(app_id: str, batch_id: int, note: str | None) -> CommitProperties:
    # Spark shows a commit's ``userMetadata`` in the table's history; the job finds its own
    # commits there by the note (``groupwatch.spark.offsets.version_before``).
    metadata = {"userMetadata": note} if note is not None else None
    return CommitProperties(
        app_transactions=[Transaction(app_id, batch_id)], custom_metadata=metadata
    )


def append_once(
    path: Path,
    table: Table,
    data: pa.Table,
    app_id: str,
    batch_id: int,
    *,
    note: str | None = None,
) -> bool:
    """Append ``data`` to the table unless this (app, batch) already did; whether it wrote."""
    return _retried(
        lambda: _append(path, table, data, app_id, batch_id, note), f"{table.name} append", path
    )


def _retried(write: Callable[[], bool], what: str, path: Path) -> bool:
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            wrote = write()
            if wrote:
                # The commit may have written a checkpoint: Spark's checksum of the last
                # one would then fail its next read of the table.
                checksum.forget_stale(path)
            return wrote
        except CommitFailedError as exc:
            if attempt == CONFLICT_ATTEMPTS:
                raise
            log.warning("%s lost a commit race (attempt %d), trying again: %s", what, attempt, exc)
    raise AssertionError("unreachable")


def shaped(table: Table) -> WriterProperties | None:
    """How delta-rs writes the table's files: a table read by key (:attr:`Table.read_by`) in
    small row groups with whole statistics, so that a read of a few keys opens a few row groups
    (None: delta-rs's defaults)."""
    if not table.read_by:
        return None
    return WriterProperties(
        max_row_group_size=KEYED_ROW_GROUP_ROWS,
        statistics_truncate_length=clustering.STATISTICS_BYTES,
    )


def _append(
    path: Path, table: Table, data: pa.Table, app_id: str, batch_id: int, note: str | None
) -> bool:
    # One load of the table's log serves the check and the write.
    target = DeltaTable(str(path))
    if _written(target, app_id, batch_id):
        return False
    rows = conform(data, table)
    if table.read_by:
        # Sorted by the column, in small row groups: a read of a few of its values opens few.
        rows = rows.take(pc.sort_indices(rows, sort_keys=[(table.read_by, "ascending")]))
    # None is delta-rs's own default, which its typing does not say.
    write_deltalake(  # type: ignore[call-overload]
        target,
        rows,
        mode="append",
        partition_by=list(table.partition_by) or None,
        commit_properties=_commit(app_id, batch_id, note),
        writer_properties=shaped(table),
    )
    return True


def merge_once(
    path: Path,
    table: Table,
    data: pa.Table,
    app_id: str,
    batch_id: int,
    *,
    on: Sequence[str] | None = None,
    update: bool | Mapping[str, str] = True,
    null_safe: bool = True,
    note: str | None = None,
) -> bool:
    """Upsert ``data`` on ``on`` (default: the table's key) unless this (app, batch) already did.

    ``update``: True replaces a matched row, False leaves it (insert only), a mapping sets
    columns by SQL expressions over ``t`` (the table) and ``s`` (``data``).  Keys compare
    null-safely (as Spark's ``<=>``) unless ``null_safe`` is False.
    """
    return _retried(
        lambda: _merge(path, table, data, app_id, batch_id, on, update, null_safe, note),
        f"{table.name} merge",
        path,
    )


def merge_rows_once(
    path: Path,
    data: pa.Table,
    app_id: str,
    batch_id: int,
    *,
    on: str,
    update: Mapping[str, str],
    insert: Mapping[str, str],
    delete_when: str | None = None,
    insert_when: str | None = None,
) -> bool:
    """A MERGE of ``data`` (columns as they are, more than the table's allowed) by explicit
    SQL: ``on`` matches, ``delete_when`` deletes matched rows, the others are updated by
    ``update``; unmatched rows are inserted by ``insert`` where ``insert_when`` holds."""

    def clauses(merger: TableMerger) -> TableMerger:
        if delete_when is not None:
            merger = merger.when_matched_delete(delete_when)
        merger = merger.when_matched_update(dict(update))
        return merger.when_not_matched_insert(dict(insert), insert_when)

    return _sql_merge_once(path, data, app_id, batch_id, on, clauses, f"{path.name} merge")


def delete_matching_once(
    path: Path,
    rows: pa.Table,
    app_id: str,
    batch_id: int,
    *,
    on: str,
    table: Table | None = None,
) -> bool:
    """Delete the table's rows that match one of ``rows`` (``on``: SQL over ``t`` and ``s``)
    unless this (app, batch) already did; whether it wrote.  ``table``: the files it rewrites
    are written as that table's (:func:`shaped`)."""
    return _sql_merge_once(
        path,
        rows,
        app_id,
        batch_id,
        on,
        lambda merger: merger.when_matched_delete(),
        f"{path.name} delete",
        None if table is None else shaped(table),
    )


def _sql_merge_once(
    path: Path,
    data: pa.Table,
    app_id: str,
    batch_id: int,
    on: str,
    clauses: Callable[[TableMerger], TableMerger],
    what: str,
    properties: WriterProperties | None = None,
) -> bool:
    """A MERGE of ``data`` as ``s`` into the table as ``t`` on ``on``, with ``clauses``, under
    the (app, batch) transaction unless the table already holds it; the files it writes with
    ``properties`` (None: delta-rs's defaults)."""

    def write() -> bool:
        target = DeltaTable(str(path))
        if _written(target, app_id, batch_id):
            return False
        merger = target.merge(
            data,
            on,
            source_alias="s",
            target_alias="t",
            streamed_exec=False,
            commit_properties=_commit(app_id, batch_id, None),
            writer_properties=properties,
        )
        clauses(merger).execute()
        return True

    return _retried(write, what, path)


def _merge(
    path: Path,
    table: Table,
    data: pa.Table,
    app_id: str,
    batch_id: int,
    on: Sequence[str] | None,
    update: bool | Mapping[str, str],
    null_safe: bool,
    note: str | None,
) -> bool:
    target = DeltaTable(str(path))
    if _written(target, app_id, batch_id):
        return False
    keys = tuple(on) if on is not None else table.key
    if null_safe:
        # Parenthesised: without them the SQL parser binds AND into the comparison.
        predicate = " AND ".join(f"(t.`{k}` IS NOT DISTINCT FROM s.`{k}`)" for k in keys)
    else:
        predicate = " AND ".join(f"t.`{k}` = s.`{k}`" for k in keys)
    # The distinct groups only: a batch's thousands of rows name a few.
    groups = pc.unique(data.column("group")).to_pylist() if table.merge_bucket else ()
    scope = table.merge_scope(groups)
    if scope:
        # The other partitions' files pruned before the join (delta-rs reads the predicate's
        # partition filter); without it, a MERGE reads and rewrites the history too, and
        # every bucket of open intervals where the batch's groups touch a few.
        predicate += f" AND {scope}"
    merger = target.merge(
        conform(data, table),
        predicate,
        source_alias="s",
        target_alias="t",
        streamed_exec=False,
        commit_properties=_commit(app_id, batch_id, note),
    )
    kept = None
    if table.removed_when:
        # As Spark's (sinks.merge): the first matching clause applies.
        merger = merger.when_matched_delete(table.removed_when)
        kept = f"NOT ({table.removed_when})"
    if update is True:
        merger = merger.when_matched_update_all(kept)
    elif update:
        merger = merger.when_matched_update(dict(update), kept)
    merger.when_not_matched_insert_all(kept).execute()
    return True
