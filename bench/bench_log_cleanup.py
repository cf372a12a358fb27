"""Benchmark: a small append's time as the log grows, with the writers' expired-log cleanup
(Delta's default, what the job had) and without it (upkeep on: upkeep's turn removes them).

    .venv/bin/python bench/bench_log_cleanup.py [--versions 3000] [--step 500]

Two tables made with the job's table properties (``groupwatch.upkeep.properties``) for upkeep
off and on, appended to in step with the job's own writer (``deltawrite.append_once``, ten
``group_snapshots`` rows a commit), no upkeep turn in between (what grows is the log, which a
turn only trims to the retention); the median append time per ``--step`` versions of each,
and their ratio.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import pyarrow as pa  # noqa: E402
from deltalake import write_deltalake  # noqa: E402

from groupwatch import tables, upkeep  # noqa: E402
from groupwatch.config import UpkeepConfig  # noqa: E402
from groupwatch.delta import read as deltaread  # noqa: E402
from groupwatch.delta import write as deltawrite  # noqa: E402


def _rows(batch: int) -> pa.Table:
    names = tables.GROUP_SNAPSHOTS.column_names
    day = dt.date(2026, 11, 28)
    rows = [
        {"group": f"g{i}", "generation": batch, "member_count": i, "snapshot_date": day}
        for i in range(10)
    ]
    return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--versions", type=int, default=3000)
    ap.add_argument("--step", type=int, default=500)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="groupwatch-log-cleanup-"))
    ways = {"writers clean (before)": 0, "upkeep cleans (now)": 20}
    paths = {}
    for name, every in ways.items():
        path = root / str(every)
        write_deltalake(
            str(path),
            deltaread.schema(tables.GROUP_SNAPSHOTS.name).empty_table(),
            partition_by=list(tables.GROUP_SNAPSHOTS.partition_by),
            configuration=upkeep.properties(UpkeepConfig(every_n_batches=every)),
        )
        paths[name] = path
    times: dict[str, list[float]] = {name: [] for name in ways}
    print(f"{'versions':>10} " + " ".join(f"{n:>24}" for n in ways) + f" {'ratio':>7}")
    for batch in range(args.versions):
        data = _rows(batch)
        for name, path in paths.items():
            began = time.perf_counter()
            deltawrite.append_once(path, tables.GROUP_SNAPSHOTS, data, "bench", batch)
            times[name].append(time.perf_counter() - began)
        if (batch + 1) % args.step == 0:
            medians = [statistics.median(times[n][-args.step :]) * 1000 for n in ways]
            cells = " ".join(f"{m:21.1f} ms" for m in medians)
            print(f"{batch + 1:>10} {cells} {medians[1] / medians[0]:7.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
