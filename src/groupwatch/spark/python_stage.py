"""The Python stage: each consumer group's records and prior state, cogrouped, through the
pure :func:`groupwatch.processing.process_group` in the Python workers.

The driver side (:func:`run`) builds the cogrouped ``applyInArrow``; everything below it runs
in the workers, once per group: :func:`_process_arrow` takes the group's Arrow tables in and
returns its output rows as Arrow (:mod:`groupwatch.spark.output`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from groupwatch import processing, tables
from groupwatch.spark import output

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: Builds the per-record decoder and the findings engine inside each Python worker.
ProcessorFactory = Callable[[], tuple[Callable[..., Any], processing.Analysis]]


def output_schemas(spark: SparkSession) -> tuple[StructType, pa.Schema]:
    """The Python stage's output schema, for Spark and as Arrow."""
    schema = output.output_schema(spark)
    return schema, output.arrow_schema(schema)


class BatchProcessors:
    """The decoder and the findings engine of one batch, built in each Python worker task.

    It travels to the workers inside the batch function's closure, which a worker unpickles
    once per task and then calls for every group of that task: the processors are built, and
    told the brokers' topic names, once per task rather than once per group.
    """

    def __init__(self, factory: ProcessorFactory, topic_names: dict[str, str]) -> None:
        self.factory = factory
        self.topic_names = topic_names
        self._built: tuple[Callable[..., Any], processing.Analysis] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"factory": self.factory, "topic_names": self.topic_names, "_built": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def get(self) -> tuple[Callable[..., Any], processing.Analysis]:
        if self._built is None:
            decode, analysis = self.factory()
            if self.topic_names:
                analysis = analysis.with_topic_names(self.topic_names)
            self._built = (decode, analysis)
        return self._built


def run(
    records: DataFrame,
    state: DataFrame,
    processors: BatchProcessors,
    schemas: tuple[StructType, pa.Schema],
    detected_at: dt.datetime,
    clocks: dict[int, int],
    quiescent: bool,
) -> DataFrame:
    """Every group's records cogrouped with its prior state through the workers (lazy)."""
    schema, arrow_schema = schemas

    # What travels to the workers is this closure: the processors (built there, once per
    # task) and plain values, never the driver's session or job.
    def per_group(rec: pa.Table, st: pa.Table) -> pa.Table:
        return _process_arrow(rec, st, processors, detected_at, arrow_schema, clocks, quiescent)

    return records.groupBy("group").cogroup(state.groupBy("group")).applyInArrow(per_group, schema)


def source_records(rec: pa.Table) -> list[processing.SourceRecord]:
    """One group's rows of the cogroup as source records, in offset order."""
    rec = rec.sort_by([("partition", "ascending"), ("offset", "ascending")])
    columns = output.column_lists(rec, ("key", "value", "topic", "partition", "offset", "ts"))
    return [
        processing.SourceRecord(key=k, value=v, topic=t, partition=p, offset=o, timestamp_ms=ts)
        for k, v, t, p, o, ts in zip(*columns, strict=True)
    ]


def _process_arrow(
    rec: pa.Table,
    st: pa.Table,
    processors: BatchProcessors,
    detected_at: dt.datetime,
    schema: pa.Schema,
    clocks: dict[int, int],
    quiescent: bool = False,
) -> pa.Table:
    """Worker side of the cogroup: one group's records and prior state -> output rows.

    A group with state but no records is one whose pending confirmation the batch's clocks
    made due: it runs with no records, to be judged on time alone.
    """
    if rec.num_rows == 0 and not any(s is not None for s in st.column("state").to_pylist()):
        return schema.empty_table()
    with _collector_paused():
        group, rows = _group_rows(rec, st, processors, detected_at, clocks, quiescent)
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
    processors: BatchProcessors,
    detected_at: dt.datetime,
    clocks: dict[int, int],
    quiescent: bool = False,
) -> tuple[str, dict[str, list[processing.Row]]]:
    """The group of the cogroup's records and its rows per table (state row included)."""
    decode, analysis = processors.get()
    group = str((rec if rec.num_rows else st).column("group")[0].as_py())
    state = None
    last_before = -1
    commits: list[tuple[str, int]] = []
    for saved, last_ms, topic, max_partition in zip(
        *output.column_lists(st, ("state", "last_event_ms", "topic", "max_partition")),
        strict=True,
    ):
        if saved is not None:
            state = json.loads(saved)
            last_before = last_ms if last_ms is not None else -1
        elif topic is not None:
            commits.append((topic, max_partition))
    commits.sort()
    records = source_records(rec)
    result = processing.process_group(
        group,
        state,
        records,
        decode=decode,
        analysis=analysis,
        detected_at=detected_at,
        commits=commits,
        clocks=clocks,
        quiescent=quiescent,
    )
    last = max((r.timestamp_ms for r in records), default=last_before)
    until = result.pending_until
    state_row = {
        "group": group,
        # A deleted group starts afresh if its name is used again; the marker row lets the
        # next state maintenance drop the group's versions.
        "state": None if result.deleted else json.dumps(result.state, sort_keys=True),
        "last_event_time": processing._ts(last),
        "deleted": result.deleted,
        "pending_until": None if until is None or result.deleted else processing._ts(until[0]),
        "pending_partition": None if until is None or result.deleted else until[1],
    }
    return group, {**result.rows, tables.GROUP_STATE.name: [state_row]}
