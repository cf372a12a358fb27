"""A real group stuck in a rebalance, on the real broker: ``analyze`` and the job raise
``rebalance_stuck`` naming its members, the same finding, and nothing more once it completes.

Two kafka-python members consume and commit; one stops polling (a long ``max.poll.interval.ms``
keeps it in the group), a third joins: the coordinator moves the group to PreparingRebalance
and waits for the silent member's JoinGroup, for up to its rebalance timeout.  Nobody consumes
or commits meanwhile, and ``__consumer_offsets`` gets nothing.  When the silent member polls
again the rebalance completes: a new generation closes the finding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer

from groupwatch_dev.demo.traffic import create_topic, produce
from tests.realgroups import dump_consumer_offsets, make_config, run_once, table

pytestmark = [pytest.mark.broker, pytest.mark.spark]

TOPIC = "stuck-orders"
GROUP = "stuck-real"
STUCK_MS = 4_000


class Member:
    """A kafka-python member polling in its own thread until paused or closed."""

    def __init__(self, broker: str, client_id: str, **extra: Any) -> None:
        self.consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=broker,
            group_id=GROUP,
            client_id=client_id,
            auto_offset_reset="earliest",
            auto_commit_interval_ms=300,
            heartbeat_interval_ms=1000,
            **extra,
        )
        self.polling = threading.Event()
        self.polling.set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=client_id, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.polling.is_set():
                self.consumer.poll(timeout_ms=200)
            else:
                time.sleep(0.05)

    def owned(self) -> set[Any]:
        return set(self.consumer.assignment())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.consumer.close()


def _describe(broker: str) -> tuple[str, tuple[str, ...]]:
    from groupwatch.broker_client import describe_groups

    return describe_groups(broker, [GROUP]).get(GROUP, ("Dead", ()))


def _wait(what: str, ok: Any, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def members(broker: str) -> Iterator[dict[str, Member]]:
    create_topic(broker, TOPIC, 2)
    produce(broker, TOPIC, [(None, b"order-%d" % i) for i in range(40)])
    a = Member(broker, "stuck-a")
    # Its rebalance timeout (max.poll.interval.ms) is what the coordinator waits for it.
    b = Member(broker, "stuck-b", max_poll_interval_ms=1_800_000, session_timeout_ms=120_000)
    group = {"a": a, "b": b}
    try:
        _wait("both members assigned", lambda: a.owned() and b.owned())
        time.sleep(2.0)  # a few commits at the completed generation
        b.polling.clear()
        time.sleep(0.5)
        group["c"] = Member(broker, "stuck-c")
        _wait("PreparingRebalance", lambda: _describe(broker)[0] == "PreparingRebalance")
        time.sleep(STUCK_MS / 1000 + 1)
        assert _describe(broker)[0] == "PreparingRebalance"
        yield group
    finally:
        for m in group.values():
            m.close()


def _analyze(broker: str, lines: Sequence[dict[str, Any]]) -> list[Any]:
    from groupwatch.broker_client import describe_groups
    from groupwatch.detect import Analyzer, DetectorConfig
    from groupwatch.detect.brokers import look_twice

    analyzer = Analyzer(DetectorConfig(stuck_after_ms=STUCK_MS))
    found = [f for line in lines for f in analyzer.feed(line)]
    found += analyzer.finish()
    found += look_twice(analyzer, lambda groups: describe_groups(broker, groups), 1.0)
    return [f for f in found if f.group == GROUP]


def _last_members(lines: Sequence[dict[str, Any]]) -> tuple[int, tuple[str, ...]]:
    from groupwatch.detect.decoded import decode_raw

    last: tuple[int, tuple[str, ...]] = (-1, ())
    for line in lines:
        d = decode_raw(line)
        value = d.get("value")
        if d.get("group") == GROUP and d.get("record_type") == "group_metadata" and value:
            last = (value["generation"], tuple(m["member_id"] for m in value["members"]))
    return last


def _tick(broker: str) -> None:
    """A record on ``__consumer_offsets`` (another group's commit), so a job run has a batch."""
    from kafka import OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(bootstrap_servers=broker, group_id="stuck-ticker", enable_auto_commit=False)
    try:
        tp = TopicPartition(TOPIC, 0)
        c.assign([tp])
        c.seek(tp, 1)
        c.commit({tp: OffsetAndMetadata(1, "", -1)})
    finally:
        c.close()


def test_a_real_stuck_rebalance_is_raised_by_analyze_and_the_job_and_closed_by_its_end(
    spark, broker: str, members: dict[str, Member], tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    lines = dump_consumer_offsets(broker)
    generation, ids = _last_members(lines)
    assert generation > 0 and len(ids) == 2
    # analyze: the records (a completed generation, commits, then silence) and two looks.
    [f] = [f for f in _analyze(broker, lines) if f.kind == "rebalance_stuck"]
    assert (f.generation, set(f.members)) == (generation, set(ids))
    assert f.evidence["confirmed_by"] == "brokers"
    assert f.evidence["broker_state"] == "PreparingRebalance"
    listed = " ".join(f.evidence["broker_members"])
    assert "(stuck-a)" in listed and "(stuck-b)" in listed
    assert f.evidence["stuck_for_ms"] >= STUCK_MS

    # The job: its driver looks at every batch (two runs: two looks).
    cfg = make_config(
        broker,
        tmp_path,
        "detect.stuck_check_seconds=1",
        f"detect.stuck_after_seconds={STUCK_MS // 1000}",
        "validation.every_n_batches=0",
    )
    run_once(spark, cfg)
    _tick(broker)
    time.sleep(1.5)
    run_once(spark, cfg)
    rows = [
        r
        for r in table(spark, cfg, "findings").collect()
        if r.group == GROUP and r.kind == "rebalance_stuck"
    ]
    assert [r.finding_id for r in rows] == [f.finding_id], "analyze and the job disagree"
    assert set(rows[0].members) == set(ids) and rows[0].severity == "error"

    # The silent member polls again: the rebalance completes, a new generation closes it.
    members["b"].polling.set()
    _wait("a completed rebalance", lambda: _describe(broker)[0] == "Stable")
    _wait(
        "the new generation's record",
        lambda: _last_members(dump_consumer_offsets(broker))[0] > generation,
    )
    # Afterwards the records show one slow round (no generation skipped) and the brokers a
    # stable group: analyze of the history raises nothing (the brokers' view is a live fact).
    after = dump_consumer_offsets(broker)
    assert [g.kind for g in _analyze(broker, after) if g.kind == "rebalance_stuck"] == []
    run_once(spark, cfg)
    rows = [r for r in table(spark, cfg, "findings").collect() if r.group == GROUP]
    assert [r.kind for r in rows if r.kind == "rebalance_stuck"] == ["rebalance_stuck"]
    newest = max(
        r.generation
        for r in table(spark, cfg, "group_snapshots").collect()
        if r.group == GROUP and r.generation is not None
    )
    assert newest > generation  # a later generation: the finding is closed (docs/detection.md)
