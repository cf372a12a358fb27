"""Benchmark: the committed offsets' fold of a poll's staged batches, as columns against value by
value (the rule as it reads), in one run.

    .venv/bin/python bench/bench_fold.py [--rows 176000] [--batches 12] [--groups 10000]
        [--repeat 3]

``--rows`` staged rows (``committed_changes``' columns) over ``--batches`` batches of
``--groups`` groups' partitions, drawn as the cluster model commits (uniformly over the
partitions, a few tombstones, offsets that move or stay), are folded by
``committed_fold.fold`` and by ``committed_fold.fold_by_values``; prints the best of
``--repeat`` of each, the ratio, and whether the two agree.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import pyarrow as pa  # noqa: E402

from groupwatch import committed_fold  # noqa: E402
from groupwatch.delta import read as deltaread  # noqa: E402


def staged(rows: int, batches: int, groups: int, seed: int = 1) -> pa.Table:
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)
    seen: dict[tuple[int, str, str, int], dict[str, object]] = {}
    while len(seen) < rows:
        batch = rng.randrange(batches)
        group, topic = f"group-{rng.randrange(groups)}", f"topic-{rng.randrange(5)}"
        partition = rng.randrange(24)
        tombstone = rng.random() < 0.01
        stamp = t0 + dt.timedelta(seconds=batch * 5 + rng.random() * 5)
        seen[(batch, group, topic, partition)] = {
            "batch_id": batch, "group": group, "topic": topic, "partition": partition,
            "tombstone": tombstone,
            "committed_offset": None if tombstone else rng.randrange(1000),
            "leader_epoch": None if tombstone else 1,
            "metadata_size": None if tombstone else 0,
            "commit_time": None if tombstone else stamp,
            "moved_time": None if tombstone else stamp,
            "changes": rng.choice([0, 0, 0, 1]), "commits": rng.randrange(1, 4),
        }  # fmt: skip
    schema = deltaread.schema("committed_changes")
    return pa.Table.from_pylist(list(seen.values())).select(schema.names).cast(schema)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=176_000)
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = staged(args.rows, args.batches, args.groups)
    best: dict[str, float] = {}
    results = {}
    for name, run in (
        ("columns", committed_fold.fold),
        ("by values", committed_fold.fold_by_values),
    ):
        for _ in range(args.repeat):
            started = time.perf_counter()
            results[name] = run(rows)
            took = time.perf_counter() - started
            best[name] = min(best.get(name, took), took)
        print(f"{name}: {best[name]:.3f} s for {rows.num_rows:,} staged rows", flush=True)
    columns, by_values = results["columns"].to_pylist(), results["by values"]
    same = len(columns) == len(by_values) and all(
        (r["changes"], r["commits"], r["replace"], r["moved_time"])
        == (
            (c := by_values[(r["group"], r["topic"], r["partition"])]).changes,
            c.commits,
            c.replace,
            c.moved,
        )
        for r in columns
    )
    print(
        f"{len(columns):,} partitions folded; columns {best['by values'] / best['columns']:.1f}x "
        f"faster than by values; the same: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
