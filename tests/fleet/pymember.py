"""One consumer-group member of a Python client library, run as its own process by the fleet tests.

    python pymember.py CLIENT BOOTSTRAP GROUP TOPICS ASSIGNOR [INSTANCE_ID]

CLIENT is ``confluent`` (librdkafka through confluent-kafka) or ``kafka-python``; ASSIGNOR is the
client's own ``partition.assignment.strategy`` value (``cooperative-sticky``, ``range,roundrobin``,
``sticky``, ...).  It prints ``assigned t-p,...`` (sorted) whenever what it owns changes and
closes cleanly (a LeaveGroup for a dynamic member) when its standard input says ``leave`` or ends.
A process of its own keeps the client's threads away from pytest's.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

STOP = threading.Event()


def _watch_stdin() -> None:
    for line in sys.stdin:
        if line.strip() == "leave":
            break
    STOP.set()


def _say(line: str) -> None:
    print(line, flush=True)


def confluent_member(
    bootstrap: str, group: str, topics: list[str], assignor: str, instance: str | None
) -> tuple[Callable[[], set[str]], Callable[[], None], Callable[[], None]]:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": "fleet-rdkafka",
        "partition.assignment.strategy": assignor,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 1000,
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        "error_cb": lambda err: _say(f"error {err}"),
    }
    if instance:
        conf["group.instance.id"] = instance
    consumer = Consumer(conf)
    consumer.subscribe(topics)

    def owned() -> set[str]:
        return {f"{tp.topic}-{tp.partition}" for tp in consumer.assignment()}

    def poll() -> None:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error():
            _say(f"error {msg.error()}")

    return owned, poll, consumer.close


def kafka_python_member(
    bootstrap: str, group: str, topics: list[str], assignor: str, instance: str | None
) -> tuple[Callable[[], set[str]], Callable[[], None], Callable[[], None]]:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    by_name = {
        a.name: a
        for a in (
            RangePartitionAssignor,
            RoundRobinPartitionAssignor,
            StickyPartitionAssignor,
            CooperativeStickyAssignor,
        )
    }
    consumer = KafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="fleet-kafka-python",
        group_instance_id=instance,
        partition_assignment_strategy=[by_name[n] for n in assignor.split(",")],
        auto_offset_reset="earliest",
        enable_auto_commit=True,
        auto_commit_interval_ms=1000,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )

    def owned() -> set[str]:
        return {f"{tp.topic}-{tp.partition}" for tp in consumer.assignment()}

    def poll() -> None:
        consumer.poll(timeout_ms=200)

    return owned, poll, consumer.close


def main(argv: list[str]) -> int:
    # A member that stops heartbeating is a client problem worth seeing: SIGUSR1 (sent by the
    # fleet when a group does not converge) writes every thread's stack to stderr, the log.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    client, bootstrap, group, topics, assignor = argv[:5]
    instance = argv[5] if len(argv) > 5 else None
    make = {"confluent": confluent_member, "kafka-python": kafka_python_member}[client]
    owned, poll, close = make(bootstrap, group, topics.split(","), assignor, instance)
    threading.Thread(target=_watch_stdin, daemon=True).start()
    last: set[str] | None = None
    while not STOP.is_set():
        poll()
        now = owned()
        if now != last:
            _say("assigned " + ",".join(sorted(now)))
            last = now
    close()
    _say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
