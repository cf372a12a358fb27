"""Prometheus metrics of the running job, served on ``metrics.host:metrics.port``.

Spark's progress (rates, durations, lag) arrives through a ``StreamingQueryListener``; what
the job itself counts (records by type, findings, quarantined rows) is set from the batch
function on the driver. The registry is the job's own, so tests can start several jobs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from pyspark.sql.streaming.listener import StreamingQueryListener

from groupwatch.detect.catalogue import CATALOGUE
from groupwatch.spark.batchlog import BatchLog

log = logging.getLogger("groupwatch.metrics")


class JobMetrics:
    """Every metric the job exports, on one registry."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.input_rate = Gauge(
            "groupwatch_input_rows_per_second", "Source rows per second (last batch)", registry=r
        )
        self.processing_rate = Gauge(
            "groupwatch_processed_rows_per_second", "Rows processed per second", registry=r
        )
        self.batch_duration = Gauge(
            "groupwatch_batch_duration_seconds", "Wall time of the last micro-batch", registry=r
        )
        self.batch_id = Gauge("groupwatch_batch_id", "Last completed micro-batch id", registry=r)
        self.source_lag = Gauge(
            "groupwatch_source_lag_records",
            "Records between the last processed offset and the source's end",
            registry=r,
        )
        self.state_groups = Gauge(
            "groupwatch_state_groups", "Consumer groups with analysis state", registry=r
        )
        self.records = Counter(
            "groupwatch_records", "Source records read, by record type", ["record_type"], registry=r
        )
        self.findings = Counter(
            "groupwatch_findings", "Findings written", ["kind", "severity"], registry=r
        )
        self.quarantined = Counter(
            "groupwatch_quarantined_records", "Rows written to quarantine", ["stage"], registry=r
        )
        self.last_batch_time = Gauge(
            "groupwatch_last_batch_timestamp_seconds", "When the last batch finished", registry=r
        )
        # Consumer lag (docs/lag.md), set after every end-offset poll; per (group, topic) to
        # bound the series count, per partition only with lag.partition_metrics.
        self.lag_records = Gauge(
            "groupwatch_lag_records",
            "Records behind, summed over the topic's committed partitions",
            ["group", "topic"],
            registry=r,
        )
        self.lag_seconds = Gauge(
            "groupwatch_lag_seconds",
            "Seconds behind: the oldest unconsumed record's age, the topic's maximum",
            ["group", "topic"],
            registry=r,
        )
        self.lag_status = Gauge(
            "groupwatch_lag_status",
            "1 for the topic's worst partition status",
            ["group", "topic", "status"],
            registry=r,
        )
        self.partition_lag_records = Gauge(
            "groupwatch_partition_lag_records",
            "Records behind per partition (lag.partition_metrics)",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.driver_collected_rows = Counter(
            "groupwatch_driver_collected_rows",
            "Rows the batches collected to the driver (spark/driver_tally.py)",
            registry=r,
        )
        self.driver_collected_bytes = Counter(
            "groupwatch_driver_collected_bytes",
            "Bytes (Arrow buffers) the batches collected to the driver",
            registry=r,
        )
        self.lag_poll_age = Gauge(
            "groupwatch_lag_poll_age_seconds",
            "Seconds since the last successful end-offset poll",
            registry=r,
        )
        # Share groups (KIP-932), per (group, topic): set from each share partition's newest
        # state the job wrote (``share_partition_state``), summed over the topic's partitions.
        self.share_lag_records = Gauge(
            "groupwatch_share_lag_records",
            "Share lag (end - start offset - delivery-complete count), summed over the topic's "
            "share partitions",
            ["group", "topic"],
            registry=r,
        )
        self.share_in_flight_records = Gauge(
            "groupwatch_share_in_flight_records",
            "Records handed out and not yet acknowledged, summed over the topic's share partitions",
            ["group", "topic"],
            registry=r,
        )
        self.share_archived_records = Gauge(
            "groupwatch_share_archived_records",
            "Records the broker archived (delivery attempts ran out, or rejected) still at or "
            "past the start offset, summed over the topic's share partitions",
            ["group", "topic"],
            registry=r,
        )
        #: (group, topic) -> partition -> (lag or None, in flight, archived): the newest state.
        self._share: dict[tuple[str, str], dict[int, tuple[int | None, int, int]]] = {}
        # Every series exists from the start, at 0, so alert rules see the first increase.
        for kind in CATALOGUE:
            self.findings.labels(kind.name, kind.severity)
        for stage in ("decode", "validate"):
            self.quarantined.labels(stage)

    def share_partitions(self, rows: list[dict[str, Any]]) -> None:
        """Share partitions' newest states (``share_partition_state`` rows) into the share
        gauges: each (group, topic) the sum over the partitions known so far (the share lag
        only over the partitions whose lag is known, absent while none is)."""
        touched: set[tuple[str, str]] = set()
        for row in rows:
            group, topic, part = row.get("group"), row.get("topic"), row.get("partition")
            if group is None or part is None:
                continue
            key = (str(group), str(topic or row.get("topic_id")))
            known = self._share.setdefault(key, {})
            if row.get("start_offset") is None:
                # A removal (the state's tombstone): the partition is no one's to watch.
                known.pop(int(part), None)
            else:
                known[int(part)] = (
                    row.get("lag_records"),
                    int(row.get("in_flight_records") or 0),
                    int(row.get("archived_records") or 0),
                )
            touched.add(key)
        gauges = (self.share_lag_records, self.share_in_flight_records, self.share_archived_records)
        for key in touched:
            parts = self._share[key].values()
            if not parts:
                # Its last partition removed: the series go (an alert on them resolves).
                del self._share[key]
                for gauge in gauges:
                    with contextlib.suppress(KeyError):  # a lag never known has no series
                        gauge.remove(*key)
                continue
            lags = [lag for lag, _, _ in parts if lag is not None]
            if lags:
                self.share_lag_records.labels(*key).set(sum(lags))
            self.share_in_flight_records.labels(*key).set(sum(f for _, f, _ in parts))
            self.share_archived_records.labels(*key).set(sum(a for _, _, a in parts))

    def serve(self, host: str, port: int) -> None:
        start_http_server(port, addr=host, registry=self.registry)
        log.info("metrics on http://%s:%d/metrics", host, port)


def _lag(progress: dict[str, Any]) -> float | None:
    """Records between what the batch read and the newest offsets the source reported."""
    total = 0.0
    seen = False
    for source in progress.get("sources", []):
        end, latest = source.get("endOffset"), source.get("latestOffset")
        if not isinstance(end, dict) or not isinstance(latest, dict):
            continue
        for topic, parts in latest.items():
            done = end.get(topic, {})
            for part, offset in parts.items():
                total += max(0, int(offset) - int(done.get(part, offset)))
                seen = True
    return total if seen else None


class ProgressListener(StreamingQueryListener):
    """Copies each query progress into the job's gauges."""

    def __init__(self, metrics: JobMetrics, batch_log: BatchLog | None = None) -> None:
        self.metrics = metrics
        self.batch_log = batch_log
        #: Set once Spark has told this listener that the query ended (it does so after
        #: ``stop()`` returns, from its listener bus).
        self.terminated = threading.Event()

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's interface
        log.info("query %s started (run %s)", event.name, event.runId)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        import json

        progress = json.loads(event.progress.json)
        m = self.metrics
        durations = progress.get("durationMs") or {}
        if "addBatch" in durations:
            # Spark also reports triggers that found no new data (no addBatch step, a few ms
            # or 0 of trigger time); they must not overwrite the last batch's figures.
            m.input_rate.set(progress.get("inputRowsPerSecond") or 0.0)
            m.processing_rate.set(progress.get("processedRowsPerSecond") or 0.0)
            m.batch_duration.set((durations.get("triggerExecution") or 0) / 1000)
            m.batch_id.set(progress.get("batchId", 0))
        else:
            log.debug("progress without a batch: %s", progress)
        lag = _lag(progress)
        if lag is not None:
            m.source_lag.set(lag)
        if self.batch_log is not None:
            self.batch_log.progress(
                int(progress.get("batchId", -1)),
                int(progress.get("numInputRows") or 0),
                lag,
                float(progress.get("processedRowsPerSecond") or 0.0),
            )

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        pass

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        try:
            if event.exception:
                log.error("query stopped with an error: %s", event.exception)
        finally:
            self.terminated.set()
