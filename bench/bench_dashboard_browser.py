"""Benchmark: the dashboard as a user meets it, timed end to end in headless Chromium.

    .venv/bin/python bench/bench_dashboard_browser.py --delta-root DIR [--big-group NAME]
        [--baseline-groups 300] [--refresh 10] [--reloads 2] [--shots test-artifacts]
        [--wait 300]

``--delta-root``: the tables a start-up left (``bench/bench_cluster.py --bench startup
--groups 10000 --keep`` prints ``kept DIR``; its tables are ``DIR/job/delta``). The largest
group (most members in a snapshot) is found in the tables unless ``--big-group`` names one.

* browser: ``groupwatch dashboard --delta-root DIR`` started on a free loopback port, as a
  user starts it (it prepares the fleet page in the background, ``Pages.warm``). Timed:
  the start until the port answers; the fleet page opened right then (the first user after a
  start, who may wait for that preparation); then each page -- the fleet, the largest group,
  its partition history, data health -- in a fresh browser context (no cache: Dash's and
  Plotly.js's scripts fetched, as from an alert's link), from ``goto`` to the DOM loaded and
  to the page's content; ``--reloads`` reloads of it (the user's refresh, scripts cached);
  and the next timer refresh (``--refresh`` s: the page's callback with the table versions,
  which answers nothing new with 204), its request to its response.
* baselines, in the same run: the same pages rendered in-process (``Pages.render``, no
  browser, a fresh process: ``bench/bench_dashboard.py``'s server figure), and the same
  browser run on a small fleet (``--baseline-groups`` groups of tests/dashboard/fleet_scenario.py,
  written with delta-rs; 0 skips it). Ratios: browser / in-process, and this fleet / the small
  one.
* checks (printed, and the exit status): the fleet page lists every group the tables hold
  (the pager's total against the distinct groups of ``group_snapshots`` read with delta-rs), a
  page of them, in the order of health, critical first; no page says it failed, no JavaScript
  error, no ERROR in the dashboard's log.
* targets (docs/performance.md, "The other targets": a page at 10,000 groups, server < 2 s,
  the browser <= 3 s) printed met or not against each figure.

Screenshots of every page (after its timer refresh) go to ``--shots``:
``bench-dashboard-<page>.png`` and ``bench-dashboard-baseline-<page>.png``. Prints one line per
figure with the load average, then one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_dashboard import server_times  # noqa: E402

#: (short name, title, URL path and query, what shows the page's content).
PAGES = [
    ("fleet", "fleet", "/", "#fleet-table tr[data-group]"),
    ("group", "group (largest)", "/group?group={big}", "#ownership-matrix"),
    ("partitions", "partition history (largest)", "/partitions?group={big}", "#ownership-table"),
    ("health", "data health", "/health", "#validation-table"),
]
#: What a page that failed renders instead of its content (``Pages.render``).
FAILED = "#page p.warn:has-text('This page failed to render')"
#: docs/performance.md, "The other targets": a page at 10,000 groups.
SERVER_TARGET_S = 2.0
BROWSER_TARGET_S = 3.0
#: The order of the fleet page's health column, critical first (groupwatch.notify.kinds).
HEALTH_ORDER = ["critical", "error", "warning", "info", "ok"]


def load_text() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def log(text: str) -> None:
    print(f"{text}  [load {load_text()}]", flush=True)


def target(seconds: float | None, limit: float) -> str:
    if seconds is None:
        return "-"
    return f"<= {limit:g} s {'met' if seconds <= limit else 'NOT met'}"


@dataclass
class Run:
    """What one served dashboard gave: figures per page, failures, the fleet's facts."""

    label: str
    figures: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    fleet: dict[str, Any] = field(default_factory=dict)


def largest_group(root: Path) -> tuple[str, int]:
    """The group with the most members in any of its snapshots, read with delta-rs."""
    from deltalake import DeltaTable

    snaps = DeltaTable(str(root / "group_snapshots")).to_pyarrow_table(
        columns=["group", "member_count"]
    )
    frame = snaps.to_pandas().dropna(subset=["member_count"])
    top = frame.sort_values(["member_count", "group"], ascending=[False, True]).iloc[0]
    return str(top["group"]), int(top["member_count"])


