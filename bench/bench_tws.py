"""Benchmark: per-group state in Spark's state store (``transformWithState``), a batch's cost.

    .venv/bin/python bench/bench_tws.py [--groups 10000] [--state-kb 18] [--live-batches 10]
        [--touch 10] [--partitions 8]

What a job keeping each group's state in Spark's RocksDB state store, keyed by group, would pay
per batch, measured with a processor that does only that: a value state of one text per group
(about ``--state-kb`` KB), read and replaced for every group with a record in the batch, one
output row per group.  No decoding and no findings engine: the floor of such a job, to set
against the state read the job does now (``bench/bench_state_read.py``).

A file stream (one Parquet file a batch, ``maxFilesPerTrigger`` 1) feeds it: a first batch
with one record for each of ``--groups`` groups (a start-up: every group's state written),
then ``--live-batches`` batches of ``--touch`` random groups each.  Prints each batch's
duration by Spark's own progress (``triggerExecution``, and the stateful operator's rows and
state memory) and the median and slowest live batch.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch import config as config_mod  # noqa: E402
from groupwatch.spark import session  # noqa: E402


def main() -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import Row
    from pyspark.sql.streaming.stateful_processor import (
        StatefulProcessor,
        StatefulProcessorHandle,
    )
    from pyspark.sql.types import StringType, StructField, StructType

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--state-kb", type=int, default=18)
    ap.add_argument("--live-batches", type=int, default=10)
    ap.add_argument("--touch", type=int, default=10)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="groupwatch-tws-"))
    source = work / "source"
    source.mkdir()
    rnd = random.Random(5)
    text = "x" * (args.state_kb * 1024)

    def batch_file(n: int, groups: list[int]) -> None:
        pq.write_table(
            pa.table(
                {
                    "group": [f"group-{g:07d}" for g in groups],
                    "record": [f"{n}:{g}" for g in groups],
                }
            ),
            source / f"batch-{n:05d}.parquet",
        )

    batch_file(0, list(range(args.groups)))
    for n in range(1, args.live_batches + 1):
        batch_file(n, rnd.sample(range(args.groups), args.touch))

    cfg = config_mod.load(
        ROOT / "conf" / "local.toml", env={}, overrides=[f"delta.root={work / 'delta'}"]
    )
    spark = session.build_session(cfg)
    spark.conf.set(
        "spark.sql.streaming.stateStore.providerClass",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    )
    spark.conf.set("spark.sql.shuffle.partitions", str(args.partitions))
    state_schema = StructType([StructField("state", StringType(), True)])

    class GroupStep(StatefulProcessor):
        """A group's state read and replaced, one output row per group with records."""

        def init(self, handle: StatefulProcessorHandle) -> None:
            self.state = handle.getValueState("state", state_schema)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            before = self.state.get() if self.state.exists() else None
            last = None
            for row in rows:
                last = row.record
            self.state.update((text + (last or ""),))
            yield Row(group=key[0], had=("yes" if before is not None else "no"))

        def close(self) -> None:
            pass

    frame = (
        spark.readStream.schema("group string, record string")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
    )
    out = frame.groupBy("group").transformWithState(
        GroupStep(), "group string, had string", "Update", "None"
    )
    seen: list[int] = []
    query = (
        out.writeStream.foreachBatch(lambda df, _: seen.append(df.count()))
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    started = time.monotonic()
    query.awaitTermination()
    wall = time.monotonic() - started
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    try:
        durations = []
        for p in progress:
            ms = p["durationMs"]["triggerExecution"] / 1000
            ops = p.get("stateOperators") or [{}]
            durations.append(ms)
            print(
                f"batch {p['batchId']}: {p['numInputRows']:,} records, {ms:.2f}s, state rows "
                f"{ops[0].get('numRowsTotal', '?'):,}, state memory "
                f"{ops[0].get('memoryUsedBytes', 0) / 1e6:,.0f} MB"
            )
        live = durations[1:]
        print(
            f"{args.groups:,} groups: the first batch (every group's state written) "
            f"{durations[0]:.2f}s; live batches of {args.touch} groups: median "
            f"{statistics.median(live):.2f}s, slowest {max(live):.2f}s "
            f"({len(live)} batches; all {wall:.1f}s; rows out {seen})"
        )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
