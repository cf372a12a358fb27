"""Benchmark: a small batch's offset hints read from ``group_offsets`` at fleet size.

    .venv/bin/python bench/bench_offset_hints.py [--groups 10000,100000] [--topics 3]
        [--files 10] [--asked 10,300] [--samples 7]

A small batch on local tables reads the offset hints of its groups (the partition counts and
last commit times of earlier batches' offset commits, ``state_store.local_offset_hints``) with
delta-rs from ``group_offsets`` as of the version before the batch: the whole table's four
columns, filtered to the batch's groups in Arrow.  That read grows with the fleet, not with
the batch; this measures how much.

For each ``--groups`` size, a ``group_offsets`` of ``--topics`` rows a group (one per topic it
commits to) written in ``--files`` appends of shuffled rows (as MERGEs leave it: no file holds
a range of groups), then ``--samples`` reads of the hints of ``--asked`` random groups.
Prints the median and slowest read per size and the ratio of each size's median to the first
size's (the baseline), and checks that each read returns the asked groups' rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch.spark.state_store import local_offset_hints  # noqa: E402


def build(path: Path, groups: int, topics: int, files: int, seed: int) -> int:
    """The table at ``path``; its version."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    rng = random.Random(seed)
    keys = [(f"group-{g:07d}", f"topic-{t}") for g in range(groups) for t in range(topics)]
    rng.shuffle(keys)
    when = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    step = -(-len(keys) // files)
    for i in range(0, len(keys), step):
        part = keys[i : i + step]
        write_deltalake(
            str(path),
            pa.table(
                {
                    "group": pa.array([g for g, _ in part], pa.string()),
                    "topic": pa.array([t for _, t in part], pa.string()),
                    "max_partition": pa.array([rng.randrange(64) for _ in part], pa.int32()),
                    "last_commit_time": pa.array([when] * len(part), pa.timestamp("us", "UTC")),
                }
            ),
            mode="append",
        )
    return DeltaTable(str(path)).version()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", default="10000,100000")
    ap.add_argument("--topics", type=int, default=3)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--asked", default="10,300")
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    sizes = [int(s) for s in args.groups.split(",")]
    asked_sizes = [int(s) for s in args.asked.split(",")]
    medians: dict[tuple[int, int], float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-hints-") as tmp:
        for groups in sizes:
            path = Path(tmp) / f"group_offsets-{groups}"
            started = time.monotonic()
            version = build(path, groups, args.topics, args.files, seed=groups)
            print(
                f"{groups:,} groups: {groups * args.topics:,} rows in {args.files} files, "
                f"written in {time.monotonic() - started:.1f}s"
            )
            rng = random.Random(1)
            names = [f"group-{g:07d}" for g in range(groups)]
            for asked in asked_sizes:
                times = []
                for _ in range(args.samples):
                    chosen = rng.sample(names, asked)
                    t = time.perf_counter()
                    hints = local_offset_hints(path, version, chosen)
                    times.append(time.perf_counter() - t)
                    assert hints.num_rows == asked * args.topics, hints.num_rows
                    assert set(hints.column("group").to_pylist()) == set(chosen)
                medians[(groups, asked)] = statistics.median(times)
                print(
                    f"  {asked} groups asked: median {statistics.median(times) * 1000:.0f} ms, "
                    f"slowest {max(times) * 1000:.0f} ms"
                )
    base = sizes[0]
    print("== summary == (median read; ratio to the first size)")
    for (groups, asked), median in medians.items():
        print(
            f"{groups:>9,} groups, {asked:>4} asked: {median * 1000:6.0f} ms  "
            f"x{median / medians[(base, asked)]:.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
