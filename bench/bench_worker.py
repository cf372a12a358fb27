"""Benchmark: the job's Python worker function alone, per 50-member group-metadata record.

    .venv/bin/python bench/bench_worker.py [--groups 6] [--generations 50] [--per-batch 10]
        [--repeat 5]

What one Python worker does for each group of a micro-batch, in-process and without Spark's
transport: the cogroup's Arrow tables of one group (its records in the batch and its prior
state) in, the Arrow output rows out (decode, findings engine with the sticky assignor's re-run,
ownership, state JSON, output Arrow).  The records are ``bench_job``'s: 50-member sticky and
cooperative-sticky groups built with the project's encoders, one member replaced per
generation.  Each group's ``--generations`` records arrive ``--per-batch`` at a time, its state
carried from one call to the next as the ``group_state`` table would carry it, so most calls
start from a saved state, as in a running job.

A local SparkSession is started only to parse the output schema (as the job's driver does);
it is stopped before anything is timed.  Reported: the best of ``--repeat`` passes, as
records/s and ms per record (wall), and the CPU time per record of the best pass by CPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_job import (  # noqa: E402
    BASE_MS,
    GENERATION_GAP_MS,
    MEMBERS,
    PROTOCOLS,
    coordinator_partition,
    group_values,
    record_schema,
)

from groupwatch import config as config_mod  # noqa: E402
from groupwatch.protocol import GroupMetadataKey, encode_key  # noqa: E402

_RECORD_FIELDS = ("group", "key", "value", "topic", "partition", "offset", "ts")


def _worker() -> Any:
    """The worker function of the job's Python stage."""
    from groupwatch.spark.python_stage import process_arrow

    return process_arrow


def output_arrow_schema() -> Any:
    """The Python stage's output schema as Arrow, parsed by a short-lived local session."""
    from pyspark.sql import SparkSession

    from groupwatch.spark import output

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("bench-worker-schema")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        return output.arrow_schema(output.output_schema(spark))
    finally:
        spark.stop()


def record_tables(groups: int, generations: int, per_batch: int) -> list[list[Any]]:
    """Per group, its records as Arrow tables of ``per_batch`` records (the cogroup's left)."""
    values = {p: group_values(p, generations) for p in PROTOCOLS}
    out = []
    for g in range(groups):
        name = f"bench-app-{g:04d}"
        key = encode_key(GroupMetadataKey(name))
        partition = coordinator_partition(name)
        rows = [
            (name, key, value, "mirror", partition, n, BASE_MS + (n + 1) * GENERATION_GAP_MS)
            for n, value in enumerate(values[PROTOCOLS[g % 2]])
        ]
        out.append(
            [
                record_table(chunk)
                for chunk in (rows[i : i + per_batch] for i in range(0, len(rows), per_batch))
            ]
        )
    return out


def record_table(rows: list[tuple[Any, ...]]) -> Any:
    """The cogroup's left side from rows of (group, key, value, topic, partition, offset, ts)."""
    import pyarrow as pa

    columns = zip(*rows, strict=True) if rows else ([] for _ in _RECORD_FIELDS)
    return pa.Table.from_pydict(
        dict(zip(_RECORD_FIELDS, map(list, columns), strict=True)), schema=record_schema()
    )


def state_schema() -> Any:
    """The Arrow schema of the cogroup's right side: a group's saved state, or one row per
    (topic, highest partition, last commit) of the JVM's commit tally."""
    import pyarrow as pa

    return pa.schema(
        [
            ("group", pa.string()),
            ("state", pa.string()),
            ("last_event_ms", pa.int64()),
            ("topic", pa.string()),
            ("max_partition", pa.int32()),
            ("last_commit_ms", pa.int64()),
        ]
    )


def state_table(group: str, state: str | None, last_ms: int | None) -> Any:
    """The cogroup's right side: the group's saved state (none before its first batch)."""
    import pyarrow as pa

    schema = state_schema()
    if state is None:
        return schema.empty_table()
    return pa.Table.from_pydict(
        {
            "group": [group],
            "state": [state],
            "last_event_ms": [last_ms],
            "topic": [None],
            "max_partition": [None],
            "last_commit_ms": [None],
        },
        schema=schema,
    )


def saved_state(out: Any) -> tuple[str | None, int | None]:
    """The state row of one call's output, as the next batch reads it back."""
    (row,) = out.filter(_mask(out, "group_state")).column("group_state").to_pylist()
    if isinstance(row, list):  # an array of the table's rows per output row
        (row,) = row
    last = row["last_event_time"]
    return row["state"], None if last is None else int(last.timestamp() * 1000)


def output_rows(out: Any) -> int:
    """Table rows in one call's output: its rows, or the lengths of its tables' arrays."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for name in set(out.column("tbl").to_pylist()):
        column = out.column(name)
        if pa.types.is_list(column.type):
            total += pc.sum(pc.list_value_length(column)).as_py() or 0
        else:
            total += out.filter(_mask(out, name)).num_rows
    return total


def _mask(table: Any, name: str) -> Any:
    import pyarrow.compute as pc

    return pc.equal(table.column("tbl"), name)


def one_pass(
    worker: Any, detector: Any, schema: Any, batches: list[list[Any]]
) -> tuple[float, float, int, int]:
    """Every group's batches in turn: wall and CPU seconds inside the worker function, records
    in, rows out.  CPU time is the steadier figure on a machine that runs other work."""
    detected_at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    seconds, cpu, records, rows = 0.0, 0.0, 0, 0
    for chunks in batches:
        group = chunks[0].column("group")[0].as_py()
        state, last_ms = None, None
        for rec in chunks:
            st = state_table(group, state, last_ms)
            clocks = {int(rec.column("partition")[0].as_py()): int(rec.column("ts")[-1].as_py())}
            started, started_cpu = time.perf_counter(), time.thread_time()
            out = worker(rec, st, detector, detected_at, schema, clocks)
            seconds += time.perf_counter() - started
            cpu += time.thread_time() - started_cpu
            records += rec.num_rows
            rows += output_rows(out)
            state, last_ms = saved_state(out)
    return seconds, cpu, records, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=6)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--per-batch", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    worker = _worker()
    cfg = config_mod.load(ROOT / "conf" / "local.toml", env={})
    schema = output_arrow_schema()
    batches = record_tables(args.groups, args.generations, args.per_batch)
    detector = cfg.detect.detector()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"bench_worker: {args.groups} groups x {args.generations} records of {MEMBERS} members, "
        f"{args.per_batch} per call; {os.cpu_count()} cores, load {load}",
        flush=True,
    )
    best, best_cpu = float("inf"), float("inf")
    for attempt in range(args.repeat):
        seconds, cpu, records, rows = one_pass(worker, detector, schema, batches)
        print(
            f"  [{attempt + 1}/{args.repeat}] {records} records in {seconds:.3f}s "
            f"(CPU {cpu:.3f}s): {records / seconds:,.1f} records/s, "
            f"{1000 * seconds / records:.2f} ms/record ({rows:,} output rows)",
            flush=True,
        )
        best, best_cpu = min(best, seconds / records), min(best_cpu, cpu / records)
    print(
        f"best: {1 / best:,.1f} records/s, {1000 * best:.2f} ms per 50-member record "
        f"(CPU {1000 * best_cpu:.2f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
