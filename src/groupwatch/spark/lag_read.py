"""What a lag poll reads of the job's tables besides the owners
(:mod:`groupwatch.spark.lag_owners`): every committed partition's newest commit
(``committed_offsets``), and at a restart the end-offset history its keeper starts from
(``end_offsets``, and ``partition_lag`` for the newest answers).  Read with delta-rs
(:mod:`groupwatch.spark.lag_store`: on a file system or an object store alike) and taken as
Arrow columns, not values per row: at a fleet's scale a value per row cost seconds a poll.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.detect.lag.fleet import COMMIT_SCHEMA
from groupwatch.detect.lag.model import Commit, EndOffset
from groupwatch.detect.lag.poll import TP
from groupwatch.spark import lag_store

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def read_commit_table(config: Config) -> pa.Table:
    """Every committed partition's newest commit, as the columns the keeper judges
    (:data:`~groupwatch.detect.lag.fleet.COMMIT_SCHEMA`): over the 1.2 M partitions of the
    cluster model a value per row cost seconds a poll."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    data = lag_store.read_columns(
        config,
        tables.COMMITTED_OFFSETS,
        ["group", "topic", "partition", "committed_offset", "leader_epoch", "metadata_size",
         "commit_time", "moved_time"],
    )  # fmt: skip
    if data is None:
        return COMMIT_SCHEMA.empty_table()
    data = data.filter(
        pc.and_(pc.is_valid(data["committed_offset"]), pc.is_valid(data["commit_time"]))
    )
    return pa.table(
        {
            "group": data["group"],
            "topic": data["topic"],
            "partition": data["partition"],
            "offset": data["committed_offset"],
            "commit_ms": _ms_array(data["commit_time"]),
            "leader_epoch": pc.fill_null(data["leader_epoch"], -1),
            "metadata_size": pc.fill_null(data["metadata_size"], 0),
            "moved_ms": _ms_array(data["moved_time"]),
        }
    ).cast(COMMIT_SCHEMA)


def read_commits(config: Config) -> list[Commit]:
    """:func:`read_commit_table` as values."""
    data = read_commit_table(config)
    columns = [data.column(f.name).to_pylist() for f in data.schema]
    return [Commit(*values) for values in zip(*columns, strict=True)]


def _ms_array(column: Any) -> Any:
    """A timestamp column as epoch milliseconds (int64)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
    # Integer division truncates towards zero, as ``int(ts.timestamp() * 1000)`` does.
    return pc.divide(micros, 1000)


def _ms_list(column: Any) -> list[int | None]:
    """A timestamp column as epoch milliseconds, whole-column (no datetime per row)."""
    values: list[int | None] = _ms_array(column).to_pylist()
    return values


def read_history(
    config: Config, since_ms: int, floors: Mapping[TP, int]
) -> tuple[list[EndOffset], list[EndOffset]]:
    """What a restart needs of the end-offset history, oldest first per partition: the
    ``end_offsets`` rows since ``since_ms`` of each partition in ``floors`` (its smallest
    committed offset), from its last row at or below it on, the rows a seconds-behind
    estimate can use (the keeper trims to the same after a judgement); and the newest answer
    of each partition as ``partition_lag`` holds it (the end of a flat run the table has no
    row of yet, :meth:`LagKeeper.observe`).  Filtered as Arrow columns: the table holds a
    week of a fleet's busy partitions, and most of it is behind every committed offset."""
    import pyarrow as pa
    import pyarrow.dataset as ds  # type: ignore[import-untyped]
    from deltalake.exceptions import TableNotFoundError

    if not floors:
        return [], []
    try:
        dataset = lag_store.open_table(config, tables.END_OFFSETS).to_pyarrow_dataset()
    except (TableNotFoundError, FileNotFoundError):
        return [], _newest_answers(config, floors, {})
    wanted = pa.table(
        {
            "topic": [tp[0] for tp in floors],
            "partition": pa.array([tp[1] for tp in floors], pa.int32()),
            "floor": pa.array(list(floors.values()), pa.int64()),
        }
    )
    since = pa.scalar(since_ms * 1000, pa.timestamp("us", tz="UTC"))
    scanner = dataset.scanner(
        columns=["topic", "partition", "start_offset", "end_offset", "observed_at"],
        filter=ds.field("observed_at") >= since,
    )
    # Batch by batch, each reduced to its window before the next is read: a week of a fleet's
    # busy partitions is billions of rows, nearly all behind every committed offset.
    kept = [
        _history_window(_typed(batch), wanted) for batch in scanner.to_batches() if batch.num_rows
    ]
    if not kept:
        return [], _newest_answers(config, floors, {})
    data = _history_window(pa.concat_tables(kept), wanted).sort_by(
        [("topic", "ascending"), ("partition", "ascending"), ("ms", "ascending")]
    )
    rows = [
        EndOffset(t, p, b if b is not None else 0, e, at)
        for t, p, b, e, at in zip(
            data.column("topic").to_pylist(),
            data.column("partition").to_pylist(),
            data.column("start_offset").to_pylist(),
            data.column("end_offset").to_pylist(),
            data.column("ms").to_pylist(),
            strict=True,
        )
        if e is not None
    ]
    last: dict[TP, EndOffset] = {(r.topic, r.partition): r for r in rows}
    return rows, _newest_answers(config, floors, last)


