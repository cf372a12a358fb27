"""Every analyst query in dashboards/sql runs on real Delta tables created with Spark from the
DDL in tables.py, filled with the KAFKA-7026 fixture rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupwatch.tables import TABLES
from tests.dashboard.scenario import GROUP, build

pytestmark = pytest.mark.spark
SQL = Path(__file__).resolve().parents[2] / "dashboards" / "sql"
#: The tables the queries read (creating all eight costs Spark time for nothing).
NEEDED = ("group_snapshots", "member_assignments", "partition_ownership", "findings", "quarantine")


#: When the fixture's rows were made (``build``'s ``now``), set by ``delta_root``: a query about
#: a moment of the fixture names it from this, not from the clock at query time, which a slow
#: Spark start on a loaded machine put minutes later.
BUILT: dict[str, Any] = {}


@pytest.fixture(scope="module")
def delta_root(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    rs_root = tmp_path_factory.mktemp("delta-rs")
    BUILT.update(build(rs_root))
    root = tmp_path_factory.mktemp("delta-spark")
    for name in NEEDED:
        table = TABLES[name]
        part = f" PARTITIONED BY ({', '.join(table.partition_by)})" if table.partition_by else ""
        spark.sql(f"CREATE TABLE delta.`{root / name}` ({table.ddl}) USING DELTA{part}")
        cols = ", ".join(f"`{c}`" for c in table.column_names)
        spark.sql(
            f"INSERT INTO delta.`{root / name}` ({cols}) "
            f"SELECT {cols} FROM delta.`{rs_root / name}`"
        )
    return str(root)


def run(spark: Any, name: str, root: str, **params: str) -> list[dict[str, Any]]:
    text = (SQL / name).read_text().replace("${delta_root}", root)
    for key, value in params.items():
        text = text.replace("${" + key + "}", value)
    assert "${" not in text.replace("-- ", ""), f"unfilled placeholder in {name}"
    return [r.asDict(recursive=True) for r in spark.sql(text).collect()]


def test_every_sql_file_is_tested() -> None:
    tested = {
        "critical_groups_this_week.sql",
        "partition_owner_at_time.sql",
        "rebalances_per_group_per_day.sql",
        "members_on_old_protocol_versions.sql",
        "open_overlaps_now.sql",
        "findings_by_kind_per_day.sql",
        "quarantine_by_error_kind.sql",
        # tests/dashboard/test_sql_lag.py
        "lag_per_group_last_day.sql",
        "owner_of_stopped_partition.sql",
        # tests/dashboard/test_sql_share.py
        "share_lag_now.sql",
        "share_archived_per_day.sql",
    }
    assert {p.name for p in SQL.glob("*.sql")} == tested


def test_critical_groups_this_week(spark: Any, delta_root: str) -> None:
    rows = run(spark, "critical_groups_this_week.sql", delta_root)
    assert [(r["group"], r["critical_findings"]) for r in rows] == [(GROUP, 1)]


def test_partition_owner_at_time(spark: Any, delta_root: str) -> None:
    def owners(at: str) -> list[str]:
        rows = run(
            spark,
            "partition_owner_at_time.sql",
            delta_root,
            group=f"'{GROUP}'",
            topic="'orders'",
            partition="0",
            at=at,
        )
        return [r["member_id"] for r in rows]

    rows = run(
        spark,
        "partition_owner_at_time.sql",
        delta_root,
        group=f"'{GROUP}'",
        topic="'orders'",
        partition="0",
        at="current_timestamp()",
    )
    assert sorted(r["member_id"] for r in rows) == ["c1-aaa", "c2-bbb"]  # the overlap
    # 17 minutes before the fixture's "now" (between its generations 1 and 2) only c1 owned it
    built = BUILT["now"].strftime("%Y-%m-%d %H:%M:%S")
    assert owners(f"TIMESTAMP '{built}+00:00' - INTERVAL 17 MINUTES") == ["c1-aaa"]


def test_rebalances_per_group_per_day(spark: Any, delta_root: str) -> None:
    rows = run(spark, "rebalances_per_group_per_day.sql", delta_root)
    # The fixture's generations are 20 to 10 minutes old: shortly after midnight UTC they
    # fall on two days, so a group may have two rows; their sum is what does not move.
    per: dict[str, int] = {}
    for r in rows:
        per[r["group"]] = per.get(r["group"], 0) + r["rebalances"]
    assert per[GROUP] == 3 and per["payments"] == 2
    assert len({r["day"] for r in rows}) <= 2


def test_members_on_old_protocol_versions(spark: Any, delta_root: str) -> None:
    rows = run(spark, "members_on_old_protocol_versions.sql", delta_root)
    # payments' latest generation is all on v3; orders-etl's members still send v1
    assert {r["group"] for r in rows} == {GROUP, "billing"}
    assert all(r["subscription_version"] == 1 and r["newest_version_in_fleet"] == 3 for r in rows)


def test_open_overlaps_now(spark: Any, delta_root: str) -> None:
    rows = run(spark, "open_overlaps_now.sql", delta_root)
    assert [(r["group"], r["topic"], r["partition"]) for r in rows] == [(GROUP, "orders", 0)]


def test_findings_by_kind_per_day(spark: Any, delta_root: str) -> None:
    rows = run(spark, "findings_by_kind_per_day.sql", delta_root)
    assert sum(r["findings"] for r in rows) == 5
    assert rows[0]["severity"] == "critical" or rows[0]["day"] != rows[-1]["day"]


def test_quarantine_by_error_kind(spark: Any, delta_root: str) -> None:
    rows = run(spark, "quarantine_by_error_kind.sql", delta_root)
    assert [(r["error_kind"], r["records"]) for r in rows] == [
        ("truncated", 2),
        ("unknown_version", 1),
    ]
