"""Lag against Kafka's own answer, in ``groupwatch analyze --bootstrap-server`` and in the job.

Real groups of three clients -- Kafka's Java consumer (classic protocol and KIP-848) and
librdkafka (confluent-kafka) -- consume part of a topic and commit; then producers and
consumers are paused and more records arrive. At that moment the records behind that analyze
reports for every partition equal what Kafka's Admin API says (``listConsumerGroupOffsets``
against ``listOffsets``, kafka-python's admin client and consumer here), exactly; the job's
``committed_offsets``, ``end_offsets``, ``partition_lag`` and ``lag_history`` say the same, and
the job and analyze agree partition for partition, owners included.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic
from tests.realgroups import dump_consumer_offsets

pytestmark = pytest.mark.broker

TOPIC = "lag-orders"
PARTITIONS = 4
#: Records per partition before the groups consume, and after they paused.
BEFORE = (40, 25, 10, 0)
AFTER = (30, 7, 0, 12)
JAVA_CLASSIC = "lag-java-classic"
JAVA_848 = "lag-java-848"
RDKAFKA = "lag-rdkafka"
OWNER = "lag-rdkafka-1"
GROUPS = (JAVA_CLASSIC, JAVA_848, RDKAFKA)


@dataclass(frozen=True)
class Names:
    """The topic, groups and paused owner of one set-up (another module makes its own, with
    other names, on the same broker: tests/s3/test_lag_on_s3.py)."""

    topic: str = TOPIC
    classic: str = JAVA_CLASSIC
    g848: str = JAVA_848
    rdkafka: str = RDKAFKA
    owner: str = OWNER

    @property
    def groups(self) -> tuple[str, str, str]:
        return (self.classic, self.g848, self.rdkafka)

    @classmethod
    def of(cls, prefix: str) -> Names:
        return cls(
            f"{prefix}-orders",
            f"{prefix}-java-classic",
            f"{prefix}-java-848",
            f"{prefix}-rdkafka",
            f"{prefix}-rdkafka-1",
        )


def _produce(broker: str, counts: tuple[int, ...], topic: str = TOPIC) -> None:
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=5)
    for p, n in enumerate(counts):
        for i in range(n):
            producer.send(topic, value=b"order-%d-%d" % (p, i), partition=p)
    producer.flush()
    producer.close()


def _committed(broker: str, group: str) -> dict[tuple[str, int], int]:
    """Kafka's answer: ``listConsumerGroupOffsets`` (OffsetFetch)."""
    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {
        (tp.topic, tp.partition): int(om.offset) for tp, om in offsets.items() if om.offset >= 0
    }


