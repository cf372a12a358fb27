"""The dashboard in a real headless Chromium (Debian's, driven by Playwright; no download),
on the tables of a real run of the job.

The ``real_job`` fixture (tests/dashboard/realjob.py) reads KAFKA-7026 replayed into a
mirror topic on the test broker; the dashboard serves its Delta root. To check another run's
tables instead, set GROUPWATCH_BROWSER_DELTA_ROOT (and GROUPWATCH_BROWSER_GROUP,
GROUPWATCH_BROWSER_TOPIC and GROUPWATCH_BROWSER_PARTITION to a group there with an overlap).
Screenshots go to test-artifacts/dashboard-*.png (tests/dashboard/test_browser_modern.py shows
modern groups from tables it writes itself).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.dashboard import realjob
from tests.dashboard.browsing import ARTIFACTS, chromium_page, served

pytestmark = [pytest.mark.browser, pytest.mark.broker, pytest.mark.spark]
GROUP = os.environ.get("GROUPWATCH_BROWSER_GROUP", realjob.GROUP)
TOPIC = os.environ.get("GROUPWATCH_BROWSER_TOPIC", realjob.OVERLAP[0])
PARTITION = int(os.environ.get("GROUPWATCH_BROWSER_PARTITION", realjob.OVERLAP[1]))


@pytest.fixture(scope="module")
def delta_root(request: pytest.FixtureRequest) -> str:
    root = os.environ.get("GROUPWATCH_BROWSER_DELTA_ROOT")
    if root:
        return root
    job: realjob.RealJob = request.getfixturevalue("real_job")
    job.incident()
    # The job validates a batch after writing it: wait for those rows too, so the health page
    # shows this run's Great Expectations results rather than an empty table.
    job.wait_for(
        lambda: bool(job.table("validation_results")),
        realjob.FINDING_TIMEOUT,
        "validation_results rows",
    )
    # The partition page's owners too: with a fast server the pages are read right away.
    job.wait_for(
        lambda: any(r["group"] == GROUP for r in job.table("partition_ownership")),
        realjob.FINDING_TIMEOUT,
        "partition_ownership rows",
    )
    return str(job.delta_root)


@pytest.fixture(scope="module")
def dashboard(delta_root: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served(delta_root, tmp_path_factory.mktemp("dash") / "dashboard.log") as url:
        yield url


@pytest.fixture(scope="module")
def page(dashboard: str) -> Iterator[Any]:
    with chromium_page() as pg:
        yield pg


def test_fleet_lists_the_scenario_group_as_critical(page: Any, dashboard: str) -> None:
    page.goto(dashboard + "/")
    row = page.wait_for_selector(f'#fleet-table tr[data-group="{GROUP}"]', timeout=30000)
    assert row.get_attribute("data-health") == "critical"
    assert row.query_selector(".badge.sev-critical").inner_text() == "critical"
    first = page.query_selector("#fleet-table tbody tr")
    assert first.get_attribute("data-group") == GROUP, "the critical group is not first"
    assert int(page.inner_text("#kpi-critical b")) >= 1
    page.wait_for_selector("#findings-over-time .main-svg", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-fleet.png"), full_page=True)


def test_group_matrix_marks_the_overlapping_partition(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/group?group={GROUP}")
    matrix = page.wait_for_selector("#ownership-matrix", timeout=30000)
    row = matrix.query_selector(f'tr.overlap[data-topic="{TOPIC}"][data-partition="{PARTITION}"]')
    assert row is not None, f"{TOPIC}-{PARTITION} is not marked as overlapping"
    assert len(row.query_selector_all("td.cell.assigned")) >= 2
    assert "OVERLAP" in row.query_selector("td.flags").inner_text()
    assert "assignment_overlap" in row.query_selector("td.flags").inner_text()
    if GROUP == realjob.GROUP:
        # KAFKA-7026, generation 4: the leader C2-1 and the member back from its pause, C1-1,
        # both hold test-0.
        assert "Partition ownership, generation 4" in page.inner_text("#page")
        for member in ("C1-1", "C2-1"):
            assert row.query_selector(f'td.cell.assigned[data-member="{member}"]') is not None
        # The leader is a kafka-clients 2.2.2 StickyAssignor (user data v0, a claim inferred
        # stale): today's re-run is not comparable with it, so no sticky_divergence and no diff.
        assert "test-0" not in page.inner_text("#expected-diff")
    finding = page.query_selector('#group-findings tr[data-kind="assignment_overlap"]')
    assert finding is not None
    assert "critical" in finding.inner_text()
    assert f"{TOPIC}-{PARTITION}" in finding.inner_text()
    page.wait_for_selector("#timeline .main-svg", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-group.png"), full_page=True)


def test_filters_go_into_a_shareable_url(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/partitions?group={GROUP}")
    page.wait_for_selector("#ownership-table", timeout=30000)
    page.fill("#f-topic", TOPIC)
    page.fill("#f-partition", str(PARTITION))
    page.click("#f-apply")
    page.wait_for_url(f"**/partitions?*topic={TOPIC}*", timeout=15000)
    assert f"partition={PARTITION}" in page.url
    page.reload()
    page.wait_for_selector("#ownership-gantt .main-svg", timeout=30000)
    assert page.input_value("#f-topic") == TOPIC
    # Two members own the same partition at once in the real run's ownership history.
    owners = page.inner_text("#ownership-table")
    if GROUP == realjob.GROUP:
        assert "C1-1" in owners and "C2-1" in owners
    page.screenshot(path=str(ARTIFACTS / "dashboard-partitions.png"), full_page=True)


def test_data_health_and_hostile_parameters(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/health")
    page.wait_for_selector("#quarantine-table", timeout=30000)
    validation = page.wait_for_selector("#validation-table", timeout=30000)
    assert validation.query_selector_all("tbody .badge"), "no Great Expectations results shown"
    page.wait_for_selector("#throughput-chart .main-svg", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-health.png"), full_page=True)
    page.goto(f"{dashboard}/group?group=%3Cscript%3Ealert(1)%3C%2Fscript%3E&generation=1%3B")
    page.wait_for_selector("#page h2", timeout=30000)
    assert "ignored invalid parameter(s): generation" in page.inner_text("#filters")
    assert page.query_selector("script:text('alert(1)')") is None
