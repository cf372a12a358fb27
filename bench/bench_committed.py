"""Benchmark: a start-up's two offset-commit steps over a synthetic batch (no brokers).

    .venv/bin/python bench/bench_committed.py [--records 2300000] [--partitions 1200000]
        [--repeat 2] [--baseline COMMIT]
    .venv/bin/python bench/bench_committed.py --live 5000 [--partitions 1200000] [--repeat 5]

A persisted batch of ``--records`` offset commits over ``--partitions`` distinct (group, topic,
partition)s, as a start-up reads them from ``__consumer_offsets``: group names of 20-30
characters, topic names of 15-25, partitions 0-499, mostly v3 values, some v1 and v4, a few
tombstones; every partition has one commit, the rest go to partitions at random (some
repeat the offset, some move it, some move it back). Times, ``--repeat`` times each: both
commit aggregates (per (group, topic) and each partition's newest commit) persisted and
counted, and both steps as a start-up's first batch runs them (``offsets.merge_commits`` and
``committed.merge`` into an empty ``group_offsets`` and ``committed_offsets``). Spark runs on
``local[2]`` with the job's shuffle partitions; each time is given as wall time and as the
CPU time of the JVM and its Python workers (steadier on a shared machine). ``--baseline
COMMIT``: the same by that commit's code (``git archive`` into a temporary folder, run in a
subprocess), then this tree's, and the ratio of the best times.

``--live N``: a live batch's two commit steps instead, the offset-commit aggregation into
``group_offsets`` and the newest commit per partition into ``committed_offsets`` (a table of
``--partitions`` rows, the start-up's), over batches of ``N`` commits of existing partitions,
each from the driver as the job writes a live batch: the rows counted first (the job before
the batch's commit count was passed on) and in one job with the count known, in turn,
``--repeat`` times each; medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("BENCH_COMMITTED_SRC"):
    sys.path.insert(0, os.environ["BENCH_COMMITTED_SRC"])
else:
    sys.path.insert(0, str(ROOT / "src"))


def _baseline(commit: str, argv: list[str]) -> dict[str, float]:
    """This benchmark on ``commit``'s ``src`` (the benchmark itself from this tree); its best
    times."""
    work = Path(tempfile.mkdtemp(prefix="groupwatch-committed-bench-"))
    archive = subprocess.run(
        ["git", "archive", commit, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    print(f"== baseline {commit} ==", flush=True)
    env = {**os.environ, "BENCH_COMMITTED_SRC": str(work / "src")}
    out = subprocess.run(
        [sys.executable, __file__, *argv, "--json"],
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    shutil.rmtree(work, ignore_errors=True)
    lines = out.splitlines()
    print("\n".join(lines[:-1]), flush=True)
    print("== this tree ==", flush=True)
    best: dict[str, float] = json.loads(lines[-1])
    return best


def _cpu(pid: int) -> float:
    """User and system CPU seconds so far of the JVM and the processes under it (Spark's Python
    workers), those ended included (the machine may be shared: wall time alone says little)."""

    def stat(p: int) -> list[str]:
        return Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()

    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = stat(p)
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))
        todo += [int(c) for c in children]
    return total / os.sysconf("SC_CLK_TCK")


def synthetic(spark: Any, records: int, partitions: int) -> Any:
    """The batch: key, value, offset, ts and rtype, as the job's source hands them on: in as
    many tasks as there are cores, all of a group's records in one (``__consumer_offsets``
    places a group's records in one of its partitions)."""
    from pyspark.sql import functions as F

    from groupwatch.spark import keys

    # Partition p of the model: 120 per group, 3 topics of 40 partitions each, a group's
    # partitions numbered from a group-dependent base (0-479).
    k = F.when(F.col("id") < partitions, F.col("id")).otherwise(
        F.pmod(F.xxhash64("id"), F.lit(partitions))
    )
    g = (k / 120).cast("long")
    j = k % 120
    t = (g * 3 + (j / 40).cast("long")) % 3000
    part = (j % 40 + (g % 12) * 40).cast("int")
    pad = "abcdefghijklmnopqrstuvwxyz"
    group = F.concat(
        F.lit("consumer-"),
        F.lpad(g.cast("string"), 8, "0"),
        F.lit("-"),
        F.substring(F.lit(pad), 1, (g % 11 + 2).cast("int")),
    )
    topic = F.concat(
        F.lit("orders."),
        F.lpad(t.cast("string"), 5, "0"),
        F.lit("."),
        F.substring(F.lit(pad), 1, (t % 11 + 1).cast("int")),
    )

    def be(n: Any, width: int) -> Any:
        return F.unhex(F.lpad(F.hex(n), 2 * width, "0"))

    key = F.concat(
        be(F.lit(1), 2),
        be(F.length(group), 2),
        group.cast("binary"),
        be(F.length(topic), 2),
        topic.cast("binary"),
        be(part, 4),
    )
    # Repeats keep the partition's offset, others move it on or back.
    step = F.pmod(F.xxhash64(F.col("id"), F.lit(7)), F.lit(10))
    moved = (
        F.when(F.col("id") < partitions, 0)
        .when(step < 4, 0)
        .when(step < 9, F.col("id"))
        .otherwise(-5)
    )
    committed = k * 1000 + 10 + moved
    ts = F.lit(1_700_000_000_000) + F.col("offset")
    kind = F.pmod(F.xxhash64(F.col("id"), F.lit(11)), F.lit(1000))
    meta = F.lit(b"").cast("binary")
    v3 = F.concat(
        be(F.lit(3), 2), be(committed, 8), be(F.lit(5), 4), be(F.lit(0), 2), meta, be(ts, 8)
    )
    v1 = F.concat(
        be(F.lit(1), 2), be(committed, 8), be(F.lit(0), 2), be(ts, 8), F.unhex(F.lit("FF" * 8))
    )
    v4 = F.concat(
        be(F.lit(4), 2),
        be(committed, 8),
        be(F.lit(5), 4),
        F.unhex(F.lit("01")),
        be(ts, 8),
        F.unhex(F.lit("00")),
    )
    value = (
        F.when(kind < 3, F.lit(None).cast("binary"))
        .when(kind < 100, v1)
        .when(kind < 150, v4)
        .otherwise(v3)
    )
    # Record offsets: the records of a partition interleave with everyone else's.
    offset = F.pmod(F.col("id") * F.lit(2_654_435_761), F.lit(records))
    slots = spark.sparkContext.defaultParallelism
    df = (
        spark.range(records)
        .withColumn("offset", offset)
        .repartition(slots, g)
        .select(key.alias("key"), value.alias("value"), "offset", ts.alias("ts"))
    )
    return df.withColumn("rtype", keys.record_type(F.col("key")))


