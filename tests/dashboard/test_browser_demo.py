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

from groupwatch.dashboard.views.fleet_table import NAMED_ONLY
from groupwatch.delta.read import DeltaStore
from tests.dashboard import demo_tables
from tests.dashboard.browsing import ARTIFACTS, chromium_page, served
from tests.dashboard.scenario import write

pytestmark = [pytest.mark.browser]
CRITICAL = {"kafka-7026", "kafka-13419"}
COMMITS_ONLY = "reports-assign-only"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo-delta")
    demo_tables.build(path)
    # A consumer that commits offsets without ever joining a group (assign(), not subscribe()):
    # its group is in the offsets table alone.
    write(
        path,
        "group_offsets",
        [{"group": COMMITS_ONLY, "topic": "orders", "max_partition": 0, "commits": 3}],
    )
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
        for t in ("group_snapshots", "member_assignments", "findings", *NAMED_ONLY)
        for g in store.read(t)["group"].dropna()
    }


#: A chart's x-axis range in days, and the widths in pixels of the bars it draws.
_X_AXIS = """(id) => {
  const p = document.querySelector('#' + id + ' .js-plotly-plot');
  const ax = p._fullLayout.xaxis;
  const r = ax.range.map(v => ax.r2l(v));
  return {days: (r[1] - r[0]) / 86400000,
          bars: [...p.querySelectorAll('.barlayer .point path')].map(b => b.getBBox().width)};
}"""


def _x_axis(page: Any, chart: str) -> dict[str, Any]:
    """The chart's time axis: a replay's years-old records must not stretch it over years."""
    axis: dict[str, Any] = page.evaluate(_X_AXIS, chart)
    assert 0 < axis["days"] < 31, (chart, axis)
    return axis


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
    assert health[COMMITS_ONLY] == "ok"
    _charts_say_something(page, "fleet")
    # The findings of the replayed days, by when they were found: bars wide enough to see.
    bars = _x_axis(page, "findings-over-time")["bars"]
    assert bars and min(bars) >= 10, bars
    assert "7 on replayed or backfilled records" in page.inner_text("#findings-over-time")
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


def test_the_health_page_holds_no_replayed_record_as_live(
    page: Any, dashboard: str, root: Path
) -> None:
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
    # Records per minute: the 2023 records are counted apart, in words, not drawn in 2023.
    _x_axis(page, "throughput-chart")
    assert all(y is None for y in by_name.get("records", [])), by_name
    records = len(DeltaStore(root).read("group_snapshots"))
    assert f"{records:,} group-metadata record(s) of 2023-" in page.inner_text("#throughput-late")
    page.goto(dashboard + "/partitions?group=kafka-7026")
    _charts_say_something(page, "partitions")
