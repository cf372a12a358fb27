"""The dashboard in a real headless Chromium (Debian's, driven by Playwright; no download).

By default it serves tables modelled on KAFKA-7026 (tests/dashboard/scenario.py). To check the
tables of a real job run instead, set GROUPWATCH_BROWSER_DELTA_ROOT (and GROUPWATCH_BROWSER_GROUP
to the scenario group's name there). Screenshots go to test-artifacts/dashboard-*.png.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.scenario import GROUP, OVERLAP, build
from tests.dashboard.tools import free_port, need

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = os.environ.get("GROUPWATCH_BROWSER_DELTA_ROOT")
    if not root:
        root = str(tmp_path_factory.mktemp("delta"))
        build(Path(root))
    port = free_port()
    log = tmp_path_factory.mktemp("dash") / "dashboard.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupwatch.cli", "dashboard", "--delta-root", root,
         "--port", str(port), "--refresh", "5"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            if proc.poll() is not None:
                pytest.fail(f"dashboard exited:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(url + "/", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail(f"dashboard not up:\n{log.read_text()[-3000:]}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def page(dashboard: str) -> Iterator[Any]:
    chromium = need("chromium", "chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is not installed (pip: .[dev])")
        pytest.skip("playwright is not installed")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        yield pg
        browser.close()
        assert not errors, errors


def _group() -> str:
    return os.environ.get("GROUPWATCH_BROWSER_GROUP", GROUP)


def test_fleet_lists_the_scenario_group_as_critical(page: Any, dashboard: str) -> None:
    page.goto(dashboard + "/")
    row = page.wait_for_selector(f'#fleet-table tr[data-group="{_group()}"]', timeout=30000)
    assert row.get_attribute("data-health") == "critical"
    assert row.query_selector(".badge.sev-critical").inner_text() == "critical"
    first = page.query_selector("#fleet-table tbody tr")
    assert first.get_attribute("data-group") == _group(), "the critical group is not first"
    page.wait_for_selector("#findings-over-time .main-svg", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-fleet.png"), full_page=True)


def test_group_matrix_marks_the_overlapping_partition(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/group?group={_group()}")
    matrix = page.wait_for_selector("#ownership-matrix", timeout=30000)
    overlapping = matrix.query_selector_all("tr.overlap")
    assert overlapping, "no partition is marked as overlapping"
    if _group() == GROUP:
        row = matrix.query_selector(
            f'tr.overlap[data-topic="{OVERLAP[0]}"][data-partition="{OVERLAP[1]}"]')
        assert row is not None
        assert len(row.query_selector_all("td.cell.assigned")) == 2
        assert "OVERLAP" in row.query_selector("td.flags").inner_text()
        assert row.query_selector('td.stale[data-member="c1-aaa"]') is not None
        assert page.query_selector('#group-findings tr[data-kind="assignment_overlap"]')
        assert "orders-0" in page.inner_text("#expected-diff")
    page.wait_for_selector("#timeline .main-svg", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-group.png"), full_page=True)


def test_filters_go_into_a_shareable_url(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/partitions?group={_group()}")
    page.wait_for_selector("#ownership-table", timeout=30000)
    page.fill("#f-topic", "orders")
    page.fill("#f-partition", "0")
    page.click("#f-apply")
    page.wait_for_url("**/partitions?*topic=orders*", timeout=15000)
    assert "partition=0" in page.url
    page.reload()
    page.wait_for_selector("#ownership-gantt .main-svg", timeout=30000)
    assert page.input_value("#f-topic") == "orders"
    page.screenshot(path=str(ARTIFACTS / "dashboard-partitions.png"), full_page=True)


def test_data_health_and_hostile_parameters(page: Any, dashboard: str) -> None:
    page.goto(f"{dashboard}/health")
    page.wait_for_selector("#quarantine-table", timeout=30000)
    assert "truncated" in page.inner_text("#quarantine-table") or _group() != GROUP
    page.wait_for_selector("#validation-table", timeout=30000)
    page.screenshot(path=str(ARTIFACTS / "dashboard-health.png"), full_page=True)
    page.goto(f"{dashboard}/group?group=%3Cscript%3Ealert(1)%3C%2Fscript%3E&generation=1%3B")
    page.wait_for_selector("#page h2", timeout=30000)
    assert "ignored invalid parameter(s): generation" in page.inner_text("#filters")
    assert page.query_selector("script:text('alert(1)')") is None
