"""The lag queries in dashboards/sql run by Spark on real Delta tables: the KAFKA-7026 fixture
plus lag tables in the contract's columns (``groupwatch.tables``) and lag findings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from groupwatch.delta.read import columns
from tests.dashboard import lag_scenario as ls
from tests.dashboard.scenario import GROUP, build, write
from tests.dashboard.test_sql import run

pytestmark = pytest.mark.spark
NEEDED = ("findings", "partition_ownership", "partition_lag", "lag_history")
C3 = ("c3-ccc", "c3", "/10.0.3.8", 3)


def stopped(fid: str, kind: str, partition: int, at: datetime, member: str) -> dict[str, Any]:
    return {
        "finding_id": fid,
        "kind": kind,
        "severity": "error" if kind == "consumer_stopped" else "warning",
        "group": GROUP,
        "generation": 3,
        "topic": "orders",
        "partition": partition,
        "member": member,
        "members": [member],
        "detail": f"orders-{partition} of {GROUP} has not moved",
        "evidence": json.dumps(
            {
                "lag_records": 41250,
                "lag_seconds": 372.0,
                "owner_client": "c3",
                "owner_host": "/10.0.3.8",
                "owner_generation": 3,
            }
        ),  # fmt: skip
        "detected_at": at,
    }


@pytest.fixture(scope="module")
def delta_root(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, datetime]:
    now = datetime.now(UTC).replace(microsecond=0)
    rs = tmp_path_factory.mktemp("lag-rs")
    build(rs, now)
    findings = [
        # Detected 5 minutes ago: the ownership history has c3-ccc on orders-1 since gen 2.
        stopped("s1", "consumer_stopped", 1, now - timedelta(minutes=5), "c3-ccc"),
        # Not a stop; and a stop before the window.
        stopped("l1", "consumer_lagging", 2, now - timedelta(minutes=5), "c2-bbb"),
        stopped("s0", "consumer_stopped", 1, now - timedelta(days=10), "c3-ccc"),
    ]
    write(rs, "findings", findings, mode="append")
    write(rs, "partition_lag", [
        ls.partition(GROUP, "orders", 1, 100, 41350, 400.0, "stopped", now, owner=C3),
        ls.partition(GROUP, "orders", 2, 100, 100, 0.0, "ok", now),
    ])  # fmt: skip
    history = ls.history(
        GROUP, "orders", now, [(50, 100, 20.0, "ok"), (5, 41250, 372.0, "stopped")]
    )
    history += ls.history(GROUP, "audit", now, [(50, 7, 1.0, "ok"), (5, 3, 0.5, "ok")])
    history += ls.history("payments", "payments", now, [(5, 12, 2.0, "lagging")])
    history += ls.history(GROUP, "orders", now, [(3 * 24 * 60, 999_999, 9999.0, "stopped")])
    write(rs, "lag_history", history)
    root = tmp_path_factory.mktemp("lag-spark")
    for name in NEEDED:
        cols = columns(name)
        ddl = ", ".join(f"`{c.name}` {c.ddl}" for c in cols)
        spark.sql(f"CREATE TABLE delta.`{root / name}` ({ddl}) USING DELTA")
        names = ", ".join(f"`{c.name}`" for c in cols)
        spark.sql(
            f"INSERT INTO delta.`{root / name}` ({names}) SELECT {names} FROM delta.`{rs / name}`"
        )
    return str(root), now


def test_lag_per_group_last_day(spark: Any, delta_root: tuple[str, datetime]) -> None:
    root, _ = delta_root
    rows = run(spark, "lag_per_group_last_day.sql", root)
    per: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        per.setdefault(r["group"], []).append(r)
    assert set(per) == {GROUP, "payments"}
    orders = per[GROUP]
    # Summed over the group's topics at each poll; the poll three days ago is not in the day.
    assert max(r["max_lag_records"] for r in orders) == 41250 + 3
    assert min(r["max_lag_records"] for r in orders) in (107, 41253)
    assert max(r["max_lag_seconds"] for r in orders) == 372.0
    assert sum(r["polls"] for r in orders) == 2
    assert orders[-1]["worst_status"] == "stopped"
    assert [(r["max_lag_records"], r["worst_status"]) for r in per["payments"]] == [(12, "lagging")]


def test_owner_of_stopped_partition(spark: Any, delta_root: tuple[str, datetime]) -> None:
    root, _ = delta_root
    rows = run(
        spark,
        "owner_of_stopped_partition.sql",
        root,
        since="current_timestamp() - INTERVAL 7 DAYS",
    )
    assert len(rows) == 1
    (r,) = rows
    assert (r["group"], r["topic"], r["partition"]) == (GROUP, "orders", 1)
    assert (r["stopped_member"], r["stopped_client"], r["stopped_host"]) == (
        "c3-ccc",
        "c3",
        "/10.0.3.8",
    )
    assert r["stopped_generation"] == 3 and r["lag_records_then"] == 41250
    assert (r["owner_by_history"], r["owner_since_generation"]) == ("c3-ccc", 2)
    assert (r["status_now"], r["lag_records_now"], r["owner_now"]) == ("stopped", 41250, "c3-ccc")


def test_the_queries_name_only_contract_columns() -> None:
    sql = Path(__file__).resolve().parents[2] / "dashboards" / "sql"
    text = (sql / "owner_of_stopped_partition.sql").read_text()
    for col in ("owner_member", "lag_records", "status"):
        assert col in text
    assert "lag_history" in (sql / "lag_per_group_last_day.sql").read_text()
