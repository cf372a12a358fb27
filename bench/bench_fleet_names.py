"""Benchmark: what listing the groups of ``partition_ownership``, ``group_state`` and the offsets
tables costs the fleet page, at fleet scale, in one process.

    .venv/bin/python bench/bench_fleet_names.py [--groups 10000] [--batches 20] [--repeat 5]

Tables: tests/dashboard/fleet_scenario.py's fleet of ``--groups`` groups (written with
delta-rs), ``group_state`` appended ``--batches`` times (a file each, every group once over
them) and ``committed_offsets`` with three partitions per group, under the fleet's own names.

* names: the first read of the tables' group column (``pages.fleet.named``, one column a file)
  and a read again at the same versions;
* a request: ``views.fleet_rows`` on the row per group that lists every group (added once per
  table version, what the page does), against the row per group with snapshots and the groups
  of findings, members and lag added at the request (the page before), best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.dashboard import fleet_scenario  # noqa: E402
from tests.dashboard.scenario import write  # noqa: E402

from groupwatch.dashboard import views  # noqa: E402
from groupwatch.dashboard.filters import Filters  # noqa: E402
from groupwatch.dashboard.memo import Memo  # noqa: E402
from groupwatch.dashboard.pages import fleet  # noqa: E402
from groupwatch.delta.read import DeltaStore  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="groupwatch-names-bench-"))
    fleet_scenario.build(root, groups=args.groups)
    names = sorted(set(DeltaStore(root).read("group_snapshots")["group"]))
    per = -(-len(names) // args.batches)
    for b in range(args.batches):
        batch = names[b * per : (b + 1) * per]
        states = [{"group": g, "batch_id": b, "state": "{}"} for g in batch]
        write(root, "group_state", states, mode="append")
    offsets = [{"group": g, "topic": "t", "partition": p} for g in names for p in range(3)]
    write(root, "committed_offsets", offsets)
    memo = Memo(DeltaStore(root))
    started = time.perf_counter()
    fleet.named(memo)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    fleet.named(memo)
    again = time.perf_counter() - started

    def request(complete: bool) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            views.fleet_rows(
                fleet.base(memo) if complete else fleet.known(memo),
                fleet.snapshots(memo),
                memo.read("findings"),
                fleet.topics(memo),
                Filters(),
                group_lag=fleet.group_lag(memo),
                complete=complete,
            )
            best = min(best, time.perf_counter() - started)
        return best

    now, before = request(True), request(False)
    listed = len(fleet.table(memo, Filters()))
    print(f"groups listed: {listed:,}")
    print(f"names: first {cold:.3f} s, again {again * 1000:.2f} ms")
    print(f"a request: {now * 1000:.1f} ms listing every group, {before * 1000:.1f} ms before")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
