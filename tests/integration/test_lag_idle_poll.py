"""The job judges lag while no commit arrives (and so no micro-batch runs).

A consumer group commits, then stops; a producer keeps writing to its topic and nothing else
writes ``__consumer_offsets``, so Spark's Kafka source runs no batch. The job, running
continuously, must still poll the brokers' end offsets on the driver (``spark/lag_thread.py``)
and raise ``consumer_stopped``, with ``partition_lag`` showing the partition stopped.

The broker is this module's own: on the session's, another test's group (a member timing
out, a group expiring) could write ``__consumer_offsets`` and run a batch.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from groupwatch_dev.demo.traffic import create_topic
from tests.conftest import local_broker
from tests.realgroups import make_config

pytestmark = [pytest.mark.broker, pytest.mark.spark]

TOPIC = "idle-orders"
GROUP = "idle-billing"
BEFORE = 5
STOP_SECONDS = 4
#: From the producer's first record to the finding: stop_seconds, a few polls, the writes.
WITHIN_SECONDS = 40


@pytest.fixture(scope="module")
def quiet_broker() -> Iterator[str]:
    yield from local_broker(f"pytest-idle-{os.getpid()}")


def _commit_once(broker: str, topic: str, group: str, offset: int) -> None:
    """The group commits ``offset`` (a manually assigned consumer: no membership, so nothing
    more reaches ``__consumer_offsets`` once it closes)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": broker, "group.id": group, "enable.auto.commit": False}
    )
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
                return
            except KafkaException:
                # A fresh broker's coordinator is still loading ``__consumer_offsets``.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def _rows(path: Path) -> list[dict[str, Any]]:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        rows: list[dict[str, Any]] = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    except (TableNotFoundError, FileNotFoundError):
        return []
    return rows


def _batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return sum(1 for f in commits.iterdir() if f.name.isdigit()) if commits.exists() else 0


def _wait(what: str, seconds: float, check: Any) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"no {what} within {seconds} s"
        time.sleep(0.5)


@pytest.mark.parametrize("judge_process", [False, True], ids=["driver-thread", "own-process"])
def test_a_stopped_consumer_is_judged_while_no_batch_runs(
    quiet_broker: str, spark: Any, tmp_path: Path, judge_process: bool
) -> None:
    """Judged in a driver thread, and in a process of its own (``lag.judge_process``): each
    on a topic and group of its own."""
    from groupwatch.spark.query import QUERY_NAME, GroupwatchQuery

    suffix = "-process" if judge_process else ""
    topic, group = TOPIC + suffix, GROUP + suffix
    broker = quiet_broker
    create_topic(broker, topic, 1)
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=5)
    for i in range(BEFORE):
        producer.send(topic, value=b"order-%d" % i, partition=0)
    producer.flush()
    _commit_once(broker, topic, group, BEFORE)
    cfg = make_config(
        broker,
        tmp_path,
        "validation.every_n_batches=0",
        "job.trigger_interval=1 second",
        "lag.poll_seconds=1",
        f"lag.stop_seconds={STOP_SECONDS}",
        f"lag.judge_process={str(judge_process).lower()}",
    )
    lag_path = Path(cfg.table_path("partition_lag"))
    findings_path = Path(cfg.table_path("findings"))
    checkpoint = Path(cfg.checkpoint_path(QUERY_NAME))
    job = GroupwatchQuery.from_config(spark, cfg)
    query = job.writer(once=False).start()
    idle = job.lag_thread()
    producing = threading.Event()
    stop_producing = threading.Event()

    def produce() -> None:
        i = BEFORE
        while not stop_producing.wait(0.3):
            producer.send(topic, value=b"order-%d" % i, partition=0)
            producer.flush()
            producing.set()
            i += 1

    feeder = threading.Thread(target=produce, daemon=True)
    try:
        # The commit read and judged by the first batch (its own poll): nothing behind yet.
        # Generous: a loaded machine's first batch (Python workers starting) is slow.
        _wait(
            "partition_lag row of the commit",
            240,
            lambda: [
                r
                for r in _rows(lag_path)
                if r["group"] == group and r["committed_offset"] == BEFORE
            ],
        )
        # The query idle: no batch under way, none waiting.
        _wait(
            "idle query",
            30,
            lambda: not query.status["isDataAvailable"] and not query.status["isTriggerActive"],
        )
        batches = _batches(checkpoint)
        assert batches > 0
        polls = idle.polls
        feeder.start()
        assert producing.wait(10)
        started = time.monotonic()
        stopped = _wait(
            "consumer_stopped",
            WITHIN_SECONDS,
            lambda: [
                f
                for f in _rows(findings_path)
                if f["kind"] == "consumer_stopped" and f["group"] == group
            ],
        )
        assert len(stopped) == 1
        assert stopped[0]["topic"] == topic and stopped[0]["partition"] == 0
        (row,) = [r for r in _rows(lag_path) if r["group"] == group]
        assert row["status"] == "stopped"
        assert row["committed_offset"] == BEFORE and row["lag_records"] > 0
        # Judged by the driver's polls alone: no micro-batch ran since the commits stopped.
        assert _batches(checkpoint) == batches
        assert idle.polls > polls
        assert time.monotonic() - started < WITHIN_SECONDS
        assert query.isActive and query.exception() is None
        if judge_process:
            from groupwatch.spark.lag_process import LagProcess

            assert isinstance(job.lag.judging, LagProcess) and job.lag.judging.pid is not None
    finally:
        stop_producing.set()
        if feeder.is_alive():
            feeder.join(5)
        producer.close()
        idle.stop()
        query.stop()
        job.lag.close()