def _aggregates(batch: Any) -> int:
    """Both commit aggregates of ``batch``, persisted and counted: their rows."""
    from groupwatch.spark import committed, offsets

    try:
        from groupwatch.spark import commit_aggregates
    except ImportError:  # the code before both came from one pass over the commits
        per_topic = offsets._aggregated(batch).persist()  # type: ignore[attr-defined]
        per_partition = committed.newest(batch).persist()  # type: ignore[attr-defined]
        n = per_topic.count() + per_partition.count()
        per_topic.unpersist()
        per_partition.unpersist()
        return int(n)
    rows = commit_aggregates.both(batch).persist()
    n = rows.count()
    rows.unpersist()
    return int(n)


def _steps(spark: Any, cfg: Any, batch: Any, batch_id: int, known: int | None = None) -> None:
    """The batch's two commit steps, as the job runs them for a batch Spark writes."""
    from groupwatch.spark import committed, offsets

    try:
        from groupwatch.spark import commit_aggregates
    except ImportError:  # the code before: each step from the batch
        offsets.merge_commits(spark, cfg, batch, batch_id, known)
        committed.merge(spark, cfg, batch, batch_id, known)
        return
    with commit_aggregates.of(batch) as agg:
        offsets.merge_commits(spark, cfg, agg.per_topic, batch_id, agg.topic_rows)
        committed.merge(spark, cfg, agg.per_partition, batch_id, agg.partition_rows)


