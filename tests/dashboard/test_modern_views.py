"""KIP-848 consumer, streams and share groups on the dashboard's pages, from delta-rs tables
(tests/dashboard/modern_scenario.py), and the pages on tables written before the modern-group
columns existed."""

from __future__ import annotations

from pathlib import Path
from xml.etree.ElementTree import Element

import pytest
from deltalake import DeltaTable

from groupwatch.dashboard import modern, views
from groupwatch.dashboard.filters import Filters, parse
from groupwatch.dashboard.pages import Pages
from groupwatch.delta.read import DeltaStore
from tests.dashboard import modern_scenario, scenario
from tests.dashboard.markup import classes, one, page, text
from tests.dashboard.modern_scenario import CHECKOUT, LEDGER, SHARE, STREAMS


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DeltaStore:
    root = tmp_path_factory.mktemp("modern")
    modern_scenario.build(root)
    return DeltaStore(root)


def render(store: DeltaStore, path: str, query: str) -> Element:
    components = Pages(store).render(path, parse(query))
    root = page(components)
    assert "failed to render" not in text(root), text(root)
    return root


def member_row(root: Element, member: str) -> Element:
    return one(root, f".//table[@id='members-table']//tr[@data-member='{member}']")


def cell(row: Element, name: str) -> str:
    """The text of the row's cell of class ``name`` (a cell may carry more classes)."""
    found = [td for td in row.findall("td") if name in classes(td)]
    assert len(found) == 1, (name, len(found))
    return text(found[0])


def test_fleet_shows_each_group_type_and_its_epochs(store: DeltaStore) -> None:
    fleet = views.fleet(
        store.read("group_snapshots"),
        store.read("findings"),
        store.read("member_assignments"),
        Filters(),
    ).set_index("group")
    assert fleet.loc[CHECKOUT, "group_type"] == "consumer"
    assert fleet.loc[STREAMS, "group_type"] == "streams"
    assert fleet.loc[SHARE, "group_type"] == "share"
    assert fleet.loc[scenario.GROUP, "group_type"] == "classic"
    # Group-epoch records state no member count: the members' own records are counted.
    assert fleet.loc[CHECKOUT, "member_count"] == 3 and fleet.loc[LEDGER, "member_count"] == 2
    # Open: what the group's current group epoch shows (epoch 2's finding is closed).
    assert fleet.loc[CHECKOUT, "health"] == "warning" and fleet.loc[CHECKOUT, "open_findings"] == 1
    assert fleet.loc[LEDGER, "health"] == "critical" and fleet.loc[LEDGER, "open_findings"] == 2
    assert fleet.loc[STREAMS, "health"] == "ok" and fleet.loc[SHARE, "health"] == "ok"
    assert fleet.loc[scenario.GROUP, "health"] == "critical"

    root = render(store, "/", "")
    rows = {r.get("data-group"): r for r in root.findall(".//table[@id='fleet-table']/tbody/tr")}
    assert text(one(rows[CHECKOUT], "td[@class='group-type']")) == "consumer (KIP-848)"
    assert text(one(rows[STREAMS], "td[@class='group-type']")) == "streams"
    assert rows[SHARE].get("data-type") == "share"
    assert rows[scenario.GROUP].get("data-type") == "classic"
    assert text(one(rows[CHECKOUT], "td[@class='generation']")) == "epoch 3"
    # A group epoch with no target assignment yet shows the assignment epoch it lags at.
    assert text(one(rows[STREAMS], "td[@class='generation']")) == "epoch 5 (assignment 4)"
    assert text(one(rows[scenario.GROUP], "td[@class='generation']")) == "gen 3"
    share_badge = one(rows[SHARE], ".//span[@data-type='share']")
    assert share_badge.get("title") == "exclusive ownership does not apply"


