"""``share_partition_state``'s end offsets and share lag, asked of the brokers by the driver
when a batch writes the rows.

The Python stage builds each touched share partition's row from its ``__share_group_state``
records alone; share lag also needs the partition's log end offset (Kafka's formula: end -
start offset - delivery-complete count, KIP-1226).  The rows a batch writes are few (one per
share partition its records touched), so the driver asks for their end offsets at once, with
the consumer the lag poll uses (:class:`~groupwatch.spark.lag_ask.OffsetAsker`).  A broker that
does not answer leaves them null (one warning): the state is written all the same.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.delta import write as deltawrite

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")


def share_lag(start: int | None, complete: int | None, end: int | None) -> int | None:
    """Kafka's share lag (``GroupCoordinatorService``): unknown while the start offset or the
    delivery-complete count is -1 (not initialised, a writer before 4.2) or the end unknown."""
    if start is None or complete is None or end is None or start < 0 or complete < 0:
        return None
    return end - start - complete


def fill(spark: SparkSession, config: Config, rows: pa.Table) -> pa.Table:
    """``rows`` (``share_partition_state``'s) with ``end_offset``, ``lag_records`` and
    ``end_observed_at`` from the brokers, where the topic is named and the brokers answer."""
    import pyarrow as pa

    from groupwatch.spark.lag_answer import parse_offsets
    from groupwatch.spark.lag_ask import OffsetAsker
    from groupwatch.spark.preflight import java_cause

    rows = deltawrite.conform(rows, tables.SHARE_PARTITION_STATE)
    topics = rows.column("topic").to_pylist()
    parts = rows.column("partition").to_pylist()
    wanted: dict[str, list[int]] = {}
    for t, p in zip(topics, parts, strict=True):
        if t is not None and p is not None:
            wanted.setdefault(t, []).append(p)
    if not wanted:
        return rows
    try:
        answer = OffsetAsker(spark, config).ask(wanted)
    except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
        log.warning("share partitions' end offsets not known (%s): lag left null", java_cause(exc))
        return rows
    if answer is None:
        return rows
    ends = parse_offsets(answer.ends)
    end = [None if t is None else ends.get((t, p)) for t, p in zip(topics, parts, strict=True)]
    lag = [
        share_lag(s, c, e)
        for s, c, e in zip(
            rows.column("start_offset").to_pylist(),
            rows.column("delivery_complete_count").to_pylist(),
            end,
            strict=True,
        )
    ]
    seen = [None if e is None else tables.timestamp(answer.observed_ms) for e in end]
    schema = rows.schema
    for name, values in (("end_offset", end), ("lag_records", lag), ("end_observed_at", seen)):
        i = schema.get_field_index(name)
        rows = rows.set_column(i, schema.field(i), pa.array(values, schema.field(i).type))
    return rows
