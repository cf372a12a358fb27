"""Real consumer groups on a real broker, driven with kafka-python's group client.

Used by the demo and by the integration tests: members join one by one (each join is a
rebalance, i.e. a new group-metadata record), consume, commit and leave.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def produce(
    bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes | None]]
) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for key, value in records:
        producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()


class Member:
    """One consumer of a group, polling in its own thread until told to stop."""

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], **config: object) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=1000,
            **config,
        )
        # Subscribed once its metadata holds every topic's partitions: a leader that joins
        # before (a topic just created) assigns it nothing ("No partition metadata for topic"),
        # and kafka-python did not always join again when the metadata came: a group of one
        # member with no partition for a minute, on a loaded machine.
        deadline = time.monotonic() + 30
        while not all(self.consumer.partitions_for_topic(t) for t in topics):
            if time.monotonic() > deadline:
                self.consumer.close()
                raise AssertionError(f"no partition metadata for {list(topics)} in 30 s")
            time.sleep(0.2)
        self.consumer.subscribe(list(topics))
        self.consumed = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                batches = self.consumer.poll(timeout_ms=200)
                self.consumed += sum(len(r) for r in batches.values())
                if batches:
                    self.consumer.commit()

    def assignment(self) -> set[tuple[str, int]]:
        with self._lock:
            return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def wait_until_assigned(members: Sequence[Member], partitions: int, timeout: float = 60) -> None:
    """Until the members' assignments cover every partition exactly once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owned = [tp for m in members for tp in m.assignment()]
        if (
            len(owned) == partitions
            and len(set(owned)) == partitions
            and all(m.assignment() for m in members[:partitions])
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"group did not settle: {[m.assignment() for m in members]}")


def scale_out_group(
    bootstrap: str,
    group: str,
    topic: str,
    partitions: int,
    size: int,
    *,
    consume: int = 0,
    timeout: float = 60,
) -> int:
    """Start members one by one (a rebalance each), let them consume (and commit) at least
    ``consume`` records, then leave (closing a member lets its last poll commit first).
    Returns how many records the members consumed."""
    members: list[Member] = []
    try:
        for _ in range(size):
            members.append(Member(bootstrap, group, [topic]))
            wait_until_assigned(members, partitions, timeout)
        deadline = time.monotonic() + timeout
        while sum(m.consumed for m in members) < consume and time.monotonic() < deadline:
            time.sleep(0.2)
        return sum(m.consumed for m in members)
    finally:
        for m in members:
            m.close()


def replay(bootstrap: str, topic: str, records: Iterable[Mapping[str, Any]]) -> int:
    """Produce raw ``__consumer_offsets``-style records (``groupwatch decode`` input lines:
    base64 key/value) into ``topic``, each in its own partition and with its own timestamp,
    so a group's records keep their order and event time. Returns how many were sent."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    count = 0
    for rec in records:
        value = rec.get("value")
        producer.send(
            topic,
            key=base64.b64decode(str(rec["key"])),
            value=None if value is None else base64.b64decode(str(value)),
            partition=int(str(rec["partition"])),
            timestamp_ms=int(str(rec["timestamp"])),
        )
        count += 1
    producer.flush()
    producer.close()
    return count
