"""The dashboard in headless Chromium over the demo's own replayed incidents (KAFKA-7026 and
KAFKA-13419, records of 2023 read now; tests/dashboard/demo_tables.py), after the job's upkeep
turns: every group is on the fleet page with its health, no page draws axes over nothing, and
the data-health latency chart holds no replayed record as live.  Screenshots of the fleet and
group pages go to test-artifacts/demo-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch.deltaread import DeltaStore
from tests.dashboard import demo_tables
from tests.dashboard.browsing import ARTIFACTS, chromium_page, served

pytestmark = [pytest.mark.browser]
CRITICAL = {"kafka-7026", "kafka-13419"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo-delta")
    demo_tables.build(path)
    return path


@pytest.fixture(scope="module")
def dashboard(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served(str(root), tmp_path_factory.mktemp("dash") / "dashboard.log") as url:
        yield url


@pytest.fixture(scope="module")
def page(dashboard: str) -> Iterator[Any]:
    with chromium_page() as pg:
        yield pg


def _every_group(root: Path) -> set[str]:
    store = DeltaStore(root)
    return {
        str(g)
        for t in ("group_snapshots", "member_assignments", "findings", "partition_ownership")
        for g in store.read(t)["group"].dropna()
    }


#: A chart's state in the page: points drawn, axis ticks drawn, what an annotation says.
_CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => ({
  id: (p.closest('[id]') || p).id,
  points: p.querySelectorAll('.scatterlayer .point, .barlayer .point, .scatterlayer .js-line')
    .length,
  ticks: p.querySelectorAll('.xtick, .ytick').length,
  note: [...p.querySelectorAll('.annotation-text')].map(a => a.textContent).join(' '),
}))"""


def _charts_say_something(page: Any, where: str) -> list[dict[str, Any]]:
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30000)
    charts = page.evaluate(_CHARTS)
    assert charts, where
    for chart in charts:
        if chart["points"] == 0:
            assert chart["ticks"] == 0, (where, chart)
            assert chart["note"].strip(), (where, chart)
    return list(charts)


def test_every_group_is_on_the_fleet_page_with_its_health(
    page: Any, dashboard: str, root: Path
) -> None:
    groups = _every_group(root)
    assert CRITICAL <= groups
    page.goto(dashboard + "/")
    page.wait_for_selector("#fleet-table tbody tr[data-group]", timeout=30000)
    health = {
        r.get_attribute("data-group"): r.get_attribute("data-health")
        for r in page.query_selector_all("#fleet-table tbody tr[data-group]")
    }
    assert set(health) == groups
    assert all(health[g] == "critical" for g in CRITICAL), health
    first = [
        r.get_attribute("data-group")
        for r in page.query_selector_all("#fleet-table tbody tr[data-group]")
    ][: len(CRITICAL)]
    assert set(first) == CRITICAL
    assert int(page.inner_text("#kpi-critical b")) == len(CRITICAL)
    _charts_say_something(page, "fleet")
    page.screenshot(path=str(ARTIFACTS / "demo-fleet.png"), full_page=True)


@pytest.mark.parametrize("group", sorted(CRITICAL))
def test_a_group_page_draws_its_generations_and_names_its_claims(
    page: Any, dashboard: str, group: str
) -> None:
    page.goto(f"{dashboard}/group?group={group}")
    page.wait_for_selector("#ownership-matrix", timeout=30000)
    charts = _charts_say_something(page, group)
    timeline = next(c for c in charts if c["id"] == "timeline")
    assert timeline["points"] > 0, timeline
    text = page.inner_text("body")
    assert "claim gen -1" not in text
    # The overlap's generation: each member's expected assignment (the sticky assignor's
    # re-run, the replay's old clients leaving no sticky_divergence) beside its actual one.
    beside = page.query_selector_all("#expected-beside tbody tr")
    assert len(beside) >= 2, "no expected assignment beside the actual one"
    cells = [[c.inner_text() for c in r.query_selector_all("td")] for r in beside]
    assert any(row[1] != row[2] for row in cells), cells
    page.screenshot(path=str(ARTIFACTS / f"demo-group-{group}.png"), full_page=True)


def test_the_health_page_holds_no_replayed_record_as_live(page: Any, dashboard: str) -> None:
    page.goto(dashboard + "/health")
    _charts_say_something(page, "health")
    traces = page.evaluate(
        "() => document.querySelector('#throughput-chart .js-plotly-plot').data"
        ".map(t => ({name: t.name, y: t.y}))"
    )
    by_name = {t["name"]: t["y"] for t in traces}
    live = [y for y in by_name.get("max_finding_latency_s", []) if y is not None]
    # Every finding here is on a 2023 record: none is a live latency, all are counted apart.
    assert live == [], live
    assert sum(y or 0 for y in by_name["replayed_findings"]) == 7
    page.goto(dashboard + "/partitions?group=kafka-7026")
    _charts_say_something(page, "partitions")
