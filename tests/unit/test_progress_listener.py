"""The job's StreamingQueryListener: which progress reports move the batch gauges."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from groupwatch.spark.metrics import JobMetrics, ProgressListener


def _event(progress: dict[str, Any]) -> Any:
    return SimpleNamespace(progress=SimpleNamespace(json=json.dumps(progress)))


def _value(metrics: JobMetrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name)
    assert value is not None, name
    return value


BATCH = {
    "batchId": 7,
    "numInputRows": 120,
    "inputRowsPerSecond": 40.0,
    "processedRowsPerSecond": 30.0,
    "durationMs": {"addBatch": 3500, "latestOffset": 20, "triggerExecution": 4000},
    "sources": [
        {"endOffset": {"t": {"0": 100}}, "latestOffset": {"t": {"0": 130}}},
    ],
}
#: What Spark reports for a trigger that found nothing new: no addBatch step.
IDLE = {
    "batchId": 8,
    "numInputRows": 0,
    "inputRowsPerSecond": 0.0,
    "processedRowsPerSecond": 0.0,
    "durationMs": {"latestOffset": 0, "triggerExecution": 0},
    "sources": [
        {"endOffset": {"t": {"0": 130}}, "latestOffset": {"t": {"0": 130}}},
    ],
}


def test_a_batch_sets_the_batch_gauges_and_the_lag() -> None:
    metrics = JobMetrics()
    ProgressListener(metrics).onQueryProgress(_event(BATCH))
    assert _value(metrics, "groupwatch_batch_duration_seconds") == 4.0
    assert _value(metrics, "groupwatch_batch_id") == 7
    assert _value(metrics, "groupwatch_input_rows_per_second") == 40.0
    assert _value(metrics, "groupwatch_source_lag_records") == 30


def test_a_trigger_without_a_batch_keeps_the_last_batch_figures() -> None:
    metrics = JobMetrics()
    listener = ProgressListener(metrics)
    listener.onQueryProgress(_event(BATCH))
    listener.onQueryProgress(_event(IDLE))
    assert _value(metrics, "groupwatch_batch_duration_seconds") == 4.0
    assert _value(metrics, "groupwatch_batch_id") == 7
    assert _value(metrics, "groupwatch_processed_rows_per_second") == 30.0
    # The lag is a fact about the source, whatever the trigger did: caught up now.
    assert _value(metrics, "groupwatch_source_lag_records") == 0
