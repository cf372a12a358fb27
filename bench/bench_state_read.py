"""Benchmark: a live batch's state read at fleet size, by table scan and by key.

    .venv/bin/python bench/bench_state_read.py [--groups 100000] [--state-kb 18]
        [--startup-batches 4] [--live-batches 40] [--batch-groups 300] [--touch 10]
        [--samples 5] [--keep DIR]

A ``group_state`` table as a start-up and a live run leave it: ``--startup-batches`` batches
written by Spark that together hold a version of each of ``--groups`` groups (about
``--state-kb`` KB of JSON each, written by the Spark path in hash-partitioned files), then
``--live-batches`` batches written from the driver by delta-rs, each with new versions of
``--batch-groups`` random groups.  Then ``--samples`` live batches each ask for the state of
``--touch`` random groups (groups with a group record in the batch: a rebalance) and for the
due groups, three ways:

- ``table scan``: what the job did whenever its cache was off or over its budget (at 100,000
  groups the texts are 1.8-2.5 GB, over the default 1,024 MB): ``state_store.prior_state``
  (the table read with a window per group) and ``state_store.due_groups`` (another);
- ``by key, driver``: the cache holding every group's key and none of the texts (the worst
  case: every group asked is cold), the texts read by key with delta-rs
  (``StateStore.prior_arrow``, a small batch on local tables), due groups from the keys;
- ``by key, workers``: the same read by Spark (``StateStore.prior_state``, a large batch or
  tables on an object store).

The two ways by key run on two copies of the table: ``before``, its files as the job wrote
them until ``Table.read_by`` (as they come, a start-up's file one row group), and ``now``,
written by the job's own writers (``sinks.append_once``, ``delta.write.append_once``: each
file sorted by group, in small row groups).

Prints the seconds of each (median and slowest), the ratios to the table scan, the cache's
load time and size, and the process's resident memory; and checks that every way reads the
same states.  ``--keep DIR`` keeps (and reuses) the table there.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_job import status_kb  # noqa: E402

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import tables  # noqa: E402
from groupwatch.spark import session, sinks, state_store  # noqa: E402
from groupwatch.spark.state_cache import StateCache  # noqa: E402

#: How the table's files are laid out: as the job wrote them before ``Table.read_by``, and now.
LAYOUTS = ("before", "now")


def name(i: int) -> str:
    return f"group-{i:07d}"


def build(spark, cfg, args, layout: str) -> None:  # type: ignore[no-untyped-def]
    """The table as a start-up (Spark) and live batches (delta-rs) leave it: ``now`` through
    the job's own writers (each file sorted by group in small row groups), ``before`` as they
    wrote it until then (files as they come, one row group to a start-up's file)."""
    import dataclasses

    import pyarrow as pa
    from pyspark.sql import functions as F

    from groupwatch.delta import write as deltawrite

    table = tables.GROUP_STATE
    if layout == "before":
        table = dataclasses.replace(table, read_by="")

    path = cfg.table_path(tables.GROUP_STATE.name)
    groups, first = args.groups, args.startup_batches
    members = max(1, args.state_kb * 1024 // 90)  # each member entry is about 90 characters
    started = time.monotonic()
    for b in range(first):
        ids = spark.range(b * groups // first, (b + 1) * groups // first)
        named = ids.select(F.format_string("group-%07d", "id").alias("group"))
        entry = lambda i: F.concat(  # noqa: E731
            F.lit('{"member":"member-'),
            i.cast("string"),
            F.lit("-"),
            F.sha2(F.concat(F.col("group"), i.cast("string")), 256),
            F.lit('","partitions":['),
            i.cast("string"),
            F.lit("]}"),
        )
        text = F.concat(
            F.lit('{"members":['),
            F.concat_ws(",", F.transform(F.sequence(F.lit(1), F.lit(members)), entry)),
            F.lit("]}"),
        )
        rows = named.select(
            "group",
            F.lit(b).cast("long").alias("batch_id"),
            text.alias("state"),
            F.lit(dt.datetime(2026, 12, 1, tzinfo=dt.UTC)).alias("last_event_time"),
            F.lit(False).alias("deleted"),
            F.lit(None).cast("timestamp").alias("pending_until"),
            F.lit(None).cast("int").alias("pending_partition"),
        ).repartition(8, "group")  # as the Python stage's output comes: by group
        sinks.append_once(rows, table, cfg, "bench", b)
    print(
        f"{layout}: start-up of {groups:,} groups in {first} batches written in "
        f"{time.monotonic() - started:.1f}s"
    )
    rnd = random.Random(7)
    local = Path(path)
    now = dt.datetime(2026, 12, 1, 0, 5, tzinfo=dt.UTC)
    for b in range(first, first + args.live_batches):
        chosen = sorted(rnd.sample(range(groups), args.batch_groups))
        n = len(chosen)
        # A third await a confirmation, on partition 0 (the due groups' look-up has work).
        until = [now if i % 3 == 0 else None for i in chosen]
        deltawrite.append_once(
            local,
            table,
            pa.table(
                {
                    "group": pa.array([name(i) for i in chosen], pa.string()),
                    "batch_id": pa.array([b] * n, pa.int64()),
                    "state": pa.array(
                        ['{"live":"' + "x" * (args.state_kb * 1024) + f'","b":{b}}}'] * n,
                        pa.string(),
                    ),
                    "last_event_time": pa.array([now] * n, pa.timestamp("us", "UTC")),
                    "deleted": pa.array([False] * n),
                    "pending_until": pa.array(until, pa.timestamp("us", "UTC")),
                    "pending_partition": pa.array([0 if u else None for u in until], pa.int32()),
                }
            ),
            "bench",
            b,
        )
    print(f"{layout}: {args.live_batches} live batches of {args.batch_groups} groups written")


def rows(arrow) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    """The state rows (with a text) as sorted tuples."""
    picked = arrow.select(["group", "state", "last_event_ms"]).to_pylist()
    return sorted(tuple(r.values()) for r in picked if r["state"] is not None)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--state-kb", type=int, default=18)
    ap.add_argument("--startup-batches", type=int, default=4)
    ap.add_argument("--live-batches", type=int, default=40)
    ap.add_argument("--batch-groups", type=int, default=300)
    ap.add_argument("--touch", type=int, default=10)
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None)
    args = ap.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="groupwatch-state-read-"))
    configs = {
        layout: config_mod.load(
            ROOT / "conf" / "local.toml", env={}, overrides=[f"delta.root={work / layout}"]
        )
        for layout in LAYOUTS
    }
    spark = session.build_session(configs["now"])
    try:
        batch = args.startup_batches + args.live_batches
        clocks = {0: int(dt.datetime(2026, 12, 2, tzinfo=dt.UTC).timestamp() * 1000)}
        stores = {}
        for layout, cfg in configs.items():
            if not (work / layout / tables.GROUP_STATE.name).exists():
                build(spark, cfg, args, layout)
            sinks.ensure_tables(spark, cfg)
            store = state_store.StateStore(spark, cfg)
            # Room for every key and no text: every group a batch asks for is read by key.
            store.cache = StateCache(args.groups * 200 + 1)
            started = time.monotonic()
            store.serve(batch)
            assert store.cache is not None
            print(
                f"{layout}: cache loaded in {time.monotonic() - started:.1f}s: "
                f"{len(store.cache):,} groups, {store.cache.size_bytes / 1e6:.1f} MB counted, "
                f"texts held: {'all' if store.cache.holds_all_texts else 'not all'}; "
                f"process RSS {status_kb(os.getpid(), 'VmRSS') / 1024:,.0f} MB"
            )
            stores[layout] = store
        rnd = random.Random(11)
        seconds: dict[str, list[float]] = {}
        for sample in range(args.samples):
            asked = sorted(name(i) for i in rnd.sample(range(args.groups), args.touch))
            frame = spark.createDataFrame([(g,) for g in asked], "group string")
            cfg = configs["before"]
            t = time.monotonic()
            scanned = state_store.prior_state(spark, cfg, frame, batch).toArrow()
            due_scan = state_store.due_groups(spark, cfg, batch, clocks)
            seconds.setdefault("table scan (before)", []).append(time.monotonic() - t)
            assert len(rows(scanned)) == len(asked), (len(rows(scanned)), len(asked))
            for layout, store in stores.items():
                t = time.monotonic()
                on_driver = store.prior_arrow(asked, batch)
                due_keys = store.due_groups(batch, clocks)
                seconds.setdefault(f"by key, driver, {layout}", []).append(time.monotonic() - t)
                t = time.monotonic()
                in_workers = store.prior_state(frame, batch).toArrow()
                seconds.setdefault(f"by key, workers, {layout}", []).append(time.monotonic() - t)
                assert rows(scanned) == rows(on_driver) == rows(in_workers), (sample, layout)
                assert due_scan == due_keys and due_keys, (len(due_scan), len(due_keys))
        base = statistics.median(seconds["table scan (before)"])
        print(
            f"{args.groups:,} groups, {args.touch} asked a batch, {len(due_scan):,} due, "
            f"{args.samples} samples (median / slowest, ratio to the table scan):"
        )
        for arm, values in seconds.items():
            mid = statistics.median(values)
            print(f"  {arm:<26} {mid:6.2f}s / {max(values):6.2f}s   x{mid / base:.2f}")
        print(f"process RSS at the end {status_kb(os.getpid(), 'VmRSS') / 1024:,.0f} MB")
    finally:
        spark.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
