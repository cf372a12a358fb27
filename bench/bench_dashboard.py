"""Benchmark: the dashboard's pages at fleet scale, server and headless Chromium.

    .venv/bin/python bench/bench_dashboard.py [--groups 10000] [--big 2000] [--delta-root DIR]
        [--baseline COMMIT] [--no-browser] [--repeat 3]

Tables: ``--delta-root`` (e.g. the tables ``bench/bench_cluster.py --bench startup --keep``
left), else ``--groups`` groups written with delta-rs by tests/dashboard/fleet_scenario.py
(classic groups of 1-6 members, a few critical, KIP-848 groups, and one group of ``--big``
members with its ownership intervals; the lag tables: every partition's lag, some groups
stopped, a lag history) into a temporary folder.

* server: each page's render in-process (``Pages.render``) on the same tables: the first
  request (reads the tables, computes the per-version aggregates), then ``--repeat`` more
  (same versions), and a refresh's check (the table versions, what the app compares);
  with ``--baseline COMMIT`` the same pages by that commit's code (``git archive`` into a
  temporary folder, run in a subprocess, the same repeats), ratios after/before.
* browser: ``groupwatch dashboard`` served on loopback, each page opened in headless Chromium
  and timed from ``goto`` to its content (the page's table or matrix), first and again.
* memory: the peak RSS of the served dashboard after the pages (VmHWM).

Prints one line per figure, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

#: (name, URL path and query, what shows the page's content).
PAGES = [
    ("fleet", "/", "#fleet-table tr[data-group]"),
    ("fleet by lag", "/?sort=lag", "#fleet-table tr[data-group]"),
    ("group (largest)", "/group?group={big}", "#ownership-matrix"),
    ("partition history (largest)", "/partitions?group={big}", "#ownership-table"),
    ("data health", "/health", "#validation-table"),
]

_SERVER = r"""
import json, sys, time
from pathlib import Path
from groupwatch.delta.read import DeltaStore
from groupwatch.dashboard.pages import Pages
from groupwatch.dashboard.filters import parse
root, repeat, urls = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
pages = Pages(DeltaStore(root))
out = {}
for name, url in urls:
    path, _, query = url.partition("?")
    times = []
    for _ in range(1 + repeat):
        started = time.perf_counter()
        pages.render(path, parse("?" + query))
        times.append(time.perf_counter() - started)
    check = None
    if hasattr(pages, "versions"):
        started = time.perf_counter()
        pages.versions()
        check = time.perf_counter() - started
    out[name] = {"first": times[0], "again": min(times[1:]) if repeat else None, "refresh": check}
    print(name, json.dumps(out[name]), file=sys.stderr, flush=True)
status = Path("/proc/self/status").read_text()
hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
print(json.dumps({"pages": out, "memory_hwm_mb": round(int(hwm.split()[1]) / 1024, 1)}))
"""


def log(text: str) -> None:
    print(text, flush=True)


def server_times(src: Path, root: Path, repeat: int, urls: list[tuple[str, str]]) -> Any:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", _SERVER, str(root), str(repeat), json.dumps(urls)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def browser_times(root: Path, urls: list[tuple[str, str, str]], work: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright
    from tests.dashboard.browsing import CHROMIUM_ARGS
    from tests.dashboard.tools import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupwatch.cli", "dashboard", "--delta-root", str(root),
         "--port", str(port), "--refresh", "10"],
        stdout=(work / "dashboard.log").open("wb"), stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {}
    try:
        import urllib.request

        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/_dash-layout", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            for name, path, selector in urls:
                times = []
                for _ in range(2):
                    started = time.perf_counter()
                    page.goto(url + path)
                    page.wait_for_selector(selector, timeout=600_000)
                    times.append(time.perf_counter() - started)
                out[name] = {"first": times[0], "again": times[1]}
                log(f"  browser {name}: first {times[0]:.2f}s, again {times[1]:.2f}s")
            browser.close()
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
        out["memory_hwm_mb"] = round(int(hwm.split()[1]) / 1024, 1)
    finally:
        proc.terminate()
        proc.wait(10)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--big", type=int, default=2000)
    ap.add_argument("--delta-root", help="existing tables (then --big-group names the largest)")
    ap.add_argument("--big-group", default=None)
    ap.add_argument("--baseline", default=None, help="a commit to compare with (server only)")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="groupwatch-dash-bench-"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    log(f"bench_dashboard: {os.cpu_count()} cores, load {load}")
    if args.delta_root:
        root, big = Path(args.delta_root), args.big_group
    else:
        from tests.dashboard import fleet_scenario

        root, big = work / "delta", fleet_scenario.BIG
        started = time.perf_counter()
        facts = fleet_scenario.build(root, groups=args.groups, big=args.big)
        log(f"tables: {facts['groups']:,} groups written in {time.perf_counter() - started:.0f}s")
    urls = [(n, p.format(big=big), s) for n, p, s in PAGES]
    result: dict[str, Any] = {"groups": args.groups, "big": args.big, "load": load}
    after = server_times(ROOT / "src", root, args.repeat, [(n, p) for n, p, _ in urls])
    result["server"] = after
    log(f"  server process memory (VmHWM): {after['memory_hwm_mb']} MB")
    after = after["pages"]
    for name, t in after.items():
        log(
            f"  server {name}: first {t['first']:.2f}s, again {t['again']:.3f}s, "
            f"refresh check {t['refresh'] * 1000:.1f} ms"
        )
    if args.baseline:
        old = work / "baseline"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", args.baseline, "src"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        pages = [(n, p) for n, p, _ in urls]
        before = server_times(old / "src", root, args.repeat, pages)["pages"]
        result["baseline"] = {"commit": args.baseline, "server": before}
        for name, t in before.items():
            again = t["again"] if t["again"] is not None else t["first"]
            log(
                f"  baseline {name}: first {t['first']:.2f}s, again {again:.3f}s "
                f"(after/before: first x{after[name]['first'] / max(t['first'], 1e-6):.2f}, "
                f"again x{after[name]['again'] / max(again, 1e-6):.2f})"
            )
    if not args.no_browser:
        result["browser"] = browser_times(root, urls, work)
        log(f"  dashboard memory (VmHWM): {result['browser']['memory_hwm_mb']} MB")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