def _live(spark: Any, cfg: Any, work: Path, startup: Any, args: argparse.Namespace) -> None:
    """``--live``: the two commit steps of a live batch, rows counted first against the batch's
    commit count passed on, in turn."""
    import statistics

    from deltalake import write_deltalake

    from groupwatch.delta import read as deltaread

    for name in ("committed_offsets", "group_offsets"):
        write_deltalake(str(work / "delta" / name), deltaread.schema(name).empty_table())
    started = time.perf_counter()
    _steps(spark, cfg, startup, 0)
    print(f"committed_offsets: {args.partitions:,} partitions written in "
          f"{time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
    live = synthetic(spark, args.live, args.partitions).persist()
    n = live.count()
    times: dict[str, list[float]] = {"counted first": [], "count known": []}
    batch_id = 1
    for i in range(args.repeat * 2 + 2):
        way = "counted first" if i % 2 == 0 else "count known"
        known = n if way == "count known" else None
        started = time.perf_counter()
        _steps(spark, cfg, live, batch_id, known)
        took = time.perf_counter() - started
        batch_id += 1
        if i >= 2:  # the first of each way warms the session up
            times[way].append(took)
        print(f"  batch {batch_id - 1} ({way}): {took:.2f} s", flush=True)
    before, now = (statistics.median(times[w]) for w in ("counted first", "count known"))
    print(
        f"live batch of {n:,} commits, both steps: counted first {before:.2f} s, "
        f"count known {now:.2f} s, {before / now:.2f}x",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--records", type=int, default=2_300_000)
    ap.add_argument("--partitions", type=int, default=1_200_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--baseline", default=None, help="a commit to compare with")
    ap.add_argument("--live", type=int, default=0, help="a live batch's commits (see above)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    base: dict[str, float] | None = None
    if args.baseline:
        argv = [a for a in sys.argv[1:] if a not in ("--baseline", args.baseline)]
        base = _baseline(args.baseline, argv)

    from deltalake import write_deltalake

    from groupwatch import config as config_mod
    from groupwatch.delta import read as deltaread
    from groupwatch.spark import committed
    from groupwatch.spark.session import build_session

    work = Path(tempfile.mkdtemp(prefix="groupwatch-committed-"))
    cfg = config_mod.load(
        ROOT / "conf" / "local.toml",
        env={},
        overrides=[
            "spark.master=local[2]",
            f"delta.root={work / 'delta'}",
            f'spark.conf={{"spark.sql.warehouse.dir": "{work / "warehouse"}"}}',
        ],
    )
    spark = build_session(cfg)
    spark.sparkContext.setLogLevel("ERROR")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench_committed: {os.cpu_count()} cores, load {load}", flush=True)
    t0 = time.perf_counter()
    batch = synthetic(spark, args.records, args.partitions).persist()
    n = batch.count()
    print(f"batch: {n:,} records persisted in {time.perf_counter() - t0:.1f} s", flush=True)
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    if args.live:
        _live(spark, cfg, work, batch, args)
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
        return 0
    names = ("aggregates", "aggregates_cpu", "steps", "steps_cpu")
    best = {k: float("inf") for k in names}
    for i in range(args.repeat):
        c0, t0 = _cpu(pid), time.perf_counter()
        kept = _aggregates(batch)
        took, cpu = time.perf_counter() - t0, _cpu(pid) - c0
        best["aggregates"] = min(best["aggregates"], took)
        best["aggregates_cpu"] = min(best["aggregates_cpu"], cpu)
        print(
            f"both aggregates, persisted and counted: {took:.2f} s, CPU {cpu:.2f} s"
            f" ({kept:,} rows)",
            flush=True,
        )
        for name in ("committed_offsets", "group_offsets"):
            table = work / "delta" / name
            shutil.rmtree(table, ignore_errors=True)
            write_deltalake(str(table), deltaread.schema(name).empty_table())
        committed._FILLED.clear()
        c0, t0 = _cpu(pid), time.perf_counter()
        _steps(spark, cfg, batch, i)
        took, cpu = time.perf_counter() - t0, _cpu(pid) - c0
        best["steps"], best["steps_cpu"] = min(best["steps"], took), min(best["steps_cpu"], cpu)
        print(f"both steps into empty tables: {took:.2f} s, CPU {cpu:.2f} s", flush=True)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    print(
        f"best: aggregates {best['aggregates']:.2f} s (CPU {best['aggregates_cpu']:.2f} s),"
        f" steps {best['steps']:.2f} s (CPU {best['steps_cpu']:.2f} s)",
        flush=True,
    )
    if args.json:
        print(json.dumps(best))
    elif base is not None:
        for name in names:
            print(
                f"{name}: baseline {base[name]:.2f} s, this tree {best[name]:.2f} s, "
                f"{base[name] / best[name]:.2f}x",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
