"""The dashboard's lag views over real Delta tables (delta-rs, the contract's columns): the
fleet page's lag columns, their order and filter; the group page's partitions with their
owners and lag over time; and a deployment with no lag tables, where lag is "not yet known"."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from xml.etree.ElementTree import Element

import pandas as pd  # type: ignore[import-untyped]
import pytest

from groupwatch.dashboard.filters import Filters, parse
from groupwatch.dashboard.pages import Pages
from groupwatch.dashboard.views import lag
from groupwatch.delta.read import DeltaStore
from tests.dashboard import lag_scenario as ls
from tests.dashboard.markup import classes, one, page, text
from tests.dashboard.scenario import GROUP, build

NOW = datetime.now(UTC).replace(microsecond=0)
C2 = ("c2-bbb", "orders-client-2", "/10.0.3.7", 3)
C3 = ("c3-ccc", "orders-client-3", "/10.0.3.8", 3)
PARTITIONS = [
    ls.partition(GROUP, "orders", 1, 997, 1000, 1.5, "ok", NOW, owner=C3),
    ls.partition(GROUP, "orders", 0, 8750, 50000, 372.0, "stopped", NOW, owner=C2),
    ls.partition(GROUP, "orders", 2, 100, 1000, 7200.0, "lagging", NOW, at_least=True, owner=C2),
    ls.partition(GROUP, "audit", 0, 10, 10, 0.0, "idle", NOW),
    ls.partition("payments", "payments", 0, 0, 60000, 2.0, "ok", NOW),
    ls.partition("billing", "billing", 0, 5, 5, 0.0, "idle", NOW),
]
HISTORY = ls.history(GROUP, "orders", NOW, [(30, 100, 4.0, "ok"), (10, 20000, 90.0, "lagging")])
HISTORY += ls.history(GROUP, "audit", NOW, [(30, 0, 0.0, "idle"), (10, 0, 0.0, "idle")])


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(tables with lag, the same tables from a job before lag)."""
    before = tmp_path_factory.mktemp("before-lag")
    build(before, NOW)
    with_lag = tmp_path_factory.mktemp("with-lag")
    shutil.copytree(before, with_lag, dirs_exist_ok=True)
    ends = [
        {"topic": "orders", "partition": 0, "start_offset": 0, "end_offset": 50000,
         "observed_at": NOW}
    ]  # fmt: skip
    ls.write_lag(with_lag, PARTITIONS, HISTORY, ends)
    return with_lag, before


def render(root: Path, path: str, query: str = "") -> Element:
    markup = page(Pages(DeltaStore(root)).render(path, parse(query)))
    assert "failed to render" not in text(markup), text(markup)
    return markup


def fleet_rows(markup: Element) -> list[Element]:
    return markup.findall(".//table[@id='fleet-table']/tbody/tr[@data-group]")


#: The contract (LAG_CONTRACT.md, issue 30) in Delta's own type names, written out here rather
#: than taken from ``groupwatch.tables``: a typo there must fail this test.
CONTRACT = {
    "partition_lag": "group string, topic string, partition integer, committed_offset long, "
    "commit_time timestamp, end_offset long, lag_records long, lag_seconds double, "
    "lag_seconds_at_least boolean, status string, owner_member string, owner_client string, "
    "owner_host string, owner_generation integer, observed_at timestamp",
    "end_offsets": "topic string, partition integer, start_offset long, end_offset long, "
    "observed_at timestamp",
    "lag_history": "group string, topic string, observed_at timestamp, partitions integer, "
    "lag_records long, lag_seconds double, status string",
}


def test_the_fixture_tables_have_the_contracts_types(roots: tuple[Path, Path]) -> None:
    from deltalake import DeltaTable

    for table, spec in CONTRACT.items():
        fields = DeltaTable(str(roots[0] / table)).schema().fields
        written = [f"{f.name} {f.type.type}" for f in fields]
        # The contract's columns first, in its order; a table may add its own after them.
        assert ", ".join(written[: spec.count(",") + 1]) == spec, table


