"""KIP-848 consumer, streams and share groups in a real headless Chromium, on the tables of
tests/dashboard/modern_scenario.py (written with delta-rs: no broker, no Spark).

Screenshots: test-artifacts/dashboard-modern-fleet.png, dashboard-modern-group.png,
dashboard-modern-share.png and dashboard-modern-partitions.png.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard import modern_scenario
from tests.dashboard.browsing import ARTIFACTS, chromium_page, served
from tests.dashboard.modern_scenario import CHECKOUT, SHARE

pytestmark = [pytest.mark.browser]
WAIT_MS = 30000


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("modern-browser")
    modern_scenario.build(work / "delta")
    with served(str(work / "delta"), work / "dashboard.log", refresh=60) as url:
        yield url


@pytest.fixture(scope="module")
def page(dashboard: str) -> Iterator[Any]:
    with chromium_page() as pg:
        yield pg


def background(element: Any) -> str:
    return str(element.evaluate("e => getComputedStyle(e).backgroundColor"))


def test_fleet_shows_group_types_and_epochs(page: Any, dashboard: str) -> None:
    page.goto(dashboard + "/")
    row = page.wait_for_selector(f'#fleet-table tr[data-group="{CHECKOUT}"]', timeout=WAIT_MS)
    assert row.get_attribute("data-type") == "consumer"
    assert row.query_selector("td.group-type").inner_text() == "consumer (KIP-848)"
    assert row.query_selector("td.generation").inner_text() == "epoch 3"
    share = page.query_selector(f'#fleet-table tr[data-group="{SHARE}"]')
    assert share.query_selector(".gtype-share").get_attribute("title") == (
        "exclusive ownership does not apply"
    )
    # Its share lag where a consumer group's lag is (share_partition_state, summed).
    assert share.query_selector("td.lag-records").get_attribute("data-lag-records") == "12"
    assert share.query_selector("td.lag").inner_text() == "share lag"
    page.wait_for_selector("#findings-over-time .main-svg", timeout=WAIT_MS)
    page.screenshot(path=str(ARTIFACTS / "dashboard-modern-fleet.png"), full_page=True)


def test_modern_group_page_shows_epochs_states_and_pending_revocation(
    page: Any, dashboard: str
) -> None:
    page.goto(f"{dashboard}/group?group={CHECKOUT}")
    # The page is drawn by callbacks: once the last of them (the timeline) has drawn and the
    # network is quiet, the members table is no longer replaced under the element handles.
    page.wait_for_selector("#timeline .main-svg", timeout=WAIT_MS)
    page.wait_for_load_state("networkidle", timeout=WAIT_MS)
    table = page.wait_for_selector("#members-table", timeout=WAIT_MS)
    assert page.inner_text("#group-epoch") == "3" and page.inner_text("#assignment-epoch") == "3"
    beta = table.query_selector('tr[data-member="beta-2"]')
    assert beta.query_selector("td.member-epoch").inner_text() == "2"
    state = beta.query_selector("td.member-state .state")
    assert state.inner_text() == "UNREVOKED"
    # Highlighted: a coloured badge on a tinted row, unlike a STABLE member's.
    alpha = table.query_selector('tr[data-member="alpha-1"]')
    assert background(state) != background(alpha.query_selector("td.member-state .state"))
    assert background(beta.query_selector("td")) != background(alpha.query_selector("td"))
    pending = beta.query_selector("td.pending")
    assert pending.inner_text() == "checkout-3" and "held" in pending.get_attribute("class")
    assert pending.is_visible()
    gamma = table.query_selector('tr[data-member="gamma-3"]')
    assert gamma.query_selector("td.member-state").inner_text() == "UNRELEASED"
    assert gamma.query_selector("td.target").inner_text() == "checkout-3"
    cell = page.query_selector(
        '#ownership-matrix tr[data-partition="3"] td[data-member="beta-2"].pending'
    )
    assert cell is not None and cell.inner_text() == "pending revocation"
    assert page.query_selector('#group-findings tr[data-kind="revocation_overdue"]') is not None
    page.wait_for_selector("#timeline .main-svg", timeout=WAIT_MS)
    page.screenshot(path=str(ARTIFACTS / "dashboard-modern-group.png"), full_page=True)
    assert (ARTIFACTS / "dashboard-modern-group.png").stat().st_size > 10_000


def test_share_group_says_exclusive_ownership_does_not_apply(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/group?group={SHARE}")
    note = page.wait_for_selector("#share-note", timeout=WAIT_MS)
    assert "exclusive ownership does not apply" in note.inner_text()
    assert page.query_selector("#ownership-matrix tr.overlap") is None
    assert len(page.query_selector_all('#ownership-matrix tr[data-partition="0"] .assigned')) == 2
    # Its share partitions (share_partition_state): share lag, in flight, archived; the one
    # with a poison record archived first, its offset named and marked.
    table = page.wait_for_selector("#share-partitions", timeout=WAIT_MS)
    rows = table.query_selector_all("tbody tr")
    assert [r.get_attribute("data-partition") for r in rows] == ["0", "1"]
    first = rows[0]
    assert (
        first.get_attribute("data-share-lag"),
        first.get_attribute("data-in-flight"),
        first.get_attribute("data-archived"),
    ) == ("12", "3", "1")
    assert first.query_selector("td.archived-offsets").inner_text() == "7"
    assert "alerting" in first.query_selector("td.archived").get_attribute("class")
    assert "alerting" not in rows[1].query_selector("td.archived").get_attribute("class")
    assert rows[1].query_selector("td.share-lag").inner_text() == "0"
    assert page.inner_text("#share-lag-total") == "12"
    assert page.inner_text("#share-archived-total") == "1"
    # No committed-offset lag table for a group that commits no offsets.
    assert page.query_selector("#lag-partitions") is None
    page.screenshot(path=str(ARTIFACTS / "dashboard-modern-share.png"), full_page=True)


def test_partition_history_in_member_epochs(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/partitions?group={CHECKOUT}&topic=checkout&partition=2")
    page.wait_for_selector("#ownership-gantt .main-svg", timeout=WAIT_MS)
    owners = page.inner_text("#ownership-table")
    assert "alpha-1" in owners and "beta-2" in owners and "member epochs" in owners
    page.screenshot(path=str(ARTIFACTS / "dashboard-modern-partitions.png"), full_page=True)