def _typed(batch: pa.RecordBatch) -> pa.Table:
    """A batch of ``end_offsets`` in the declared types a join needs (delta-rs may hand
    strings over as views), its time as epoch milliseconds (``ms``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pa.table(
        {
            "topic": pc.cast(batch.column("topic"), pa.string()),
            "partition": pc.cast(batch.column("partition"), pa.int32()),
            "start_offset": pc.cast(batch.column("start_offset"), pa.int64()),
            "end_offset": pc.cast(batch.column("end_offset"), pa.int64()),
            "ms": pa.array(_ms_list(batch.column("observed_at")), pa.int64()),
        }
    )


def _history_window(table: pa.Table, wanted: pa.Table) -> pa.Table:
    """Of each wanted partition's rows (:func:`_typed`), its last at or below its floor and
    those after it.  The window of windows is the window of the whole, so batches are
    reduced one by one."""
    import pyarrow.compute as pc

    table = table.join(wanted, ["topic", "partition"], join_type="inner")
    at_or_below = table.filter(pc.less_equal(table["end_offset"], table["floor"]))
    starts = at_or_below.group_by(["topic", "partition"]).aggregate([("ms", "max")])
    table = table.join(starts, ["topic", "partition"], join_type="left outer")
    keep = pc.or_kleene(pc.is_null(table["ms_max"]), pc.greater_equal(table["ms"], table["ms_max"]))
    return table.filter(keep).select(["topic", "partition", "start_offset", "end_offset", "ms"])


def _newest_answers(
    config: Config, floors: Mapping[TP, int], rows: Mapping[TP, EndOffset]
) -> list[EndOffset]:
    """Each partition's newest answer in ``partition_lag`` later than its last history row
    (``rows``; its log start from that row, which ``partition_lag`` does not hold)."""
    data = lag_store.read_columns(
        config, tables.PARTITION_LAG, ["topic", "partition", "end_offset", "observed_at"]
    )
    if data is None:
        return []
    newest: dict[TP, EndOffset] = {}
    for t, p, e, at in zip(
        data.column("topic").to_pylist(),
        data.column("partition").to_pylist(),
        data.column("end_offset").to_pylist(),
        _ms_list(data.column("observed_at")),
        strict=True,
    ):
        tp = (t, p)
        if e is None or at is None or tp not in floors or tp in newest:
            continue  # a row per group of the partition: one answer
        row = rows.get(tp)
        if row is not None and at > row.observed_ms:
            newest[tp] = EndOffset(t, p, row.start_offset, e, at)
    return sorted(newest.values(), key=lambda e: (e.topic, e.partition))
