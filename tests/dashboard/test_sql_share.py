"""The share-group queries in dashboards/sql run by Spark on real Delta tables, in the
contract's columns (``groupwatch.tables``): share partitions of two share groups, one with a
poison record, and their findings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from groupwatch.tables import TABLES
from tests.dashboard.scenario import write
from tests.dashboard.test_sql import run

pytestmark = pytest.mark.spark
NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _part(group: str, partition: int, lag: int | None, in_flight: int, archived: int) -> Any:
    return {
        "group": group,
        "topic": "orders",
        "topic_id": "T3JkZXJzT3JkZXJzT3JkZQ",
        "partition": partition,
        "start_offset": 10,
        "state_epoch": 0,
        "delivery_complete_count": 0,
        "end_offset": None if lag is None else 10 + lag,
        "lag_records": lag,
        "in_flight_records": in_flight,
        "archived_records": archived,
        "archived_ranges": [{"first_offset": 3, "last_offset": 3}] if archived else [],
        "in_flight_batches": [],
        "max_delivery_count": 5 if archived else 1,
        "observed_at": NOW - timedelta(minutes=partition),
    }


def _archived(fid: str, partition: int, offsets: list[list[int]], at: datetime) -> Any:
    return {
        "finding_id": fid,
        "kind": "share_records_archived",
        "severity": "warning",
        "group": "queue",
        "topic": "orders",
        "partition": partition,
        "detail": "archived",
        "evidence": json.dumps(
            {"archived_offsets": offsets, "archived_records": sum(b - a + 1 for a, b in offsets)}
        ),
        "detected_at": at,
    }


@pytest.fixture(scope="module")
def delta_root(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    rs = tmp_path_factory.mktemp("share-rs")
    write(
        rs,
        "share_partition_state",
        [
            _part("queue", 0, 4, 2, 1),
            _part("queue", 1, 6, 0, 0),
            _part("healthy", 0, 0, 0, 0),
            _part("healthy", 1, None, 0, 0),  # lag not known: left out of the sum
        ],
    )
    write(
        rs,
        "findings",
        [
            _archived("a1", 0, [[3, 3]], NOW - timedelta(hours=1)),
            _archived("a2", 1, [[7, 9]], NOW - timedelta(hours=2)),
            _archived("a0", 0, [[1, 1]], NOW - timedelta(days=1)),
            # Another kind: not counted.
            {**_archived("x", 0, [[5, 5]], NOW), "kind": "share_delivery_retries"},
        ],
    )
    root = tmp_path_factory.mktemp("share-spark")
    for name in ("share_partition_state", "findings"):
        table = TABLES[name]
        spark.sql(f"CREATE TABLE delta.`{root / name}` ({table.ddl}) USING DELTA")
        cols = ", ".join(f"`{c}`" for c in table.column_names)
        spark.sql(
            f"INSERT INTO delta.`{root / name}` ({cols}) SELECT {cols} FROM delta.`{rs / name}`"
        )
    return str(root)


def test_share_lag_now(spark: Any, delta_root: str) -> None:
    rows = run(spark, "share_lag_now.sql", delta_root)
    got = [
        (
            r["group"],
            r["topic"],
            r["partitions"],
            r["share_lag_records"],
            r["in_flight_records"],
            r["archived_records"],
            r["max_delivery_count"],
        )
        for r in rows
    ]
    assert got == [("queue", "orders", 2, 10, 2, 1, 5), ("healthy", "orders", 2, 0, 0, 0, 1)]
    # Partition 0's state is the newest of each group (written a minute after partition 1's).
    assert rows[0]["newest_state_at"] is not None
    assert rows[0]["newest_state_at"] == rows[1]["newest_state_at"]


def test_share_archived_per_day(spark: Any, delta_root: str) -> None:
    rows = run(spark, "share_archived_per_day.sql", delta_root)
    got = [
        (r["group"], str(r["day"]), r["findings"], r["archived_records"], r["partitions"])
        for r in rows
    ]
    assert got == [
        ("queue", "2026-03-02", 2, 4, [0, 1]),
        ("queue", "2026-03-01", 1, 1, [0]),
    ]
    assert rows[0]["offsets"] == ["0@[[3,3]]", "1@[[7,9]]"]
