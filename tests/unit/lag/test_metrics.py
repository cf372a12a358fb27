"""The lag gauges of the contract, set from a poll (groupwatch.spark.lag_metrics.set_metrics)."""

from __future__ import annotations

from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.lag.model import Commit, EndOffset
from groupwatch.detect.lag.poll import LagKeeper
from groupwatch.spark.lag_metrics import set_metrics
from groupwatch.spark.metrics import JobMetrics


def value(m: JobMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_gauges_per_group_and_topic_and_per_partition_only_when_asked() -> None:
    m = JobMetrics()
    keeper = LagKeeper(LagRules())
    keeper.observe(
        [EndOffset("t", p, 0, e, ms) for ms in (0, 15_000) for p, e in ((0, 100), (1, 50))]
    )
    commits = [Commit("g", "t", 0, 70, 1000), Commit("g", "t", 1, 50, 1000)]
    series = set_metrics(m, keeper.judge(commits, {}), False, set())
    assert value(m, "groupwatch_lag_records", group="g", topic="t") == 30
    assert value(m, "groupwatch_lag_seconds", group="g", topic="t") is not None
    assert value(m, "groupwatch_lag_status", group="g", topic="t", status="ok") == 1
    assert value(m, "groupwatch_partition_lag_records", group="g", topic="t", partition="0") is None
    series = set_metrics(m, keeper.judge(commits, {}), True, series)
    assert value(m, "groupwatch_partition_lag_records", group="g", topic="t", partition="0") == 30
    # Caught up: the status series moves to idle, the ok one goes; a gone group's series go.
    caught = [Commit("g", "t", 0, 100, 2000), Commit("g", "t", 1, 50, 2000)]
    series = set_metrics(m, keeper.judge(caught, {}), True, series)
    assert value(m, "groupwatch_lag_status", group="g", topic="t", status="idle") == 1
    assert value(m, "groupwatch_lag_status", group="g", topic="t", status="ok") is None
    set_metrics(m, keeper.judge([], {}), True, series)
    assert value(m, "groupwatch_lag_records", group="g", topic="t") is None
    assert value(m, "groupwatch_partition_lag_records", group="g", topic="t", partition="0") is None
