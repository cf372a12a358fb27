"""Dashboard data: URL filters and page views over delta-rs reads of the KAFKA-7026 tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch.dashboard import views
from groupwatch.dashboard.filters import Filters, parse
from groupwatch.delta.read import DeltaStore
from tests.dashboard.scenario import GROUP, build


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DeltaStore:
    root = tmp_path_factory.mktemp("delta")
    build(root)
    return DeltaStore(root)


def test_filters_round_trip_and_reject_bad_values() -> None:
    f = parse("?group=orders%2Fetl%27%3B--&generation=3&severity=critical&since=24h&x=1")
    assert f.group == "orders/etl';--" and f.generation == 3 and f.severity == "critical"
    assert parse(f.query()) == f
    bad = parse("?generation=3;drop&severity=fatal&since=yesterday&group=%00")
    assert bad == Filters() and set(bad.rejected) == {"generation", "severity", "since", "group"}
    assert (
        f.href("group", generation=None) == "/group?group=orders%2Fetl%27%3B--"
        "&severity=critical&since=24h"
    )


def test_missing_tables_read_empty(tmp_path: Path) -> None:
    s = DeltaStore(tmp_path)
    assert s.read("findings").empty and "finding_id" in s.read("findings").columns
    assert views.fleet(
        s.read("group_snapshots"), s.read("findings"), s.read("member_assignments"), Filters()
    ).empty
    with pytest.raises(KeyError):
        s.path("../etc")


def test_fleet_puts_the_critical_group_first(store: DeltaStore) -> None:
    fleet = views.fleet(
        store.read("group_snapshots"),
        store.read("findings"),
        store.read("member_assignments"),
        Filters(),
    )
    assert list(fleet["group"])[0] == GROUP
    health = dict(zip(fleet["group"], fleet["health"], strict=True))
    assert health == {GROUP: "critical", "billing": "ok", "payments": "ok"}
    only = views.fleet(
        store.read("group_snapshots"),
        store.read("findings"),
        store.read("member_assignments"),
        parse("?severity=critical"),
    )
    assert list(only["group"]) == [GROUP]


def test_no_group_falls_out_of_the_fleet(tmp_path: Path) -> None:
    """A group whose snapshots are gone (the state a table-by-table retention left the demo's
    replayed incidents in) is still listed, from its findings and members, with the health its
    findings give: critical, and first."""
    from deltalake import DeltaTable

    build(tmp_path)
    DeltaTable(str(tmp_path / "group_snapshots")).delete(f"\"group\" = '{GROUP}'")
    store = DeltaStore(tmp_path)
    assert GROUP not in set(store.read("group_snapshots")["group"])
    fleet = views.fleet(
        store.read("group_snapshots"),
        store.read("findings"),
        store.read("member_assignments"),
        Filters(),
    )
    health = dict(zip(fleet["group"], fleet["health"], strict=True))
    assert health == {GROUP: "critical", "billing": "ok", "payments": "ok"}
    assert list(fleet["group"])[0] == GROUP
    only_members = views.fleet(
        store.read("group_snapshots").iloc[0:0],
        store.read("findings").iloc[0:0],
        store.read("member_assignments"),
        Filters(),
    )
    assert set(only_members["group"]) == {GROUP, "billing", "payments"}


def test_a_group_in_one_table_alone_is_on_the_fleet_page(tmp_path: Path) -> None:
    """Groups with rows only in ``partition_ownership``, ``group_state`` or an offsets table
    (the fleet reads just their group column, file by file) are listed by the fleet page's own
    data; one of them with an open critical finding is first, and a batch that adds a group to
    one of those tables lists it at the next request."""
    from datetime import UTC, datetime

    from groupwatch.dashboard.memo import Memo
    from groupwatch.dashboard.pages import fleet as fleet_page
    from tests.dashboard.scenario import write

    build(tmp_path)
    at = datetime.now(UTC)
    only = {
        "partition_ownership": "only-ownership",
        "group_state": "only-state",
        "group_offsets": "only-offsets",
        "committed_offsets": "only-committed",
        "committed_changes": "only-changes",
    }
    row = {"topic": "t", "partition": 0, "member_id": "m", "from_generation": 1, "batch_id": 1,
           "committed_offset": 5, "commits": 1, "state": "{}", "from_time": at}  # fmt: skip
    for table, group in only.items():
        write(tmp_path, table, [{**row, "group": group}], mode="append")
    # The ownership-only group has an open critical finding (its snapshots are gone).
    crit = {"finding_id": "f-own", "kind": "assignment_overlap", "severity": "critical",
            "group": "only-ownership", "generation": 3, "detected_at": at}  # fmt: skip
    write(tmp_path, "findings", [crit], mode="append")
    memo = Memo(DeltaStore(tmp_path))
    rows = fleet_page.table(memo, Filters())
    health = dict(zip(rows["group"], rows["health"], strict=True))
    assert set(only.values()) <= set(health), sorted(health)
    assert health["only-ownership"] == "critical" and health["only-state"] == "ok"
    assert set(list(rows["group"])[:2]) == {GROUP, "only-ownership"}
    named = fleet_page.table(memo, parse("?name=only-"))
    assert sorted(named["group"]) == sorted(only.values())
    write(tmp_path, "group_state", [{**row, "group": "later-state"}], mode="append")
    assert "later-state" in set(fleet_page.table(memo, Filters())["group"])


def test_matrix_marks_overlap_and_stale_claims(store: DeltaStore) -> None:
    m = views.ownership_matrix(
        store.read("member_assignments"),
        store.read("findings"),
        store.read("group_offsets"),
        GROUP,
        None,
    )
    assert m.generation == 3 and m.generations == [1, 2, 3]
    rows = {(r.topic, r.partition): r for r in m.rows}
    assert rows[("orders", 0)].overlap and "assignment_overlap" in rows[("orders", 0)].kinds
    assert not rows[("orders", 2)].overlap
    assert rows[("orders", 0)].cells["c1-aaa"].stale_claim
    assert [mm.member_id for mm in m.members if mm.stale] == ["c1-aaa"]
    older = views.ownership_matrix(
        store.read("member_assignments"),
        store.read("findings"),
        store.read("group_offsets"),
        GROUP,
        2,
    )
    assert not any(r.overlap for r in older.rows)


def test_timeline_diff_and_history(store: DeltaStore) -> None:
    tl = views.timeline(store.read("group_snapshots"), store.read("member_assignments"), GROUP)
    assert list(tl["generation"]) == [1, 2, 3]
    assert list(tl["left"]) == ["", "c1-aaa", ""] and tl["joined"].iloc[2] == "c1-aaa"
    diff = views.expected_diff(store.read("findings"), GROUP, 3)
    assert diff.to_dict("records") == [
        {"member": "c1-aaa", "actual_only": "orders-0", "expected_only": ""}
    ]
    hist = views.partition_history(
        store.read("partition_ownership"), parse("?group=orders-etl&topic=orders&partition=0")
    )
    assert list(hist["member_id"]) == ["c1-aaa", "c2-bbb", "c1-aaa"]


def test_data_health(store: DeltaStore) -> None:
    q = views.quarantine_counts(store.read("quarantine"), Filters())
    assert dict(zip(q["error_kind"], q["count"], strict=True)) == {
        "truncated": 2,
        "unknown_version": 1,
    }
    v = views.validation_summary(store.read("validation_results"), Filters())
    assert v["success"].all() and v["failures_in_window"].sum() == 1


def test_pages_render_without_a_browser(store: DeltaStore) -> None:
    from groupwatch.dashboard.app import create_app
    from groupwatch.dashboard.pages import Pages

    create_app(store)
    pages = Pages(store)
    for path in ("/", "/group", "/partitions", "/health", "/nope"):
        assert pages.render(path, parse(f"?group={GROUP}"))
    assert "ownership-matrix" in str(pages.render("/group", parse(f"?group={GROUP}")))


def test_the_expected_assignment_beside_the_actual_one_on_a_critical_generation(
    store: DeltaStore,
) -> None:
    from groupwatch.dashboard.views.expected import expected_beside_actual

    def beside(group: str, generation: int) -> dict[str, tuple[str, str]]:
        frame = expected_beside_actual(
            store.read("member_assignments"),
            store.read("findings"),
            store.read("group_snapshots"),
            group,
            generation,
        )
        return {r["member"]: (r["actual"], r["expected"]) for _, r in frame.iterrows()}

    # The sticky_divergence evidence of the overlapping generation: c1-aaa should not hold
    # orders-0, which c2-bbb holds too.
    assert beside(GROUP, 3) == {
        "c1-aaa": ("orders-0", ""),
        "c2-bbb": ("orders-0, orders-2", "orders-0, orders-2"),
        "c3-ccc": ("orders-1", "orders-1"),
    }
    # Nothing critical there: nothing beside.
    assert beside("billing", 5) == {}