def test_group_lag_sums_records_takes_the_largest_seconds_and_the_worst_status() -> None:
    frame = pd.DataFrame(PARTITIONS)
    got = lag.group_lag(frame)
    orders = got.loc[GROUP]
    assert orders["lag_records"] == 3 + 41250 + 900 + 0
    assert orders["lag_seconds"] == 7200.0 and bool(orders["lag_seconds_at_least"])
    assert orders["lag_status"] == "stopped"
    assert got.loc["billing", "lag_status"] == "idle"
    assert not bool(got.loc["payments", "lag_seconds_at_least"])
    # Unknown end offsets: records and seconds unknown, never 0.
    unknown = lag.group_lag(pd.DataFrame([ls.partition("x", "t", 0, 5, None, None, "ok", NOW)]))
    assert pd.isna(unknown.loc["x", "lag_records"]) and pd.isna(unknown.loc["x", "lag_seconds"])


def test_fleet_page_shows_each_groups_lag(roots: tuple[Path, Path]) -> None:
    markup = render(roots[0], "/", "?sort=group")
    rows = {r.get("data-group"): r for r in fleet_rows(markup)}
    orders = rows[GROUP]
    assert orders.get("data-lag-status") == "stopped"
    cells = {next(iter(classes(td))): td for td in orders.findall("td") if classes(td)}
    assert text(cells["lag-records"]) == "42,153"
    assert text(cells["lag-seconds"]) == "≥ 2 h 0 min"
    assert text(cells["lag"]) == "stopped"
    assert rows["billing"].get("data-lag-status") == "idle"
    assert text(one(markup, ".//div[@id='kpi-lag']/b")) == "1"
    assert markup.find(".//*[@id='lag-unknown']") is None
    # The headers order the table.
    assert one(markup, ".//a[@id='sort-lag']").get("href") == "/?sort=lag"


@pytest.mark.parametrize(
    ("sort", "order"),
    [
        ("lag", [GROUP, "payments", "billing"]),
        ("lag_records", ["payments", GROUP, "billing"]),
        ("lag_status", [GROUP, "payments", "billing"]),
    ],
)
def test_fleet_sorts_by_lag(roots: tuple[Path, Path], sort: str, order: list[str]) -> None:
    shown = [r.get("data-group") for r in fleet_rows(render(roots[0], "/", f"?sort={sort}"))]
    assert shown == order


def test_fleet_filters_by_lag_status(roots: tuple[Path, Path]) -> None:
    assert [r.get("data-group") for r in fleet_rows(render(roots[0], "/", "?lag=idle"))] == [
        "billing"
    ]
    assert parse("?lag=late").rejected == ("lag",)
    assert parse(Filters(lag="stalled").query()).lag == "stalled"


def test_group_page_lists_partitions_worst_first_with_owners(roots: tuple[Path, Path]) -> None:
    markup = render(roots[0], "/group", f"?group={GROUP}")
    table = one(markup, ".//table[@id='lag-partitions']")
    rows = table.findall("tbody/tr")
    assert [(r.get("data-topic"), r.get("data-partition"), r.get("data-status")) for r in rows] == [
        ("orders", "0", "stopped"),
        ("orders", "2", "lagging"),
        ("orders", "1", "ok"),
        ("audit", "0", "idle"),
    ]
    stopped = rows[0]
    assert stopped.get("data-owner") == "c2-bbb" and stopped.get("data-lag-records") == "41250"
    cell = {c: text(one(stopped, f"td[@class='{c}']")) for c in
            ("committed", "end", "lag-records", "lag-seconds", "owner-member", "owner-client",
             "owner-host", "owner-generation")}  # fmt: skip
    assert cell == {
        "committed": "8,750",
        "end": "50,000",
        "lag-records": "41,250",
        "lag-seconds": "6 min 12 s",
        "owner-member": "c2-bbb",
        "owner-client": "orders-client-2",
        "owner-host": "/10.0.3.7",
        "owner-generation": "3",
    }
    assert text(one(rows[1], "td[@class='lag-seconds']")) == "≥ 2 h 0 min"
    # Nobody owns the idle partition: blank owner, not a made-up one.
    assert text(one(rows[3], "td[@class='owner-member']")) == ""
    assert one(markup, ".//div[@id='lag-pager']").get("data-total") == "4"
    assert markup.find(".//*[@id='lag-records-over-time']") is not None
    assert markup.find(".//*[@id='lag-seconds-over-time']") is not None


