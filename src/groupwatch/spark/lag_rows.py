"""A judged lag poll as the lag tables' rows, and its commits: ``end_offsets`` (the brokers'
answers), ``lag_history`` (per group and topic), ``partition_lag`` (the current view,
rewritten) and the lag findings; plus the alerting rows the notifier is handed.

``partition_lag``'s Arrow table is built column by column, from the keeper's columns or from
values: a dict and two datetimes per row took seconds over a fleet's million partitions.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.delta.read import schema
from groupwatch.detect.lag.judge import FINDING_OF
from groupwatch.detect.lag.model import EndOffset, PartitionLag
from groupwatch.detect.lag.poll import PollResult, TopicLag
from groupwatch.rows.findings import finding_row
from groupwatch.spark import lag_store

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def _ts(ms: int | None) -> dt.datetime | None:
    return tables.timestamp(ms)


def partition_lag_table(rows: Sequence[PartitionLag]) -> pa.Table:
    """``partition_lag``'s rows as Arrow, built column by column: the same table as one built
    from each row's ``PartitionLag.to_row`` at a fraction of its cost (a dict and two
    datetimes per row took 5-8 s over 1.2 M partitions)."""
    import pyarrow as pa

    target = schema(tables.PARTITION_LAG.name)
    owners = [r.owner for r in rows]

    def times(values: list[int | None]) -> pa.Array:
        micros = pa.array([None if v is None else v * 1000 for v in values], pa.int64())
        return micros.cast(pa.timestamp("us", tz="UTC"))

    columns: dict[str, Any] = {
        "group": [r.group for r in rows],
        "topic": [r.topic for r in rows],
        "partition": [r.partition for r in rows],
        "committed_offset": [r.committed_offset for r in rows],
        "commit_time": times([r.commit_ms for r in rows]),
        "end_offset": [r.end_offset for r in rows],
        "lag_records": [r.lag_records for r in rows],
        "lag_seconds": [r.lag_seconds for r in rows],
        "lag_seconds_at_least": [r.lag_seconds_at_least for r in rows],
        "status": [r.status for r in rows],
        "owner_member": [None if o is None else o.member for o in owners],
        "owner_client": [None if o is None else o.client for o in owners],
        "owner_host": [None if o is None else o.host for o in owners],
        "owner_generation": [None if o is None else o.generation for o in owners],
        "observed_at": times([r.observed_ms for r in rows]),
        "stale": [r.stale for r in rows],
        "retired": [r.retired for r in rows],
    }
    arrays = [
        columns[f.name]
        if isinstance(columns[f.name], pa.Array)
        else pa.array(columns[f.name], f.type)
        for f in target
    ]
    return pa.Table.from_arrays(arrays, schema=target)


def timed(table: pa.Table) -> pa.Table:
    """The keeper's columns (:class:`PollResult`'s ``table``, times as epoch milliseconds) as
    ``partition_lag``'s table."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    target = schema(tables.PARTITION_LAG.name)
    stamp = pa.timestamp("us", tz="UTC")
    arrays = []
    for f in target:
        column = table.column(f.name)
        if f.name in ("commit_time", "observed_at"):
            column = pc.cast(pc.multiply(column, 1000), pa.int64()).cast(stamp)
        arrays.append(column.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=target)


def lag_row(r: PartitionLag) -> tables.PartitionLagRow:
    """A partition's lag as its ``partition_lag`` row (times as the table's timestamps)."""
    row: dict[str, Any] = r.to_row()
    row["commit_time"] = tables.timestamp(r.commit_ms)
    row["observed_at"] = tables.timestamp(r.observed_ms)
    return tables.PartitionLagRow(**row)


def alerting_rows(rows: Iterable[PartitionLag]) -> list[tables.PartitionLagRow]:
    """The rows of the partitions whose status alerts (stopped, stalled, rewound, lagging),
    for the notifier: handed the whole table it resolves a lag alert whose partition shows
    another status or is absent, so the alerting rows alone resolve the same alerts, without a
    row per partition of the whole table (1.2 M at fleet scale, every poll)."""
    return [lag_row(r) for r in rows if r.status in FINDING_OF]


def topic_rows(topics: Iterable[TopicLag]) -> list[dict[str, Any]]:
    return [
        {
            "group": t.group,
            "topic": t.topic,
            "observed_at": _ts(t.observed_ms),
            "partitions": t.partitions,
            "lag_records": t.lag_records,
            "lag_seconds": t.lag_seconds,
            "status": t.status,
            "group_bucket": tables.group_bucket(t.group),
        }
        for t in topics
    ]


def _arrow(table: tables.Table, rows: list[dict[str, Any]]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=schema(table.name))


def write_tables(
    config: Config,
    result: PollResult,
    ends: list[EndOffset],
    writes: lag_store.PollWrites | None = None,
) -> None:
    """A judged poll's tables: the brokers' answers (``end_offsets``), the topics' lag
    (``lag_history``), the current view (``partition_lag``, rewritten) and the findings it
    opened (inserted where their id is absent); by delta-rs unless ``writes`` is given."""
    if writes is None:
        writes = lag_store.DeltaRsWrites(config)
    if ends:
        writes.append(
            tables.END_OFFSETS,
            _arrow(
                tables.END_OFFSETS,
                [
                    {
                        "topic": e.topic,
                        "partition": e.partition,
                        "start_offset": e.start_offset,
                        "end_offset": e.end_offset,
                        "observed_at": _ts(e.observed_ms),
                    }
                    for e in ends
                ],
            ),
        )
        writes.append(tables.LAG_HISTORY, _arrow(tables.LAG_HISTORY, topic_rows(result.topics)))
    writes.overwrite(
        tables.PARTITION_LAG,
        partition_lag_table(result.rows) if result.table is None else timed(result.table),
    )
    if result.opened:
        now = dt.datetime.now(tz=dt.UTC)
        rows = [dataclasses.asdict(finding_row(f, now)) for f in result.opened]
        writes.insert_new(tables.FINDINGS, _arrow(tables.FINDINGS, rows))