def test_group_page_shows_member_epochs_states_targets_and_pending(store: DeltaStore) -> None:
    root = render(store, "/group", f"?group={CHECKOUT}")
    assert text(one(root, ".//*[@id='group-epoch']")) == "3"
    assert text(one(root, ".//*[@id='assignment-epoch']")) == "3"
    assert "Members at group epoch 3" in text(root)

    alpha, beta, gamma = (member_row(root, m) for m in ("alpha-1", "beta-2", "gamma-3"))
    assert cell(alpha, "member-epoch") == "3" and cell(alpha, "member-state") == "STABLE"
    assert "not-stable" not in classes(alpha)
    # beta still holds checkout-3, which gamma's target gives to gamma: UNREVOKED, pending.
    assert cell(beta, "member-epoch") == "2" and cell(beta, "member-state") == "UNREVOKED"
    assert "not-stable" in classes(beta) and beta.get("data-state") == "UNREVOKED"
    assert cell(beta, "pending") == "checkout-3"
    assert cell(beta, "assigned-partitions") == "checkout-2"
    assert cell(beta, "target") == "checkout-2"
    pending = [td for td in beta.findall("td") if "pending" in classes(td)]
    assert classes(pending[0]) == {"pending", "held"}  # highlighted
    assert cell(gamma, "member-state") == "UNRELEASED" and "not-stable" in classes(gamma)
    assert one(gamma, ".//span").get("class") == "state state-unreleased"
    assert cell(gamma, "assigned-partitions") == ""
    # Its target differs from what it holds (nothing yet): marked.
    assert cell(gamma, "target") == "checkout-3"
    assert "differs" in classes(next(td for td in gamma.findall("td") if "target" in classes(td)))

    matrix = one(root, ".//table[@id='ownership-matrix']")
    heads = [text(th) for th in matrix.findall("thead/tr/th")]
    assert "beta-2 epoch 2 · UNREVOKED" in heads and "gamma-3 epoch 3 · UNRELEASED" in heads
    row3 = one(matrix, ".//tr[@data-partition='3']")
    assert "overlap" not in classes(row3)
    beta3 = one(row3, "td[@data-member='beta-2']")
    assert {"pending", "assigned"} & classes(beta3) == {"pending"}
    assert text(beta3) == "pending revocation"
    assert {"target"} <= classes(one(row3, "td[@data-member='gamma-3']"))

    at_epoch = [r.get("data-finding") for r in root.findall(".//*[@id='group-findings']//tr")]
    assert "f-overdue-beta" in at_epoch and "f-unreleased-beta" not in at_epoch
    everything = root.findall(".//*[@id='group-findings-all']//tr[@data-finding]")
    assert {r.get("data-finding") for r in everything} == {"f-overdue-beta", "f-unreleased-beta"}
    # Sticky divergence is a classic-group check: no expected-assignment diff here.
    assert root.find(".//*[@id='expected-diff']") is None


def test_an_earlier_group_epoch_shows_the_members_as_they_were(store: DeltaStore) -> None:
    root = render(store, "/group", f"?group={CHECKOUT}&generation=2")
    assert text(one(root, ".//*[@id='group-epoch']")) == "2"
    assert sorted(r.get("data-member") for r in root.findall(".//tr[@data-member]")) == [
        "alpha-1",
        "beta-2",
    ]
    beta = member_row(root, "beta-2")
    assert cell(beta, "member-state") == "STABLE" and cell(beta, "pending") == ""
    assert cell(beta, "assigned-partitions") == "checkout-2, checkout-3"
    at_epoch = [r.get("data-finding") for r in root.findall(".//*[@id='group-findings']//tr")]
    assert "f-unreleased-beta" in at_epoch and "f-overdue-beta" not in at_epoch


def test_modern_overlap_departed_member_and_timeline(store: DeltaStore) -> None:
    members, snaps = store.read("member_assignments"), store.read("group_snapshots")
    m = views.ownership_matrix(
        members, store.read("findings"), store.read("group_offsets"), LEDGER, None, snaps
    )
    assert m.group_type == "consumer" and m.generation == 5 and m.generations == [4, 5]
    assert [mm.member_id for mm in m.members] == ["x-1", "y-1"]  # z-1's tombstone ended it
    rows = {(r.topic, r.partition): r for r in m.rows}
    assert rows[("ledger", 0)].overlap and not rows[("ledger", 1)].overlap
    # One finding states its group epoch; the other is placed by its record's position.
    assert rows[("ledger", 0)].kinds == {"partition_owned_twice", "handover_while_held"}
    earlier = views.ownership_matrix(
        members, store.read("findings"), store.read("group_offsets"), LEDGER, 4, snaps
    )
    assert [mm.member_id for mm in earlier.members] == ["x-1", "z-1"]
    assert not any(r.overlap for r in earlier.rows) and not any(r.kinds for r in earlier.rows)

    tl = views.timeline(snaps, members, LEDGER)
    assert list(tl["generation"]) == [4, 5]
    assert list(tl["joined"]) == ["x-1, z-1", "y-1"] and list(tl["left"]) == ["", "z-1"]
    assert list(tl["member_count"]) == [2, 2]
    tl = views.timeline(snaps, members, CHECKOUT)
    assert list(tl["joined"]) == ["alpha-1", "beta-2", "gamma-3"]

    root = render(store, "/group", f"?group={LEDGER}")
    row0 = one(root, ".//table[@id='ownership-matrix']//tr[@data-partition='0']")
    assert "overlap" in classes(row0) and "OVERLAP" in text(one(row0, "td[@class='flags']"))


