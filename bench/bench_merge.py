"""Benchmark: one live batch's ``partition_ownership`` MERGE, by Spark and from the driver.

    .venv/bin/python bench/bench_merge.py [--rows 1300000] [--groups 10000] [--batches 6]
        [--batch-groups 20] [--no-spark]

A ``partition_ownership`` table of ``--rows`` open intervals over ``--groups`` groups (the size
the 10,000-group cluster model reaches after start-up) is written once by Spark; then each of
``--batches`` batches rebalances ``--batch-groups`` groups: every interval of those groups is
closed and a new one opened, as the job's Python stage emits them. Each batch is MERGEd twice,
into two copies of the table: by Spark (``groupwatch.spark.sinks.merge``, the job's large-batch
path) and by delta-rs from the driver (``groupwatch.delta.write.merge_once``, the job's
small-batch path); and by delta-rs into a third copy laid out as before the open intervals
were bucketed by group (``to_date`` the only partition column, the MERGE's condition naming no
bucket), the baseline of the bucketed layout. Prints the seconds of each and the ratios, and
checks that every copy ends with the same rows.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from groupwatch.delta import write as deltawrite  # noqa: E402
from groupwatch.spark import session, sinks  # noqa: E402

TABLE = tables.PARTITION_OWNERSHIP


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_300_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--batch-groups", type=int, default=20)
    ap.add_argument("--no-spark", action="store_true", help="leave out Spark's MERGE")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="groupwatch-merge-"))
    arms = ("driver", "one partition") if args.no_spark else ("spark", "driver", "one partition")
    # The baseline layout: the open intervals one partition, as before the bucket column.
    layouts = {
        name: dataclasses.replace(TABLE, partition_by=("to_date",), merge_bucket="")
        if name == "one partition"
        else TABLE
        for name in arms
    }
    roots = {name: work / name.replace(" ", "-") for name in arms}
    configs = {
        name: config_mod.load(
            ROOT / "conf" / "local.toml", env={}, overrides=[f"delta.root={root}"]
        )
        for name, root in roots.items()
    }
    spark = session.build_session(configs["driver"])
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
        # The partition columns as the job's rows fill them (all open: no day, a bucket).
        for column, expression in TABLE.derived:
            base = base.withColumn(column, F.expr(expression))
        for name, cfg in configs.items():
            layout = layouts[name]
            started = time.perf_counter()
            (
                sinks.conform(base.repartition(4), layout)
                .write.format("delta")
                .partitionBy(*layout.partition_by)
                .save(cfg.table_path(TABLE.name))
            )
            print(f"{name}: {n:,} intervals written in {time.perf_counter() - started:.1f}s")

        rng = random.Random(1)
        now = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
        seconds: dict[str, list[float]] = {name: [] for name in arms}
        for batch in range(args.batches):
            rows = []
            for g in rng.sample(range(groups), args.batch_groups):
                for i in range(g, n, groups):
                    tp = (f"group-{g}", "classic", f"topic-{i % 37}", i // groups)
                    gen = 2 + batch
                    bucket = tables.group_bucket(tp[0])
                    rows.append(
                        (*tp, f"member-{i % 13}", "client", 1, now, gen, now, now.date(), None)
                    )
                    rows.append(
                        (*tp, f"member-b{batch}", "client", gen, now, None, None, None, bucket)
                    )
            # The closes of the earlier batches' new owners are not in the table: only
            # intervals opened at generation 1 are closed, as a first rebalance would.
            frame = spark.createDataFrame(rows, TABLE.ddl)
            if "spark" in arms:
                started = time.perf_counter()
                with sinks.transaction(spark, sinks.APP_ID, batch):
                    sinks.merge(spark, frame, TABLE, configs["spark"])()
                seconds["spark"].append(time.perf_counter() - started)
            arrow = frame.toArrow()
            # The two delta-rs layouts in turn, first one then the other, batch by batch.
            for name in sorted(set(arms) - {"spark"}, reverse=batch % 2 == 1):
                started = time.perf_counter()
                deltawrite.merge_once(
                    sinks.local_table(configs[name], TABLE),
                    layouts[name],
                    arrow,
                    sinks.APP_ID,
                    batch,
                )
                seconds[name].append(time.perf_counter() - started)
            print(
                f"batch {batch}: {len(rows):,} rows; "
                + ", ".join(f"{name} {seconds[name][-1]:.2f}s" for name in arms),
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
        same = all(c == counts["driver"] for c in counts.values())
        # The first batch pays for warming up (JIT, Delta's first snapshot): medians of the rest.
        steady = {k: statistics.median(v[1:] or v) for k, v in seconds.items()}
        base_s = steady["one partition"]
        print(
            "median after the first batch: "
            + ", ".join(
                f"{name} {steady[name]:.2f}s ({base_s / steady[name]:.1f}x the one partition's)"
                for name in arms
            )
            + f"; same rows: {same} ({[tuple(r) for r in counts['driver']]})"
        )
        return 0 if same else 1
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
