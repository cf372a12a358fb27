"""The lag gauges of the metrics contract, set from one poll's verdicts: per group and topic,
and per partition with ``lag.partition_metrics``; a series whose group, topic or status is gone
is removed, not left at its last value."""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch.detect.lag.poll import PollResult

if TYPE_CHECKING:
    from groupwatch.spark.metrics import JobMetrics

Series = set[tuple[str, ...]]


def set_metrics(m: JobMetrics, result: PollResult, per_partition: bool, before: Series) -> Series:
    """The lag gauges from one poll; series of groups, topics or statuses no longer there are
    removed (a topic's status series moves, it is not left at 1). Returns the series set."""
    series: Series = set()
    for t in result.topics:
        m.lag_records.labels(t.group, t.topic).set(t.lag_records)
        series.add(("r", t.group, t.topic))
        if t.lag_seconds is not None:
            m.lag_seconds.labels(t.group, t.topic).set(t.lag_seconds)
            series.add(("s", t.group, t.topic))
        m.lag_status.labels(t.group, t.topic, t.status).set(1)
        series.add(("st", t.group, t.topic, t.status))
    if per_partition:
        table = result.table
        every = (
            ((r.group, r.topic, r.partition, r.lag_records) for r in result.rows)
            if table is None
            else zip(
                *(table.column(c).to_pylist() for c in ("group", "topic", "partition",
                                                       "lag_records")),
                strict=True,
            )
        )  # fmt: skip
        for group, topic, partition, records in every:
            if records is not None:
                m.partition_lag_records.labels(group, topic, str(partition)).set(records)
                series.add(("p", group, topic, str(partition)))
    gauges = {
        "r": m.lag_records,
        "s": m.lag_seconds,
        "st": m.lag_status,
        "p": m.partition_lag_records,
    }
    for kind, *labels in before - series:
        try:
            gauges[kind].remove(*labels)
        except KeyError:
            pass
    return series
