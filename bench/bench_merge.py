"""Benchmark: one live batch's ``partition_ownership`` MERGE, by Spark and from the driver.

    .venv/bin/python bench/bench_merge.py [--rows 1300000] [--groups 10000] [--batches 6]
        [--batch-groups 20]

A ``partition_ownership`` table of ``--rows`` open intervals over ``--groups`` groups (the size
the 10,000-group cluster model reaches after start-up) is written once by Spark; then each of
``--batches`` batches rebalances ``--batch-groups`` groups: every interval of those groups is
closed and a new one opened, as the job's Python stage emits them. Each batch is MERGEd twice,
into two copies of the table: by Spark (``groupwatch.spark.sinks.merge``, the job's large-batch
path) and by delta-rs from the driver (``groupwatch.spark.deltawrite.merge_once``, the job's
small-batch path). Prints the seconds of each and the ratio, and checks that both copies end
with the same rows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch import config as config_mod  # noqa: E402
from groupwatch import tables  # noqa: E402
from groupwatch.spark import deltawrite, session, sinks  # noqa: E402

TABLE = tables.PARTITION_OWNERSHIP


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_300_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--batch-groups", type=int, default=20)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="groupwatch-merge-"))
    roots = {name: work / name for name in ("spark", "driver")}
    configs = {
        name: config_mod.load(
            ROOT / "conf" / "local.toml", env={}, overrides=[f"delta.root={root}"]
        )
        for name, root in roots.items()
    }
    spark = session.build_session(configs["spark"])
    from pyspark.sql import functions as F

    try:
        n, groups = args.rows, args.groups
        base = spark.range(n).select(
            F.concat(F.lit("group-"), (F.col("id") % groups).cast("string")).alias("group"),
            F.lit("classic").alias("group_type"),
            F.concat(F.lit("topic-"), (F.col("id") % 37).cast("string")).alias("topic"),
            (F.col("id") / groups).cast("int").alias("partition"),
            F.concat(F.lit("member-"), (F.col("id") % 13).cast("string")).alias("member_id"),
            F.lit("client").alias("client_id"),
            F.lit(1).alias("from_generation"),
            F.lit(dt.datetime(2026, 11, 1, tzinfo=dt.UTC)).alias("from_time"),
            F.lit(None).cast("int").alias("to_generation"),
            F.lit(None).cast("timestamp").alias("to_time"),
        )
        for name, cfg in configs.items():
            sinks.ensure_tables(spark, cfg)
            started = time.perf_counter()
            sinks.conform(base.repartition(4), TABLE).write.format("delta").mode("append").save(
                cfg.table_path(TABLE.name)
            )
            print(f"{name}: {n:,} intervals written in {time.perf_counter() - started:.1f}s")

        rng = random.Random(1)
        now = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
        seconds: dict[str, list[float]] = {"spark": [], "driver": []}
        for batch in range(args.batches):
            rows = []
            for g in rng.sample(range(groups), args.batch_groups):
                for i in range(g, n, groups):
                    tp = (f"group-{g}", "classic", f"topic-{i % 37}", i // groups)
                    gen = 2 + batch
                    rows.append((*tp, f"member-{i % 13}", "client", 1, now, gen, now))
                    rows.append((*tp, f"member-b{batch}", "client", gen, now, None, None))
            # The closes of the earlier batches' new owners are not in the table: only
            # intervals opened at generation 1 are closed, as a first rebalance would.
            frame = spark.createDataFrame(rows, TABLE.ddl)
            started = time.perf_counter()
            with sinks.transaction(spark, sinks.APP_ID, batch):
                sinks.merge(spark, frame, TABLE, configs["spark"])()
            seconds["spark"].append(time.perf_counter() - started)
            arrow = frame.toArrow()
            started = time.perf_counter()
            deltawrite.merge_once(
                sinks.local_table(configs["driver"], TABLE), TABLE, arrow, sinks.APP_ID, batch
            )
            seconds["driver"].append(time.perf_counter() - started)
            print(
                f"batch {batch}: {len(rows):,} rows; Spark {seconds['spark'][-1]:.2f}s, "
                f"driver (delta-rs) {seconds['driver'][-1]:.2f}s",
                flush=True,
            )
        counts = {
            name: spark.read.format("delta")
            .load(cfg.table_path(TABLE.name))
            .groupBy(F.col("to_generation").isNull().alias("open"))
            .count()
            .orderBy("open")
            .collect()
            for name, cfg in configs.items()
        }
        same = counts["spark"] == counts["driver"]
        # The first batch pays for warming up (JIT, Delta's first snapshot): medians of the rest.
        steady = {k: statistics.median(v[1:] or v) for k, v in seconds.items()}
        print(
            f"median after the first batch: Spark {steady['spark']:.2f}s, driver "
            f"{steady['driver']:.2f}s, ratio {steady['spark'] / steady['driver']:.1f}x; "
            f"same rows: {same} ({[tuple(r) for r in counts['spark']]})"
        )
        return 0 if same else 1
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
