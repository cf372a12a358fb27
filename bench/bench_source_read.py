"""Benchmark: reading small ranges of every partition, as a live batch does, by the consumer's
fetch wait (Kafka's default 500 ms, the job's 10 ms).

    .venv/bin/python bench/bench_source_read.py [--partitions 50] [--per-partition 10,200]
        [--reads 5] [--broker-name source-read-bench]

A topic of ``--partitions`` partitions is filled once on a local broker (``--broker-name``),
then read by Spark's Kafka source, ``--per-partition`` records of every partition per read,
coalesced to one task per core as the job persists a batch: each read ends where the previous
one began, near the end of the log, so each partition's consumer (Spark keeps one per partition
between reads) has a fetch pending at the broker from its previous read. Prints the seconds of
each read with ``kafka.fetch.max.wait.ms`` at Kafka's default and at the job's value
(``groupwatch.spark.pipelines.CONSUMER_DEFAULTS``), and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch import config as config_mod  # noqa: E402
from groupwatch.spark import pipelines, session, source  # noqa: E402

KAFKA_DEFAULT_WAIT_MS = "500"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--partitions", type=int, default=50)
    ap.add_argument("--per-partition", default="10,200", help="records per partition per read")
    ap.add_argument("--reads", type=int, default=5)
    ap.add_argument("--broker-name", default="source-read-bench")
    args = ap.parse_args()
    sizes = [int(s) for s in args.per_partition.split(",")]
    variants = {
        "Kafka's default": KAFKA_DEFAULT_WAIT_MS,
        "the job's": pipelines.CONSUMER_DEFAULTS["kafka.fetch.max.wait.ms"],
    }

    from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # type: ignore[import-untyped]

    from groupwatch_dev.broker import LocalBroker
    from groupwatch_dev.demo.traffic import create_topic

    broker = LocalBroker(args.broker_name)
    bootstrap = broker.start().bootstrap
    topic = f"source-read-{int(time.time())}"
    # Enough for every read of every variant and size, each going further back.
    per_partition = sum(sizes) * args.reads * len(variants) + sizes[0] + 1  # and a warm-up
    print(f"filling {topic}: {args.partitions} x {per_partition:,} records", flush=True)
    create_topic(bootstrap, topic, args.partitions)
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for i in range(per_partition):
        for p in range(args.partitions):
            producer.send(topic, key=f"k{p}-{i}".encode(), value=b"v" * 100, partition=p)
    producer.flush()
    producer.close()
    tps = [TopicPartition(topic, p) for p in range(args.partitions)]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    ends = {tp.partition: int(n) for tp, n in consumer.end_offsets(tps).items()}
    consumer.close()

    cfg = config_mod.load(ROOT / "conf" / "local.toml", env={}, overrides=[])
    spark = session.build_session(cfg)
    spark.sparkContext.setLogLevel("ERROR")
    back = dict(ends)  # each read ends where the previous one began

    def read(per: int, wait_ms: str) -> float:
        until = dict(back)
        start = {p: max(0, until[p] - per) for p in until}
        back.update(start)
        reader = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", json.dumps({topic: {str(p): o for p, o in start.items()}}))
            .option("endingOffsets", json.dumps({topic: {str(p): o for p, o in until.items()}}))
            .option("kafka.fetch.max.wait.ms", wait_ms)
        )
        started = time.perf_counter()
        rows = reader.load().select(*source.SOURCE_COLUMNS)
        split = source.split(rows)  # the job's persist, one partition per task slot
        stats = source.stats(split)
        split.read.unpersist()
        seconds = time.perf_counter() - started
        assert stats.rows == per * args.partitions, stats.rows
        return seconds

    try:
        read(sizes[0], KAFKA_DEFAULT_WAIT_MS)  # warm-up: session, consumers, code paths
        for per in sizes:
            medians = {}
            for name, wait_ms in variants.items():
                times = [read(per, wait_ms) for _ in range(args.reads)]
                medians[name] = statistics.median(times)
                print(
                    f"{per * args.partitions:>7,} records ({per}/partition), {name} "
                    f"(fetch.max.wait.ms={wait_ms}): "
                    + " ".join(f"{t:.2f}" for t in times)
                    + f" s, median {medians[name]:.2f} s",
                    flush=True,
                )
            base, job = medians.values()
            print(f"  ratio Kafka's default / the job's: {base / job:.1f}x", flush=True)
    finally:
        spark.stop()
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
