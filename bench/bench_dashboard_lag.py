"""Benchmark: what the lag views add to the dashboard's pages, interleaved in one process.

    .venv/bin/python bench/bench_dashboard_lag.py [--groups 10000] [--repeat 9]

The tables of tests/dashboard/fleet_scenario.py (the lag tables included) and the same tables
without the lag tables (a job before lag), each read by its own ``Pages``; every page rendered
alternately on both, ``--repeat`` times each after a warm-up (same table versions, the
per-version aggregates kept), medians and their ratio; then ``views.lag.group_lag`` alone (what
a new ``partition_lag`` version costs the fleet page). Interleaving keeps a shared machine's
load changes out of the ratio, which separate before/after runs do not.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

LAG_TABLES = ("partition_lag", "lag_history", "end_offsets")
URLS = ("/", "/?sort=lag", "/group?group={big}")


def main() -> int:
    from tests.dashboard import fleet_scenario

    from groupwatch.dashboard.filters import parse
    from groupwatch.dashboard.pages import Pages
    from groupwatch.dashboard.views import lag
    from groupwatch.delta.read import DeltaStore

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench_dashboard_lag: {os.cpu_count()} cores, load {load}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="groupwatch-dash-lag-"))
    fleet_scenario.build(work / "with", groups=args.groups, big=2000)
    (work / "without").mkdir()
    for table in os.listdir(work / "with"):
        if table not in LAG_TABLES:
            os.symlink(work / "with" / table, work / "without" / table)
    pages = {k: Pages(DeltaStore(work / k)) for k in ("with", "without")}
    for p in pages.values():  # the first request: tables read, per-version aggregates kept
        p.render("/", parse(""))
        p.render("/group", parse(f"?group={fleet_scenario.BIG}"))
    for url in URLS:
        path, _, query = url.format(big=fleet_scenario.BIG).partition("?")
        times: dict[str, list[float]] = {"with": [], "without": []}
        for _ in range(args.repeat):
            for name, p in pages.items():
                started = time.perf_counter()
                p.render(path, parse("?" + query))
                times[name].append(time.perf_counter() - started)
        w, wo = statistics.median(times["with"]), statistics.median(times["without"])
        print(f"{url}: with lag tables {w * 1000:.0f} ms, without {wo * 1000:.0f} ms, "
              f"ratio x{w / wo:.2f}", flush=True)  # fmt: skip
    rows = DeltaStore(work / "with").read("partition_lag")
    started = time.perf_counter()
    for _ in range(5):
        lag.group_lag(rows)
    each = (time.perf_counter() - started) / 5
    print(f"group_lag: {len(rows):,} partition_lag rows, {rows['group'].nunique():,} groups: "
          f"{each * 1000:.0f} ms (once per partition_lag version)")  # fmt: skip
    print(f"load after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