def test_share_group_is_marked_and_never_overlaps(store: DeltaStore) -> None:
    root = render(store, "/group", f"?group={SHARE}")
    assert "exclusive ownership does not apply" in text(one(root, ".//*[@id='share-note']"))
    matrix = one(root, ".//table[@id='ownership-matrix']")
    shared = one(matrix, ".//tr[@data-partition='0']")
    assert len(shared.findall("td[@class='cell assigned']")) == 2
    assert "overlap" not in classes(shared) and "OVERLAP" not in text(shared)
    assert "exclusive ownership does not apply" in text(one(root, ".//div[@class='legend']"))
    # The partition the group commits to but nobody holds yet, from group_offsets.
    assert "unassigned" in classes(one(matrix, ".//tr[@data-partition='2']"))
    # No target records: nothing to show next to the assignment.
    assert cell(member_row(root, "sh-1"), "target") == "—"


def test_streams_group_shows_tasks_and_a_lagging_assignment_epoch(store: DeltaStore) -> None:
    root = render(store, "/group", f"?group={STREAMS}")
    epochs = one(root, ".//*[@id='modern-epochs']")
    assert "group epoch 5" in text(epochs) and "assignment epoch 4" in text(epochs)
    assert "new target assignment is still to come" in text(epochs)
    assert cell(member_row(root, "s-1"), "assigned-partitions") == "0-0, 0-1"
    assert text(root.findall(".//table[@id='ownership-matrix']/thead/tr/th")[0]) == "task"


def test_partition_page_with_member_epoch_intervals(store: DeltaStore) -> None:
    hist = views.partition_history(
        store.read("partition_ownership"),
        parse(f"?group={CHECKOUT}&topic=checkout&partition=2"),
    )
    assert list(zip(hist["member_id"], hist["from_generation"], strict=True)) == [
        ("alpha-1", 1),
        ("beta-2", 2),
    ]
    root = render(store, "/partitions", f"?group={CHECKOUT}&topic=checkout&partition=2")
    table = one(root, ".//table[@id='ownership-table']")
    heads = [text(th) for th in table.findall("thead/tr/th")]
    assert "counted in" in heads and "from gen. / epoch" in heads
    rows = [[text(td) for td in tr.findall("td")] for tr in table.findall("tbody/tr")]
    by = dict(zip(heads, zip(*rows, strict=True), strict=True))
    assert by["member_id"] == ("alpha-1", "beta-2")
    assert by["type"] == ("consumer (KIP-848)",) * 2
    assert by["counted in"] == ("member epochs",) * 2
    assert by["from gen. / epoch"] == ("1", "2") and by["to gen. / epoch"] == ("2", "")
    classic = render(store, "/partitions", f"?group={scenario.GROUP}&topic=orders&partition=0")
    assert "generations" in text(one(classic, ".//table[@id='ownership-table']"))


def test_tables_written_before_the_modern_columns(tmp_path: Path) -> None:
    scenario.build(tmp_path / "new")
    modern_scenario.legacy(tmp_path / "new", tmp_path / "old")
    for table, columns in modern_scenario.NEW_COLUMNS.items():
        on_disk = DeltaTable(str(tmp_path / "old" / table)).to_pyarrow_table().schema.names
        assert not set(columns) & set(on_disk), table
    store = DeltaStore(tmp_path / "old")
    snaps, members = store.read("group_snapshots"), store.read("member_assignments")
    assert snaps["group_type"].isna().all() and members["member_epoch"].isna().all()
    assert set(modern.group_types(snaps).values()) == {"classic"}
    fleet = views.fleet(snaps, store.read("findings"), members, Filters())
    assert dict(zip(fleet["group"], fleet["health"], strict=True))[scenario.GROUP] == "critical"
    root = render(store, "/", "")
    assert {r.get("data-type") for r in root.findall(".//tr[@data-group]")} == {"classic"}
    root = render(store, "/group", f"?group={scenario.GROUP}")
    overlap = one(root, ".//table[@id='ownership-matrix']//tr[@data-partition='0']")
    assert "overlap" in classes(overlap)
    assert root.find(".//*[@id='members-table']") is None
    root = render(store, "/partitions", f"?group={scenario.GROUP}")
    assert "generations" in text(one(root, ".//table[@id='ownership-table']"))
    for path in ("/health", "/group"):
        render(store, path, "")
