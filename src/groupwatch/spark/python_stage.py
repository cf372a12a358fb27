"""The Python stage: each consumer group's records and prior state, cogrouped, through the
pure :func:`groupwatch.processing.process_group` in the Python workers.

The driver side (:func:`run`) builds the cogrouped ``applyInArrow``; everything below it runs
in the workers once per group (a small batch's on the driver,
:mod:`~groupwatch.spark.driver_stage`): :func:`process_arrow` takes the group's Arrow tables
in and returns its output rows as Arrow (:mod:`groupwatch.spark.output`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from groupwatch import processing, tables
from groupwatch.detect import DetectorConfig
from groupwatch.detect.model import BrokerView
from groupwatch.detect.share.names import SHARE_STATE_TOPIC
from groupwatch.group_state import SavedGroupState
from groupwatch.spark import output
from groupwatch.tables import timestamp

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def output_schemas(spark: SparkSession) -> tuple[StructType, pa.Schema]:
    """The Python stage's output schema, for Spark and as Arrow."""
    schema = output.output_schema(spark)
    return schema, output.arrow_schema(schema)


def run(
    records: DataFrame,
    state: DataFrame,
    detector: DetectorConfig,
    schemas: tuple[StructType, pa.Schema],
    detected_at: dt.datetime,
    clocks: dict[int, int],
    quiescent: bool,
    views: Mapping[str, BrokerView] | None = None,
) -> DataFrame:
    """Every group's records cogrouped with its prior state through the workers (lazy).

    ``views``: what the brokers said of some groups at the driver's last look (a few groups:
    those rebalancing, or just seen so)."""
    schema, arrow_schema = schemas
    looked = dict(views or {})

    # What travels to the workers is this closure: the detector's frozen configuration and
    # plain values, never the driver's session or job.
    def per_group(rec: pa.Table, st: pa.Table) -> pa.Table:
        return process_arrow(
            rec, st, detector, detected_at, arrow_schema, clocks, quiescent, looked
        )

    return records.groupBy("group").cogroup(state.groupBy("group")).applyInArrow(per_group, schema)


def source_records(rec: pa.Table) -> list[processing.SourceRecord]:
    """One group's rows of the cogroup as source records, in offset order, each once (a commit
    can come as the first of its partition, the group's newest and the last before a record).

    A share group's ``__share_group_state`` records come after its ``__consumer_offsets``
    ones, each share-state partition in offset order: a share partition's records all live in
    one, and the group's records (its members' assignments, the topics' names) are what its
    share partitions are judged with."""
    rec = rec.sort_by([("partition", "ascending"), ("offset", "ascending")])
    columns = output.column_lists(rec, ("key", "value", "topic", "partition", "offset", "ts"))
    rows = list(zip(*columns, strict=True))
    if any(t == SHARE_STATE_TOPIC for _, _, t, _, _, _ in rows):
        # A stable sort: each topic's rows keep their (partition, offset) order.
        rows.sort(key=lambda r: r[2] == SHARE_STATE_TOPIC)
    out: list[processing.SourceRecord] = []
    for k, v, t, p, o, ts in rows:
        if out and out[-1].offset == o and out[-1].partition == p and out[-1].topic == t:
            continue
        out.append(
            processing.SourceRecord(key=k, value=v, topic=t, partition=p, offset=o, timestamp_ms=ts)
        )
    return out


def process_arrow(
    rec: pa.Table,
    st: pa.Table,
    detector: DetectorConfig,
    detected_at: dt.datetime,
    schema: pa.Schema,
    clocks: dict[int, int],
    quiescent: bool = False,
    views: Mapping[str, BrokerView] | None = None,
) -> pa.Table:
    """Worker side of the cogroup: one group's records and prior state -> output rows.

    A group with state but no records is one whose pending confirmation the batch's clocks
    made due, or that the brokers were just asked about: it runs with no records, to be judged
    on time and the brokers' view alone.
    """
    if rec.num_rows == 0 and not any(s is not None for s in st.column("state").to_pylist()):
        return schema.empty_table()
    with _collector_paused():
        group, rows = _group_rows(rec, st, detector, detected_at, clocks, quiescent, views)
        return output.to_arrow(group, rows, schema)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while one group is processed.

    Decoding and analysis allocate hundreds of thousands of small acyclic objects per group
    (tuples, dicts, dataclasses), which reference counting frees; each allocation burst also
    triggers cycle collections that walk the worker's whole heap (pandas, pyarrow, Spark) and
    find nothing.  Pausing it made a 50-member record 22% cheaper; it runs again between
    groups, so any cycle is still collected.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _group_rows(
    rec: pa.Table,
    st: pa.Table,
    detector: DetectorConfig,
    detected_at: dt.datetime,
    clocks: dict[int, int],
    quiescent: bool = False,
    views: Mapping[str, BrokerView] | None = None,
) -> tuple[str, dict[str, list[tables.Row]]]:
    """The group of the cogroup's records and its rows per table (state row included)."""
    group = str((rec if rec.num_rows else st).column("group")[0].as_py())
    state = None
    last_before = -1
    commits: list[tuple[str, int, int | None]] = []
    names = ("state", "last_event_ms", "topic", "max_partition", "last_commit_ms")
    for saved, last_ms, topic, max_partition, committed_ms in zip(
        *output.column_lists(st, names), strict=True
    ):
        if saved is not None:
            state = SavedGroupState.decode(saved)
            last_before = last_ms if last_ms is not None else -1
        elif topic is not None:
            commits.append((topic, max_partition, committed_ms))
    commits.sort()
    records = source_records(rec)
    result = processing.process_group(
        group,
        state,
        records,
        detector=detector,
        detected_at=detected_at,
        commits=commits,
        clocks=clocks,
        quiescent=quiescent,
        view=None if views is None else views.get(group),
    )
    last = max((r.timestamp_ms for r in records), default=last_before)
    until = result.pending_until
    pending = until is not None and not result.deleted
    state_row = tables.StateRow(
        group=group,
        # A deleted group starts afresh if its name is used again; the marker row lets the
        # next state maintenance drop the group's versions.
        state=None if result.deleted else result.state.encode(),
        last_event_time=timestamp(last),
        deleted=result.deleted,
        pending_until=timestamp(until[0]) if pending and until is not None else None,
        pending_partition=until[1] if pending and until is not None else None,
    )
    return group, {**result.rows, tables.GROUP_STATE.name: [state_row]}
