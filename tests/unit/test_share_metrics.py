"""The share gauges (``groupwatch_share_*{group,topic}``): each share partition's newest state
the job wrote, summed over the topic's partitions, a partition's later state replacing its
earlier one."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest

from groupwatch.spark.metrics import JobMetrics


def _row(partition: int, lag: int | None, in_flight: int, archived: int) -> dict[str, Any]:
    return {
        "group": "queue",
        "topic": "orders",
        "topic_id": "id",
        "partition": partition,
        "start_offset": 0,
        "lag_records": lag,
        "in_flight_records": in_flight,
        "archived_records": archived,
    }


def _value(m: JobMetrics, name: str) -> float | None:
    return m.registry.get_sample_value(name, {"group": "queue", "topic": "orders"})


def test_share_gauges_sum_the_newest_state_of_each_partition() -> None:
    m = JobMetrics()
    m.share_partitions([_row(0, None, 0, 0)])
    # No partition's lag known yet: no lag series (not a zero that reads as caught up).
    assert _value(m, "groupwatch_share_lag_records") is None
    assert b"groupwatch_share_lag_records{" not in generate_latest(m.registry)
    m.share_partitions([_row(0, 4, 2, 1), _row(1, 6, 0, 0)])
    assert _value(m, "groupwatch_share_lag_records") == 10
    assert _value(m, "groupwatch_share_in_flight_records") == 2
    assert _value(m, "groupwatch_share_archived_records") == 1
    # A later batch with partition 0 alone: partition 1's last state still counts.
    m.share_partitions([_row(0, 0, 0, 0)])
    assert _value(m, "groupwatch_share_lag_records") == 6
    assert _value(m, "groupwatch_share_archived_records") == 0


def test_a_removed_partition_leaves_the_sums_and_the_last_one_the_series() -> None:
    """A removal row (no start offset: the share coordinator's tombstone, the group or topic
    deleted) takes its partition out of the sums; the last one takes the series away, so an
    alert on a deleted share group's lag resolves instead of firing for good."""
    m = JobMetrics()
    m.share_partitions([_row(0, 4, 2, 1), _row(1, 6, 0, 0)])
    m.share_partitions([{**_row(1, None, 0, 0), "start_offset": None}])
    assert _value(m, "groupwatch_share_lag_records") == 4
    assert _value(m, "groupwatch_share_in_flight_records") == 2
    m.share_partitions([{**_row(0, None, 0, 0), "start_offset": None}])
    exposed = generate_latest(m.registry)
    for name in ("lag", "in_flight", "archived"):
        assert _value(m, f"groupwatch_share_{name}_records") is None
        assert f"groupwatch_share_{name}_records{{".encode() not in exposed
    # The group's name used again: its series come back.
    m.share_partitions([_row(0, 3, 0, 0)])
    assert _value(m, "groupwatch_share_lag_records") == 3
