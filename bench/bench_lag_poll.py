"""Benchmark: the job's end-offset poll (``groupwatch.spark.lag.list_offsets``: Kafka's Admin
``listOffsets`` latest and earliest in the driver's JVM, through Py4J) over many partitions,
against kafka-python's admin client asking the same (the baseline, in the same run).

    .venv/bin/python bench/bench_lag_poll.py [--topics 8] [--partitions 250] [--repeat 5]

A fresh local broker ``lagpoll`` with ``--topics`` topics of ``--partitions`` partitions and a
few records in each; the median wall time of ``--repeat`` polls of every partition, each way,
and the ratio. The broker is removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from groupwatch import config
    from groupwatch.detect.lag.brokers import end_offsets
    from groupwatch.spark.lag import OffsetAsker, list_offsets
    from groupwatch.spark.session import build_session
    from groupwatch_dev.broker import LocalBroker

    broker = LocalBroker("lagpoll")
    work = Path(tempfile.mkdtemp(prefix="lagpoll-"))
    try:
        bootstrap = broker.start(fresh=True).bootstrap
        names = [f"poll-{i}" for i in range(args.topics)]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
        admin.create_topics([NewTopic(n, args.partitions, 1) for n in names], timeout_ms=120_000)
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
        for n in names:
            for p in range(args.partitions):
                producer.send(n, b"x", partition=p)
        producer.flush()
        producer.close()
        partitions = [(n, p) for n in names for p in range(args.partitions)]
        cfg = config.load(
            None,
            env={},
            overrides=[
                f"source.bootstrap_servers={bootstrap}",
                f"delta.root={work / 'delta'}",
                f"checkpoint.root={work / 'checkpoints'}",
            ],
        )
        spark = build_session(cfg)
        jvm_times, py_times, kept_times = [], [], []
        asker = OffsetAsker(spark, cfg)
        asker.ask(partitions)  # the job's first poll: client and request maps built
        for _ in range(args.repeat):
            started = time.perf_counter()
            got = list_offsets(spark, cfg, partitions)
            jvm_times.append(time.perf_counter() - started)
            assert len(got) == len(partitions) and all(e.end_offset == 1 for e in got)
            started = time.perf_counter()
            kept = asker.ask(partitions)
            kept_times.append(time.perf_counter() - started)
            assert len(kept) == len(partitions)
            started = time.perf_counter()
            base = end_offsets(bootstrap, partitions)
            py_times.append(time.perf_counter() - started)
            assert len(base) == len(partitions)
        jvm, py = statistics.median(jvm_times), statistics.median(py_times)
        kept_s = statistics.median(kept_times)
        print(
            f"{len(partitions)} partitions, medians of {args.repeat}: the job's poll (JVM Admin "
            f"via Py4J, request maps kept) {kept_s:.3f} s; a first poll (maps "
            f"built) {jvm:.3f} s; kafka-python admin {py:.3f} s; ratios kept/kafka-python "
            f"{kept_s / py:.2f}, first/kafka-python {jvm / py:.2f}"
        )
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
