"""Benchmark: the job's end-offset poll (``groupwatch.spark.lag_ask.OffsetAsker``: a Kafka
consumer's ``endOffsets`` and ``beginningOffsets`` in the driver's JVM, the partitions handed
over as one JSON text) over many partitions, against kafka-python's admin client asking the
same (the baseline, in the same run) and Kafka's Admin ``listOffsets`` with its request maps
built call by call over Py4J (the job's way before).

    .venv/bin/python bench/bench_lag_poll.py [--topics 8] [--partitions 250] [--repeat 5]
        [--request-only 246000]

A fresh local broker ``lagpoll`` with ``--topics`` topics of ``--partitions`` partitions and a
record in each; the first ask of each JVM way (its client and request built) and the median
wall time of ``--repeat`` asks of every partition, each way in turn, and the ratios to
kafka-python; every way must give the same offsets.  One local broker cannot hold the cluster
model's 246,247 partitions (two memory maps and open files per partition; this machine allows
65,530 maps and 20,000 files), so ``--request-only N`` times building each JVM way's request
alone for N partitions of topics no broker holds (nothing is asked).  The broker is removed at
the end.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from groupwatch import config as config_mod
from groupwatch.detect.lag.poll import TP

#: The Admin answer's text: ``topic-partition=ListOffsetsResultInfo(offset=N, ...``.
_ADMIN_RESULT = re.compile(r"([A-Za-z0-9._-]+)-(\d+)=ListOffsetsResultInfo\(offset=(-?\d+)")


class AdminAsker:
    """The job's way before: Kafka's Admin ``listOffsets`` (latest, then earliest), its two
    request maps built with three Py4J calls per partition, kept while the partitions hold."""

    def __init__(self, spark: Any, config: config_mod.Config) -> None:
        self.spark = spark
        self.config = config
        self._maps: tuple[tuple[TP, ...], Any, Any] | None = None

    def requests(self, kept: tuple[TP, ...]) -> tuple[Any, Any]:
        if self._maps is not None and self._maps[0] == kept:
            return self._maps[1], self._maps[2]
        jvm = self.spark.sparkContext._jvm
        admin_pkg = jvm.org.apache.kafka.clients.admin
        latest, earliest = jvm.java.util.HashMap(), jvm.java.util.HashMap()
        spec_latest, spec_earliest = admin_pkg.OffsetSpec.latest(), admin_pkg.OffsetSpec.earliest()
        topic_partition = jvm.org.apache.kafka.common.TopicPartition
        for t, p in kept:
            tp = topic_partition(t, p)
            latest.put(tp, spec_latest)
            earliest.put(tp, spec_earliest)
        self._maps = (kept, latest, earliest)
        return latest, earliest

    def ask(self, kept: tuple[TP, ...]) -> dict[TP, tuple[int, int]]:
        from groupwatch.spark.pipelines import kafka_source_options
        from groupwatch.spark.preflight import admin_properties

        jvm = self.spark.sparkContext._jvm
        unit = jvm.java.util.concurrent.TimeUnit.SECONDS
        props = admin_properties(self.spark, kafka_source_options(self.config), "bench", 30)
        admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
        try:
            latest, earliest = self.requests(kept)
            ends = _ADMIN_RESULT.findall(admin.listOffsets(latest).all().get(35, unit).toString())
            starts = _ADMIN_RESULT.findall(
                admin.listOffsets(earliest).all().get(35, unit).toString()
            )
        finally:
            admin.close(jvm.java.time.Duration.ofSeconds(2))
        start = {(t, int(p)): int(o) for t, p, o in starts}
        return {(t, int(p)): (start[(t, int(p))], int(o)) for t, p, o in ends}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topics", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--request-only", type=int, default=0)
    args = parser.parse_args()

    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    from groupwatch.broker_client import end_offsets
    from groupwatch.spark.lag_answer import by_topic
    from groupwatch.spark.lag_ask import OffsetAsker
    from groupwatch.spark.session import build_session
    from groupwatch_dev.broker import LocalBroker

    broker = LocalBroker("lagpoll")
    work = Path(tempfile.mkdtemp(prefix="lagpoll-"))
    try:
        bootstrap = broker.start(fresh=True).bootstrap
        names = [f"poll-{i}" for i in range(args.topics)]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
        for i in range(0, len(names), 10):
            batch = [NewTopic(n, args.partitions, 1) for n in names[i : i + 10]]
            admin.create_topics(batch, timeout_ms=120_000)
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
        for n in names:
            for p in range(args.partitions):
                producer.send(n, b"x", partition=p)
        producer.flush()
        producer.close()
        partitions = tuple((n, p) for n in names for p in range(args.partitions))
        cfg = config_mod.load(
            None,
            env={},
            overrides=[
                f"source.bootstrap_servers={bootstrap}",
                f"delta.root={work / 'delta'}",
                f"checkpoint.root={work / 'checkpoints'}",
            ],
        )
        spark = build_session(cfg)
        asker, admin_asker = OffsetAsker(spark, cfg), AdminAsker(spark, cfg)
        times: dict[str, list[float]] = {"job": [], "admin": [], "kafka-python": []}

        wanted = by_topic(partitions)

        def job_ask() -> dict[TP, tuple[int, int]]:
            answer = asker.ask(wanted)
            return {
                (e.topic, e.partition): (e.start_offset, e.end_offset)
                for e in ([] if answer is None else answer.offsets())
            }

        def python_ask() -> dict[TP, tuple[int, int]]:
            return {
                (e.topic, e.partition): (e.start_offset, e.end_offset)
                for e in end_offsets(bootstrap, list(partitions))
            }

        ways = {
            "job": job_ask,
            "admin": lambda: admin_asker.ask(partitions),
            "kafka-python": python_ask,
        }
        first: dict[str, float] = {}
        for name, ask in ways.items():  # clients and requests built
            started = time.perf_counter()
            got = ask()
            first[name] = time.perf_counter() - started
            assert len(got) == len(partitions) and all(v == (0, 1) for v in got.values()), name
        for _ in range(args.repeat):
            for name, ask in ways.items():  # in turn: the machine's load weighs alike
                started = time.perf_counter()
                got = ask()
                times[name].append(time.perf_counter() - started)
                assert len(got) == len(partitions), name
        py = statistics.median(times["kafka-python"])
        print(f"{len(partitions)} partitions, medians of {args.repeat} (first ask in brackets):")
        for name in ways:
            median = statistics.median(times[name])
            print(
                f"  {name}: {median:.3f} s ({first[name]:.3f} s), {median / py:.2f} of kafka-python"
            )
        if args.request_only:
            many = tuple((f"model-topic-{i // 50}", i % 50) for i in range(args.request_only))
            started = time.perf_counter()
            asker._partitions(many)
            job_s = time.perf_counter() - started
            started = time.perf_counter()
            admin_asker.requests(many)
            admin_s = time.perf_counter() - started
            print(
                f"the request alone for {len(many):,} partitions: job {job_s:.2f} s, "
                f"Admin maps over Py4J {admin_s:.2f} s"
            )
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