def groups_in_tables(root: Path) -> int:
    """Distinct groups of ``group_snapshots``, read with delta-rs (not the dashboard's reader)."""
    from deltalake import DeltaTable

    snaps = DeltaTable(str(root / "group_snapshots")).to_pyarrow_table(columns=["group"])
    return len(set(snaps.column("group").to_pylist()))


def start_dashboard(root: Path, refresh: int, logfile: Path) -> tuple[subprocess.Popen[bytes], str]:
    from tests.dashboard.tools import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupwatch.cli", "dashboard", "--delta-root", str(root),
         "--port", str(port), "--refresh", str(refresh)],
        stdout=logfile.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    return proc, f"http://127.0.0.1:{port}"


def wait_port(proc: subprocess.Popen[bytes], url: str, logfile: Path) -> None:
    for _ in range(3000):
        if proc.poll() is not None:
            raise SystemExit(f"dashboard exited:\n{logfile.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url + "/_dash-layout", timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"dashboard not up after 300 s:\n{logfile.read_text()[-3000:]}")


def open_page(browser: Any, url: str, selector: str, wait_s: float) -> tuple[Any, Any, dict]:
    """A fresh context (no cache) and the page at ``url``: seconds to the DOM loaded and to
    the content (None when the page failed or did not come within ``wait_s``)."""
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors  # type: ignore[attr-defined]
    started = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded", timeout=int(wait_s * 1000))
    dom = time.perf_counter() - started
    content = shown(page, selector, started, wait_s)
    return context, page, {"dom": dom, "content": content}


def shown(page: Any, selector: str, started: float, wait_s: float) -> float | None:
    """Seconds since ``started`` until ``selector`` (or the page's failure) shows."""
    from playwright.sync_api import TimeoutError as PageTimeout

    try:
        page.wait_for_selector(f"{selector}, {FAILED}", timeout=int(wait_s * 1000))
    except PageTimeout:
        return None
    took = time.perf_counter() - started
    return None if page.query_selector(FAILED) is not None else took


def next_tick(page: Any, refresh: int) -> dict[str, Any]:
    """The next timer refresh of the page: its callback's request to its response, and its
    status (204: nothing new, the page kept; 200: re-rendered)."""

    def is_tick(response: Any) -> bool:
        if "_dash-update-component" not in response.url:
            return False
        try:
            body = json.loads(response.request.post_data or "{}")
        except ValueError:
            return False
        return "page.children" in str(body.get("output")) and body.get("changedPropIds") == [
            "tick.n_intervals"
        ]

    with page.expect_response(is_tick, timeout=(refresh + 120) * 1000) as info:
        pass
    response = info.value
    response.finished()
    timing = response.request.timing
    return {"seconds": timing["responseEnd"] / 1000, "status": response.status}


def fleet_facts(page: Any) -> dict[str, Any]:
    rows = page.query_selector_all("#fleet-table tbody tr[data-group]")
    pager = page.query_selector("#fleet-pager")
    return {
        "rows": len(rows),
        "healths": [r.get_attribute("data-health") for r in rows],
        "first_groups": [r.get_attribute("data-group") for r in rows[:5]],
        "total": int(pager.get_attribute("data-total")) if pager is not None else None,
        "kpi_groups": page.inner_text("#kpi-groups b"),
        "kpi_critical": int(page.inner_text("#kpi-critical b")),
    }


def check_fleet(facts: dict[str, Any], groups: int) -> list[str]:
    """What the done-when asks of the fleet page: every group, a page of them, critical first."""
    from groupwatch.dashboard.pages.fleet import PAGE_SIZE

    bad = []
    if facts["total"] != groups:
        bad.append(f"fleet lists {facts['total']} groups, the tables hold {groups}")
    if facts["rows"] != min(groups, PAGE_SIZE):
        bad.append(f"fleet shows {facts['rows']} rows, expected {min(groups, PAGE_SIZE)}")
    order = [HEALTH_ORDER.index(h) if h in HEALTH_ORDER else 99 for h in facts["healths"]]
    if order != sorted(order):
        bad.append(f"fleet not in the order of health: {facts['healths']}")
    critical_on_top = facts["healths"].count("critical")
    if critical_on_top != min(facts["kpi_critical"], facts["rows"]):
        bad.append(f"{facts['kpi_critical']} critical groups, {critical_on_top} on the first page")
    return bad


def browser_run(
    label: str, root: Path, big: str, args: argparse.Namespace, work: Path, shots: Path
) -> Run:
    from playwright.sync_api import TimeoutError as PageTimeout
    from playwright.sync_api import sync_playwright

    run = Run(label)
    logfile = work / f"dashboard-{label}.log"
    started = time.perf_counter()
    proc, url = start_dashboard(root, args.refresh, logfile)
    try:
        wait_port(proc, url, logfile)
        run.figures["start_s"] = time.perf_counter() - started
        log(f"{label}: dashboard answers after {run.figures['start_s']:.2f}s")
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        from tests.dashboard.browsing import CHROMIUM_ARGS

        with sync_playwright() as p:
            began = time.perf_counter()
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            run.figures["chromium_start_s"] = time.perf_counter() - began
            # The first user after a start: the fleet page while the dashboard may still
            # be reading the tables for it.
            context, page, t = open_page(browser, url + "/", PAGES[0][3], args.wait)
            run.figures["fleet_right_after_start"] = t
            log(
                f"{label}: fleet right after the start: DOM {t['dom']:.2f}s, content "
                f"{fmt(t['content'])}"
            )
            context.close()
            warm = re.search(r"aggregates computed in ([0-9.]+) s", logfile.read_text())
            run.figures["warm_s"] = float(warm.group(1)) if warm else None
            for short, title, path, selector in PAGES:
                link = url + path.format(big=urllib.parse.quote(big))
                context, page, t = open_page(browser, link, selector, args.wait)
                if t["content"] is None:
                    why = "it failed" if page.query_selector(FAILED) else "timed out"
                    run.problems.append(f"{title}: no content ({why})")
                reloads = []
                for _ in range(args.reloads):
                    began = time.perf_counter()
                    page.reload(wait_until="domcontentloaded", timeout=int(args.wait * 1000))
                    reloads.append(shown(page, selector, began, args.wait))
                tick = next_tick(page, args.refresh)
                t["reload"] = reloads
                t["tick"] = tick
                if short == "fleet" and t["content"] is not None:
                    run.fleet = fleet_facts(page)
                if short == "group":
                    # The timeline chart drawn, for the screenshot.
                    with contextlib.suppress(PageTimeout):
                        page.wait_for_selector("#timeline .main-svg", timeout=30_000)
                shot = shots / f"bench-dashboard-{label}-{short}.png"
                page.screenshot(path=str(shot), full_page=True)
                run.problems += [f"{title}: JavaScript error {e}" for e in page.errors]
                run.figures[short] = t
                log(
                    f"{label}: {title}: first DOM {t['dom']:.2f}s, content {fmt(t['content'])} "
                    f"({target(t['content'], BROWSER_TARGET_S)}); reload "
                    f"{', '.join(fmt(r) for r in reloads)}; timer refresh {tick['seconds']:.3f}s "
                    f"(HTTP {tick['status']})"
                )
                context.close()
            browser.close()
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
        run.figures["memory_hwm_mb"] = round(int(hwm.split()[1]) / 1024, 1)
    finally:
        proc.terminate()
        proc.wait(30)
    errors = [line for line in logfile.read_text().splitlines() if "ERROR" in line.split()[:4]]
    run.problems += [f"dashboard log: {line}" for line in errors[:5]]
    shutil.copy(logfile, shots / f"bench-dashboard-{label}.log")
    return run


def fmt(seconds: float | None) -> str:
    return "FAILED" if seconds is None else f"{seconds:.2f}s"


def best(times: list[float | None] | None) -> float | None:
    """The fastest of the reloads that showed their page (None: none did)."""
    return min((t for t in times or [] if t is not None), default=None)


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b <= 0:
        return "-"
    return f"x{a / b:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--delta-root", required=True, help="the tables (a start-up's job/delta)")
    ap.add_argument("--big-group", default=None, help="default: the most members in a snapshot")
    ap.add_argument("--baseline-groups", type=int, default=300, help="small fleet; 0: none")
    ap.add_argument("--refresh", type=int, default=10, help="the dashboard's --refresh")
    ap.add_argument("--reloads", type=int, default=2)
    ap.add_argument("--wait", type=float, default=300.0, help="seconds a page may take")
    ap.add_argument("--shots", default=str(ROOT / "test-artifacts"))
    args = ap.parse_args()
    root = Path(args.delta_root)
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="groupwatch-dash-browser-"))
    log(f"bench_dashboard_browser: {os.cpu_count()} cores, tables {root}")
    if args.big_group:
        big, members = args.big_group, None
    else:
        big, members = largest_group(root)
    groups = groups_in_tables(root)
    log(f"tables: {groups:,} groups in group_snapshots; largest group {big} ({members} members)")
    result: dict[str, Any] = {"delta_root": str(root), "groups": groups, "big": big}
    problems: list[str] = []

    small: Run | None = None
    if args.baseline_groups:
        from tests.dashboard import fleet_scenario

        began = time.perf_counter()
        facts = fleet_scenario.build(work / "small", groups=args.baseline_groups, big=20)
        log(f"baseline: {facts['groups']:,} groups written in {time.perf_counter() - began:.0f}s")
        small = browser_run("baseline", work / "small", fleet_scenario.BIG, args, work, shots)
        problems += [f"baseline {p}" for p in small.problems]
        if small.fleet:
            problems += [f"baseline {p}" for p in check_fleet(small.fleet, facts["groups"])]
        result["baseline"] = {"groups": facts["groups"], **small.figures}

    big_run = browser_run("startup", root, big, args, work, shots)
    problems += big_run.problems
    if big_run.fleet:
        problems += check_fleet(big_run.fleet, groups)
        f = big_run.fleet
        log(
            f"fleet: {f['total']:,} groups listed ({f['kpi_groups']} in its key figure), "
            f"{f['kpi_critical']} critical; first page {f['rows']} rows, health "
            f"{dict((h, f['healths'].count(h)) for h in dict.fromkeys(f['healths']))}; top "
            f"{', '.join(f['first_groups'])}"
        )
    result["browser"] = big_run.figures
    result["fleet"] = big_run.fleet

    log("server: the same pages in-process (a fresh process; first reads the tables)")
    urls = [(title, path.format(big=urllib.parse.quote(big))) for _, title, path, _ in PAGES]
    server = server_times(ROOT / "src", root, 2, urls)
    result["server"] = server
    for short, title, _, _ in PAGES:
        s = server["pages"][title]
        b = big_run.figures.get(short, {})
        log(
            f"server {title}: first {s['first']:.2f}s ({target(s['first'], SERVER_TARGET_S)}), "
            f"again {s['again']:.3f}s, refresh check {s['refresh'] * 1000:.1f} ms; browser / "
            f"server: first {ratio(b.get('content'), s['first'])}, reload "
            f"{ratio(best(b.get('reload')), s['again'])}"
        )
    if small is not None:
        for short, title, _, _ in PAGES:
            a, s = big_run.figures.get(short, {}), small.figures.get(short, {})
            log(
                f"against the small fleet, {title}: first {fmt(a.get('content'))} / "
                f"{fmt(s.get('content'))} {ratio(a.get('content'), s.get('content'))}; reload "
                f"{fmt(best(a.get('reload')))} / {fmt(best(s.get('reload')))} "
                f"{ratio(best(a.get('reload')), best(s.get('reload')))}"
            )
    log(f"dashboard memory (VmHWM): {big_run.figures.get('memory_hwm_mb')} MB")
    result["problems"] = problems
    result["load"] = load_text()
    for p in problems:
        log(f"PROBLEM: {p}")
    log("checks: " + ("all passed" if not problems else f"{len(problems)} problem(s)"))
    print(json.dumps(result), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
