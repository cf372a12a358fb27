"""The running job's own Prometheus endpoint: what an operator graphs and alerts on."""

from __future__ import annotations

import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from groupwatch_dev.scenarios.builder import load, raw_records
from tests.dashboard.realjob import SCENARIO, RealJob

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_endpoint_reports_records_findings_lag_and_batches(real_job: RealJob) -> None:
    real_job.incident()
    replayed = sum(1 for _ in raw_records(load(SCENARIO)))
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def settled() -> bool:
        # The counters move after the batch's writes, the gauges after Spark's progress event.
        nonlocal seen
        seen = _scrape(real_job.metrics_url)
        return (
            seen.get(("groupwatch_records_total", (("record_type", "group_metadata"),)), 0)
            >= replayed
            and seen.get(("groupwatch_source_lag_records", ()), -1) == 0
            and seen.get(("groupwatch_batch_duration_seconds", ()), 0) > 0
        )

    real_job.wait_for(settled, 120, "metrics of the replayed incident")
    key = (("kind", "assignment_overlap"), ("severity", "critical"))
    assert seen[("groupwatch_findings_total", key)] >= 1
    # KAFKA-7026's returning member claims with no generation: its stale claim is inferred.
    key = (("kind", "stale_owned_partitions"), ("severity", "warning"))
    assert seen[("groupwatch_findings_total", key)] >= 1
    # Series of kinds that did not occur exist at zero, so rules see their first increase.
    key = (("kind", "rebalance_stuck"), ("severity", "error"))
    assert seen[("groupwatch_findings_total", key)] == 0
    assert ("groupwatch_quarantined_records_total", (("stage", "decode"),)) in seen
    assert seen[("groupwatch_batch_id", ())] >= 0
    # Set by the batch that wrote the incident, possibly for an earlier test of this package.
    assert 0 < seen[("groupwatch_last_batch_timestamp_seconds", ())] <= time.time()
    assert ("groupwatch_input_rows_per_second", ()) in seen
    assert ("groupwatch_processed_rows_per_second", ()) in seen