def test_a_continuous_runs_commits_are_folded_before_each_poll(
    quiet_broker: str, spark: Any, tmp_path: Path
) -> None:
    """With the poll beside the batches, a live batch appends its newest commits to
    ``committed_changes`` instead of MERGEing them; the poll folds them into
    ``committed_offsets`` before it reads it, the next append deletes what was folded, and
    the job's stop folds the rest: the table holds Kafka's committed offset and one commit
    counted per commit record, as a run that MERGEs each batch."""
    from groupwatch.spark.query import GroupwatchQuery

    topic, group = TOPIC + "-folded", GROUP + "-folded"
    create_topic(quiet_broker, topic, 1)
    cfg = make_config(
        quiet_broker,
        tmp_path,
        "validation.every_n_batches=0",
        "job.trigger_interval=1 second",
        "lag.poll_seconds=1",
    )
    committed_path = Path(cfg.table_path("committed_offsets"))
    changes_path = Path(cfg.table_path("committed_changes"))
    lag_path = Path(cfg.table_path("partition_lag"))

    def committed() -> list[tuple[int, int]]:
        return [
            (r["committed_offset"], r["commits"])
            for r in _rows(committed_path)
            if r["group"] == group
        ]

    def staged() -> list[int]:
        return [r["committed_offset"] for r in _rows(changes_path) if r["group"] == group]

    job = GroupwatchQuery.from_config(spark, cfg)
    # The poll first: every batch of this run finds it running.
    idle = job.lag_thread()
    query = job.writer(once=False).start()
    try:
        _commit_once(quiet_broker, topic, group, 3)
        _wait("the first commit folded", 240, lambda: committed() == [(3, 1)])
        assert staged() == [3]
        _commit_once(quiet_broker, topic, group, 4)
        _wait(
            "the second commit judged",
            120,
            lambda: [
                r for r in _rows(lag_path) if r["group"] == group and r["committed_offset"] == 4
            ],
        )
        assert committed() == [(4, 2)]
        # Appended by the second commit's batch, which deleted the first's, already folded.
        assert staged() == [4]
        idle.stop()
        _commit_once(quiet_broker, topic, group, 5)
        # No poll now: the batch MERGEs at once.
        _wait("the third commit", 120, lambda: committed() == [(5, 3)])
    finally:
        idle.stop()
        query.stop()
        job.fold_commits()
        job.lag.close()
    assert committed() == [(5, 3)]
