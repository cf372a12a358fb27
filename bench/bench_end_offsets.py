"""Benchmark: the lag poll's question to the brokers, the log end and start offsets of many
partitions, as the job asks it (``groupwatch.spark.lag.OffsetAsker``) against Kafka's Admin
``listOffsets`` with request maps built call by call over Py4J (the job's way before).

    .venv/bin/python bench/bench_end_offsets.py [--topics 50] [--partitions 100]
        [--records 2] [--repeat 3] [--request-only 246000]

A broker named ``offsets-bench`` is started fresh with ``--topics`` topics of ``--partitions``
partitions each, ``--records`` records written to every partition; then, ``--repeat`` times,
each way asks for every partition: the first ask builds its request (the Py4J part), the next
ones reuse it as the job does while the partitions do not change.  Both ways must give the
same offsets.  One local broker cannot hold the cluster model's 246,247 partitions (two
memory maps and open files per partition; this machine allows 65,530 maps and 20,000 files),
so ``--request-only N`` times building each way's request alone for N partitions of topics no
broker holds (nothing is asked).  Printed: seconds per ask, microseconds per partition, one
JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from groupwatch import config as config_mod  # noqa: E402
from groupwatch.spark.lag import TP, OffsetAsker  # noqa: E402

#: The Admin answer's text: ``topic-partition=ListOffsetsResultInfo(offset=N, ...``.
_ADMIN_RESULT = re.compile(r"([A-Za-z0-9._-]+)-(\d+)=ListOffsetsResultInfo\(offset=(-?\d+)")


def log(msg: str) -> None:
    print(msg, flush=True)


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


def job_ask(asker: OffsetAsker, kept: tuple[TP, ...]) -> dict[TP, tuple[int, int]]:
    return {(e.topic, e.partition): (e.start_offset, e.end_offset) for e in asker.ask(kept)}


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
    try:
        for i in range(0, len(topics), 10):
            admin.create_topics(
                [NewTopic(t, partitions, 1) for t in topics[i : i + 10]], timeout_ms=120_000
            )
    finally:
        admin.close()


def fill(bootstrap: str, topics: list[str], partitions: int, records: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, acks=1)
    for t in topics:
        for p in range(partitions):
            for i in range(records):
                producer.send(t, value=b"r%d" % i, partition=p)
    producer.flush()
    producer.close()


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - started, out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--records", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--request-only", type=int, default=246_000)
    args = ap.parse_args()
    from groupwatch_dev.broker import LocalBroker

    log(f"bench_end_offsets: {os.cpu_count()} cores, load {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="groupwatch-offsets-"))
    broker = LocalBroker("offsets-bench")
    spark = None
    report: dict[str, Any] = {"args": vars(args)}
    try:
        bootstrap = broker.start(fresh=True).bootstrap
        topics = [f"offsets-{i:04d}" for i in range(args.topics)]
        started = time.perf_counter()
        create_topics(bootstrap, topics, args.partitions)
        fill(bootstrap, topics, args.partitions, args.records)
        n = args.topics * args.partitions
        log(f"{n:,} partitions created and filled in {time.perf_counter() - started:.1f}s")
        from groupwatch.spark.session import build_session

        cfg = config_mod.load(
            None,
            env={},
            overrides=[f"source.bootstrap_servers={bootstrap}", f"delta.root={work}"],
        )
        spark = build_session(cfg)
        kept = tuple(sorted((t, p) for t in topics for p in range(args.partitions)))
        job, admin = OffsetAsker(spark, cfg, timeout=30), AdminAsker(spark, cfg)
        rounds: dict[str, list[float]] = {"job": [], "admin": []}
        for r in range(args.repeat):
            # In turn, so that the machine's load weighs the same on both.
            t_job, got_job = timed(job_ask, job, kept)
            t_admin, got_admin = timed(admin.ask, kept)
            if got_job != got_admin or len(got_job) != n:
                raise SystemExit(f"the answers differ ({len(got_job)} vs {len(got_admin)})")
            rounds["job"].append(t_job)
            rounds["admin"].append(t_admin)
            log(
                f"ask {r + 1} ({'request built' if r == 0 else 'request kept'}): "
                f"job {t_job:.2f}s, Admin with Py4J maps {t_admin:.2f}s"
            )
        report["asked_partitions"] = n
        for way, times in rounds.items():
            report[way] = {
                "first_s": round(times[0], 3),
                "again_median_s": round(statistics.median(times[1:] or times), 3),
                "first_us_per_partition": round(times[0] / n * 1e6, 1),
            }
        if args.request_only:
            m = args.request_only
            many = tuple((f"model-topic-{i // 50}", i % 50) for i in range(m))
            t_job, _ = timed(job._partitions, many)
            t_admin, _ = timed(admin.requests, many)
            log(
                f"request alone for {m:,} partitions: job {t_job:.2f}s, "
                f"Admin maps over Py4J {t_admin:.2f}s"
            )
            report["request_only"] = {
                "partitions": m,
                "job_s": round(t_job, 2),
                "admin_s": round(t_admin, 2),
            }
    finally:
        if spark is not None:
            spark.stop()
        broker.stop()
        shutil.rmtree(broker.dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