def test_lag_over_time_is_per_topic_in_the_window() -> None:
    # Times from now, not from the module's import: a long session runs this test long after
    # it collected the module, and "the last 15 minutes" is measured from now.
    now = datetime.now(UTC).replace(microsecond=0)
    history = ls.history(GROUP, "orders", now, [(30, 100, 4.0, "ok"), (10, 20000, 90.0, "lagging")])
    history += ls.history(GROUP, "audit", now, [(30, 0, 0.0, "idle"), (10, 0, 0.0, "idle")])
    frame = pd.DataFrame(history)
    for col in ("observed_at",):
        frame[col] = pd.to_datetime(frame[col], utc=True)
    whole = lag.over_time(frame, Filters())
    assert list(whole["topic"]) == ["audit", "audit", "orders", "orders"]
    recent = lag.over_time(frame, Filters(since="15m", topic="orders"))
    assert list(recent["lag_records"]) == [20000]


def test_without_lag_tables_the_pages_say_lag_is_not_yet_known(roots: tuple[Path, Path]) -> None:
    fleet = render(roots[1], "/")
    assert "Lag not yet known" in text(one(fleet, ".//p[@id='lag-unknown']"))
    rows = fleet_rows(fleet)
    assert rows and {r.get("data-lag-status") for r in rows} == {""}
    assert text(one(fleet, ".//div[@id='kpi-lag']/b")) == "?"
    # Sorting by lag still works (every group's lag unknown): nothing fails.
    assert len(fleet_rows(render(roots[1], "/", "?sort=lag"))) == len(rows)
    group = render(roots[1], "/group", f"?group={GROUP}")
    assert "Lag not yet known" in text(one(group, ".//p[@id='lag-unknown']"))
    assert group.find(".//table[@id='lag-partitions']") is None


def test_a_group_with_no_committed_offset_shows_unknown_lag(roots: tuple[Path, Path]) -> None:
    only_orders = [p for p in PARTITIONS if p["group"] == GROUP]
    root = roots[0].parent / "partial-lag"
    shutil.copytree(roots[1], root, dirs_exist_ok=True)
    ls.write_lag(root, only_orders)
    rows = {r.get("data-group"): r for r in fleet_rows(render(root, "/"))}
    assert rows["billing"].get("data-lag-status") == ""
    assert "unknown" in text(rows["billing"])
    group = render(root, "/group", "?group=billing")
    assert "no committed offsets" in text(one(group, ".//table[@id='lag-partitions']"))
    assert group.find(".//*[@id='lag-no-history']") is not None


def test_duration_text() -> None:
    assert lag.duration(None) == "" and lag.duration(float("nan")) == ""
    assert lag.duration(59.9) == "59 s" and lag.duration(372) == "6 min 12 s"
    assert lag.duration(3 * 86400 + 7200, True) == "≥ 3 d 2 h"
    assert lag.duration(10, float("nan")) == "10 s"


def test_warming_prepares_the_fleet_page_before_anyone_asks(roots: tuple[Path, Path]) -> None:
    pages = Pages(DeltaStore(roots[0]))
    names = lambda: {key[0] for key in pages.memo._entries}  # noqa: E731
    assert not names()
    assert pages.warm() > 0
    assert {"fleet-base", "group-lag"} <= names()
    folds = pages.memo._folds
    assert {("fleet", "group_snapshots"), ("topics", "member_assignments")} <= set(folds)
    kept = dict(pages.memo._entries)
    read = {k: f.files_read for k, f in folds.items()}
    pages.render("/", parse(""))  # the first request finds them: nothing computed again
    assert {k: id(v) for k, v in pages.memo._entries.items()} == {k: id(v) for k, v in kept.items()}
    assert {k: f.files_read for k, f in folds.items()} == read
