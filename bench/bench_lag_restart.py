"""Benchmark: what a restart reads back of ``end_offsets``, and what it costs.

    .venv/bin/python bench/bench_lag_restart.py [--partitions 20000] [--rows 1440]
        [--behind 0.01] [--keep DIR]

Writes an ``end_offsets`` table as the job leaves it after a day (``--rows`` rows per
partition, a minute apart, each partition's end growing by 100 a row: the busy partitions'
history at the shipped ``lag.history_row_seconds``) and a ``committed_offsets`` table: a
group a row behind on every partition, and on a ``--behind`` share a group stopped at the
day's start.  Then, each in a process of its own (its peak memory its own): the job's
read-back (``groupwatch.spark.lag_read.read_history``: the table scanned batch by batch, each
reduced to the committed partitions' windows) against the read-back before it (the whole
table since ``lag.history_hours`` as Python rows, sorted: the code of 4353466, inlined
here), and what each hands the keeper.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _build(root: Path, partitions: int, rows: int, behind: float) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from groupwatch.delta.read import schema

    start = dt.datetime.now(tz=dt.UTC) - dt.timedelta(minutes=rows)
    t0_us = int(start.timestamp() * 1_000_000)
    target = schema("end_offsets")
    print(f"writing {partitions * rows:,} end_offsets rows", flush=True)
    chunk = max(1, 2_000_000 // partitions)
    for first in range(0, rows, chunk):
        steps = range(first, min(rows, first + chunk))
        n = len(steps) * partitions
        topics = pa.array([f"topic-{p // 100}" for p in range(partitions)] * len(steps))
        parts = pa.array([p % 100 for p in range(partitions)] * len(steps), pa.int32())
        ends = pa.array([100 * i for i in steps for _ in range(partitions)], pa.int64())
        at = pa.array(
            [t0_us + i * 60_000_000 for i in steps for _ in range(partitions)], pa.int64()
        ).cast(pa.timestamp("us", tz="UTC"))
        table = pa.Table.from_arrays(
            [topics, parts, pa.array([0] * n, pa.int64()), ends, at], schema=target
        )
        write_deltalake(str(root / "end_offsets"), table, mode="append")
    stopped = int(partitions * behind)
    commits = [
        {
            "group": "steady",
            "topic": f"topic-{p // 100}",
            "partition": p % 100,
            "committed_offset": 100 * (rows - 2),
            "commit_time": start + dt.timedelta(minutes=rows),
        }
        for p in range(partitions)
    ] + [
        {
            "group": "stopped",
            "topic": f"topic-{p // 100}",
            "partition": p % 100,
            "committed_offset": 50,
            "commit_time": start,
        }
        for p in range(stopped)
    ]
    full = schema("committed_offsets")
    write_deltalake(
        str(root / "committed_offsets"),
        pa.Table.from_pylist([{f.name: r.get(f.name) for f in full} for r in commits], full),
    )


def _ms(value: object) -> int | None:
    """A timestamp column's value in ms, as the baseline's read-back took it."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    return int(value)  # type: ignore[call-overload]


def _child(root: Path, way: str) -> None:
    from groupwatch import config as config_mod
    from groupwatch import tables
    from groupwatch.detect.lag.model import EndOffset
    from groupwatch.detect.lag.poll import commit_floors
    from groupwatch.spark import lag_read, lag_store

    cfg = config_mod.load(None, env={}, overrides=[f"delta.root={root}"])
    since = int(time.time() * 1000) - cfg.lag.history_hours * 3_600_000
    began = time.perf_counter()
    floors = commit_floors(lag_read.read_commits(cfg))
    if way == "now":
        rows, newest = lag_read.read_history(cfg, since, floors)
        points = len(rows) + len(newest)
    else:
        data = lag_store.read_columns(
            cfg,
            tables.END_OFFSETS,
            ["topic", "partition", "start_offset", "end_offset", "observed_at"],
        )
        assert data is not None
        every = [
            EndOffset(r["topic"], r["partition"], r["start_offset"], r["end_offset"], at)
            for r in data.to_pylist()
            if (at := _ms(r["observed_at"])) is not None and at >= since
        ]
        every.sort(key=lambda e: (e.topic, e.partition, e.observed_ms))
        points = len(every)
    took = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": took, "points": points, "peak_mb": peak}))


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=1440)
    ap.add_argument("--behind", type=float, default=0.01)
    ap.add_argument("--keep", default=None, help="build the tables here (or reuse them)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(Path(args.keep), args.child)
        return 0
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="groupwatch-restart-"))
    if not (root / "end_offsets").exists():
        _build(root, args.partitions, args.rows, args.behind)
    results = {}
    for way in ("before", "now"):
        out = subprocess.run(
            [sys.executable, __file__, "--keep", str(root), "--child", way],
            capture_output=True,
            text=True,
            check=True,
        )
        results[way] = json.loads(out.stdout.strip().splitlines()[-1])
        print(way, results[way], flush=True)
    b, n = results["before"], results["now"]
    print(f"\n{'':24} {'before':>12} {'now':>12} {'ratio':>8}")
    for key in ("seconds", "points", "peak_mb"):
        print(f"{key:24} {b[key]:12,.2f} {n[key]:12,.2f} {n[key] / b[key]:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
