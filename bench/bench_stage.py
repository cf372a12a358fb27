"""Benchmark: the job's Python stage over the cluster model's history, offline, by part.

    .venv/bin/python bench/bench_stage.py [--groups 10000] [--seed 1]

What the start-up run's "python (cogroup applyInArrow)" step does per group, without Spark:
each group's records of the model's history (group metadata and KIP-848 records; offset
commits never reach Python) go through the worker function (``process_arrow``: Arrow in,
``process_group``, rows and state JSON, Arrow out) in one call, as in the one-batch start-up
run. Printed: CPU seconds in all, and the part of it inside ``process_group`` (decode, the
findings engine, the rows), by group kind, with the records and output rows. The rest is the
Arrow conversions both ways and the state's JSON.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import cluster_model as cm  # noqa: E402
from bench_job import record_schema  # noqa: E402
from bench_worker import output_arrow_schema, state_table  # noqa: E402

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import processing  # noqa: E402
from groupwatch.protocol import decode_key  # noqa: E402
from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES  # noqa: E402

#: A commit key's first two bytes: commits never reach the Python stage, so it is fed none.
COMMIT_TYPES = tuple(t.to_bytes(2, "big") for t in OFFSET_COMMIT_TYPES)


def group_tables(groups: int, seed: int) -> tuple[dict[str, Any], dict[str, str]]:
    """Each group's history records as the cogroup's left side, and each group's kind."""
    import pyarrow as pa

    params = cm.Params(groups=groups, seed=seed, tail_generations=-1, tail_commits=0).resolved()
    model = cm.ClusterModel(params)
    kinds = {g.name: g.kind for g in model.groups}
    rows: dict[str, list[tuple[Any, ...]]] = collections.defaultdict(list)
    offsets: collections.Counter[int] = collections.Counter()
    for key, value, partition, ts in cm.history(model, 1_800_000_000_000):
        if key[:2] in COMMIT_TYPES:
            continue
        _, k = decode_key(key)
        name = getattr(k, "group", None) or getattr(k, "group_id", None)
        assert isinstance(name, str)
        rows[name].append((name, key, value, "mirror", partition, offsets[partition], ts))
        offsets[partition] += 1
    schema = record_schema()
    tables = {
        name: pa.Table.from_pydict(
            dict(zip(schema.names, map(list, zip(*recs, strict=True)), strict=True)),
            schema=schema,
        )
        for name, recs in rows.items()
    }
    return tables, kinds


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    from groupwatch.spark.python_stage import process_arrow

    started = time.perf_counter()
    tables, kinds = group_tables(args.groups, args.seed)
    schema = output_arrow_schema()
    detector = config_mod.load(ROOT / "conf" / "local.toml", env={}).detect.detector()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    records = sum(t.num_rows for t in tables.values())
    print(
        f"bench_stage: {len(tables):,} groups, {records:,} records of the model's history "
        f"(built in {time.perf_counter() - started:.1f}s); load {load}",
        flush=True,
    )
    # process_group's own share, timed from inside the worker function
    inner: dict[str, float] = {"s": 0.0}
    original = processing.process_group

    def timed(*a: Any, **kw: Any) -> processing.GroupResult:
        t = time.thread_time()
        try:
            return original(*a, **kw)
        finally:
            inner["s"] += time.thread_time() - t

    processing.process_group = timed  # type: ignore[assignment]
    detected_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    total: collections.Counter[str] = collections.Counter()
    engine: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    out_rows: collections.Counter[str] = collections.Counter()
    for name, rec in tables.items():
        kind = kinds.get(name, "?")
        last = rec.num_rows - 1
        clocks = {int(rec.column("partition")[last].as_py()): int(rec.column("ts")[last].as_py())}
        inner["s"] = 0.0
        t = time.thread_time()
        out = process_arrow(
            rec, state_table(name, None, None), detector, detected_at, schema, clocks, True
        )
        total[kind] += time.thread_time() - t
        engine[kind] += inner["s"]
        count[kind] += rec.num_rows
        out_rows[kind] += out.num_rows
    head = ("kind", "records", "rows out", "CPU s", "process_group", "rest")
    print("  {:<20} {:>9} {:>10} {:>7} {:>14} {:>6}".format(*head))
    for kind, seconds in total.most_common():
        print(
            f"  {kind:<20} {count[kind]:>9,} {out_rows[kind]:>10,} {seconds:>7.1f} "
            f"{engine[kind]:>14.1f} {seconds - engine[kind]:>6.1f}"
        )
    all_s, all_engine = sum(total.values()), sum(engine.values())
    print(
        f"  {'all':<20} {records:>9,} {sum(out_rows.values()):>10,} {all_s:>7.1f} "
        f"{all_engine:>14.1f} {all_s - all_engine:>6.1f}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