def _ends(broker: str, topic: str = TOPIC) -> dict[tuple[str, int], int]:
    """Kafka's answer: ``listOffsets`` latest, from a consumer (not analyze's admin path)."""
    consumer = KafkaConsumer(bootstrap_servers=broker)
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        return {(tp.topic, tp.partition): int(o) for tp, o in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def _wait_committed(broker: str, group: str, want: dict[tuple[str, int], int]) -> None:
    deadline = time.monotonic() + 60
    while _committed(broker, group) != want:
        assert time.monotonic() < deadline, f"{group}: {_committed(broker, group)} != {want}"
        time.sleep(0.5)


def _rdkafka_group(broker: str, names: Names = Names()) -> Any:
    """librdkafka consumes everything, commits a different offset on each partition, and
    stays in the group without polling (its owner while the tests run)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTP

    consumer = Consumer(
        {
            "bootstrap.servers": broker,
            "group.id": names.rdkafka,
            "client.id": names.owner,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 10000,
            # Paused, not gone: the background thread keeps the membership this long.
            "max.poll.interval.ms": 3_600_000,
        }
    )
    consumer.subscribe([names.topic])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < sum(BEFORE):
        assert time.monotonic() < deadline, f"librdkafka read {seen} of {sum(BEFORE)}"
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen += 1
    consumer.commit(
        offsets=[CTP(names.topic, p, n // 2) for p, n in enumerate(BEFORE) if n],
        asynchronous=False,
    )
    return consumer


@contextlib.contextmanager
def paused_groups(broker: str, names: Names = Names()) -> Iterator[dict[str, Any]]:
    """The groups paused with records waiting; yields the names of the members left in."""
    create_topic(broker, names.topic, PARTITIONS)
    _produce(broker, BEFORE, names.topic)
    full = {(names.topic, p): n for p, n in enumerate(BEFORE)}
    classic, g848 = f"{names.classic}-1", f"{names.g848}-1"
    with JavaGroupMembers(broker) as members:
        members.join(classic, names.classic, [names.topic], "range")
        members.join(g848, names.g848, [names.topic], "uniform", protocol="consumer")
        members.wait_covered([classic], PARTITIONS)
        members.wait_covered([g848], PARTITIONS)
        _wait_committed(broker, names.classic, full)
        _wait_committed(broker, names.g848, full)
        members.leave(classic)
        members.leave(g848)
    rdkafka = _rdkafka_group(broker, names)
    try:
        _produce(broker, AFTER, names.topic)
        yield {"owner": names.owner}
    finally:
        rdkafka.close()


@pytest.fixture(scope="module")
def paused(broker: str) -> Iterator[dict[str, Any]]:
    with paused_groups(broker) as members:
        yield members


def test_records_behind_equal_kafkas_admin_answer_for_every_partition(
    broker: str, paused: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from groupwatch.cli import main

    dump = tmp_path / "offsets.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in dump_consumer_offsets(broker)))
    rows_file = tmp_path / "lag.jsonl"
    assert main(["analyze", str(dump), "--bootstrap-server", broker, "--lag", str(rows_file)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    ends = _ends(broker)
    for group in GROUPS:
        kafka = {tp: ends[tp] - c for tp, c in _committed(broker, group).items()}
        ours = {(r["topic"], r["partition"]): r["lag_records"] for r in rows if r["group"] == group}
        assert ours == kafka, group
        assert any(kafka.values()), f"{group}: nothing behind, the test proves nothing"
        for r in rows:
            if r["group"] == group:
                assert r["end_offset"] == ends[(r["topic"], r["partition"])]
    # The member that stopped polling without leaving is still the owner; the others left.
    owned = [r for r in rows if r["group"] == RDKAFKA]
    assert {r["owner_client"] for r in owned} == {paused["owner"]}
    assert all(r["owner_member"] and r["owner_generation"] is not None for r in owned)
    assert all(r["owner_member"] is None for r in rows if r["group"] in (JAVA_848, JAVA_CLASSIC))
    # Records waiting for seconds, not minutes: nothing stopped, stalled or lagging yet.
    found = [json.loads(line) for line in out.splitlines()]
    assert not [f for f in found if f["group"] in GROUPS and f["severity"] != "info"], found
    # This module's groups only: the session's broker holds other modules' groups, some of
    # them stopped on purpose (tests/modern leaves a KIP-848 consumer stopped with records
    # behind), and which of them ran first depends on the run's order.
    mine = [r for r in rows if r["group"] in GROUPS]
    assert {r["status"] for r in mine if r["lag_records"]} == {"ok"}
    assert all(r["lag_seconds"] is not None and r["lag_seconds"] < 120 for r in mine)
    assert "lag:" in err


@pytest.mark.spark
def test_the_jobs_partition_lag_equals_kafkas_and_agrees_with_analyze(
    broker: str,
    paused: dict[str, Any],
    spark: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from groupwatch.cli import main
    from tests.realgroups import make_config, run_once, table

    cfg = make_config(broker, tmp_path / "job", "validation.every_n_batches=0")
    run_once(spark, cfg)
    ends = _ends(broker)
    lag_rows = [r.asDict() for r in table(spark, cfg, "partition_lag").collect()]
    committed = {
        (r["group"], r["topic"], r["partition"]): r["committed_offset"]
        for r in table(spark, cfg, "committed_offsets").collect()
    }
    for group in GROUPS:
        kafka_committed = _committed(broker, group)
        assert {(t, p): c for (g, t, p), c in committed.items() if g == group} == kafka_committed, (
            group
        )
        kafka = {tp: ends[tp] - c for tp, c in kafka_committed.items()}
        ours = {
            (r["topic"], r["partition"]): r["lag_records"] for r in lag_rows if r["group"] == group
        }
        assert ours == kafka, group
    end_rows = table(spark, cfg, "end_offsets").collect()
    assert {
        (r["topic"], r["partition"]): r["end_offset"] for r in end_rows if r["topic"] == TOPIC
    } == ends
    history = [r.asDict() for r in table(spark, cfg, "lag_history").collect()]
    for group in GROUPS:
        (h,) = [h for h in history if h["group"] == group and h["topic"] == TOPIC]
        assert h["lag_records"] == sum(r["lag_records"] for r in lag_rows if r["group"] == group)
    # The job and analyze agree partition for partition, owners included.
    dump = tmp_path / "offsets.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in dump_consumer_offsets(broker)))
    rows_file = tmp_path / "lag.jsonl"
    assert main(["analyze", str(dump), "--bootstrap-server", broker, "--lag", str(rows_file)]) == 0
    capsys.readouterr()
    offline = [json.loads(line) for line in rows_file.read_text().splitlines()]

    def view(rows: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
        return {
            (
                r["group"], r["topic"], r["partition"], r["committed_offset"], r["end_offset"],
                r["lag_records"], r["owner_member"], r["owner_client"], r["owner_generation"],
            )
            for r in rows
            if r["group"] in GROUPS
        }  # fmt: skip

    assert view(lag_rows) == view(offline)
    assert {r["owner_client"] for r in lag_rows if r["group"] == RDKAFKA} == {paused["owner"]}
    # Nothing alarming: the records have waited seconds.
    findings = table(spark, cfg, "findings").collect()
    lag_kinds = {"consumer_stopped", "consumer_stalled", "offset_rewound", "consumer_lagging"}
    assert not [f for f in findings if f["kind"] in lag_kinds and f["group"] in GROUPS]
