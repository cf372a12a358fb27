"""One consumer-group member whose pace is steered on its standard input, run as its own process by
the lag tests: the client keeps its own account of what it consumed and committed, and when.

    python lagmember.py CLIENT BOOTSTRAP GROUP TOPICS CLIENT_ID [PROTOCOL]

CLIENT is ``confluent`` (librdkafka) or ``kafka-python``; PROTOCOL is ``classic`` (the default,
range assignor) or ``consumer`` (KIP-848, librdkafka only).  Commits are explicit (no
auto-commit): the member commits the offset after the last record it *processed*, which is what
the mode on its standard input decides:

    consume        process every record as soon as it is fetched (the default)
    delay SECONDS  process a record only once it is SECONDS old (a consumer that is behind by a
                   known time: its record timestamps are the truth)
    rate N         process at most N records a second, all partitions together
    pause          pause every owned partition: no fetch, no commit (still in the group)
    stall          pause, and commit the same offsets again every second
    rewind OFFSET  seek every owned partition back to OFFSET and commit that (mode unchanged)
    leave          close cleanly and exit

Output lines: ``assigned t-p,...`` when what it owns changes, ``member ID`` when its member id
changes, ``committed t-p OFFSET TS WALL_MS`` for every commit (TS: the timestamp of the record
at OFFSET, the oldest unprocessed one, or -1 when the member has processed everything it
fetched), ``ok COMMAND`` once a command is applied, ``error ...`` for client errors.
"""

from __future__ import annotations

import faulthandler
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

COMMANDS: queue.Queue[str] = queue.Queue()
COMMIT_EVERY = 0.5
STALL_EVERY = 1.0


def _say(line: str) -> None:
    print(line, flush=True)


def _watch_stdin() -> None:
    for line in sys.stdin:
        COMMANDS.put(line.strip())
    COMMANDS.put("leave")


class Client:
    """The few calls the loop needs, over either client library."""

    fetch: Callable[[], list[tuple[str, int, int, int]]]  # (topic, partition, offset, ts)
    owned: Callable[[], set[tuple[str, int]]]
    member_id: Callable[[], str]
    commit: Callable[[dict[tuple[str, int], int]], None]
    pause: Callable[[], None]
    resume: Callable[[], None]
    seek: Callable[[tuple[str, int], int], None]
    close: Callable[[], None]


def confluent_client(
    bootstrap: str, group: str, topics: list[str], client_id: str, protocol: str
) -> Client:
    from confluent_kafka import Consumer, TopicPartition

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "error_cb": lambda err: _say(f"error {err}"),
    }
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update(
            {
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
            }
        )
    consumer = Consumer(conf)
    consumer.subscribe(topics)
    c = Client()

    def fetch() -> list[tuple[str, int, int, int]]:
        out = []
        for msg in consumer.consume(num_messages=500, timeout=0.1):
            if msg.error():
                _say(f"error {msg.error()}")
                continue
            out.append((msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1]))
        return out

    c.fetch = fetch
    c.owned = lambda: {(tp.topic, tp.partition) for tp in consumer.assignment()}
    c.member_id = lambda: consumer.memberid() or ""
    c.commit = lambda offsets: consumer.commit(
        offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
        asynchronous=False,
    )
    c.pause = lambda: consumer.pause(consumer.assignment())
    c.resume = lambda: consumer.resume(consumer.assignment())
    c.seek = lambda tp, offset: consumer.seek(TopicPartition(tp[0], tp[1], offset))
    c.close = consumer.close
    return c


def kafka_python_client(
    bootstrap: str, group: str, topics: list[str], client_id: str, protocol: str
) -> Client:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    if protocol != "classic":
        raise SystemExit("kafka-python speaks the classic protocol only")
    consumer = KafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=10000,
        heartbeat_interval_ms=1000,
    )
    c = Client()

    def fetch() -> list[tuple[str, int, int, int]]:
        out = []
        for tp, records in consumer.poll(timeout_ms=100).items():
            out.extend((tp.topic, tp.partition, r.offset, r.timestamp) for r in records)
        return out

    def member_id() -> str:
        generation = consumer._coordinator.generation()  # noqa: SLF001 - no public accessor
        return str(generation.member_id) if generation else ""

    c.fetch = fetch
    c.owned = lambda: {(tp.topic, tp.partition) for tp in consumer.assignment()}
    c.member_id = member_id
    c.commit = lambda offsets: consumer.commit(
        {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
    )
    c.pause = lambda: consumer.pause(*consumer.assignment())
    c.resume = lambda: consumer.resume(*consumer.assignment())
    c.seek = lambda tp, offset: consumer.seek(TopicPartition(*tp), offset)
    c.close = consumer.close
    return c


class Loop:
    def __init__(self, client: Client) -> None:
        self.c = client
        self.mode = "consume"
        self.arg = 0.0
        #: fetched, not yet processed: (offset, ts) per partition, in order
        self.pending: dict[tuple[str, int], deque[tuple[int, int]]] = {}
        #: the next offset to process per partition (what a commit says)
        self.position: dict[tuple[str, int], int] = {}
        self.committed: dict[tuple[str, int], int] = {}
        self.last_commit = 0.0
        self.budget = 0.0
        self.last_tick = time.monotonic()
        self.owned: set[tuple[str, int]] = set()
        self.member = ""

    def command(self, line: str) -> bool:
        words = line.split()
        if not words:
            return True
        word = words[0]
        if word == "leave":
            return False
        if word in ("consume", "delay", "rate"):
            if self.mode in ("pause", "stall"):
                self.c.resume()
            self.mode = word
            self.arg = float(words[1]) if len(words) > 1 else 0.0
        elif word in ("pause", "stall"):
            self.c.pause()
            self.mode = word
            self.last_commit = 0.0
        elif word == "rewind":
            offset = int(words[1])
            back = {tp: offset for tp in sorted(self.owned)}
            for tp in back:
                self.c.seek(tp, offset)
                self.pending[tp] = deque()
            self.position.update(back)
            self._commit(back)
        else:
            _say(f"error unknown command {line!r}")
        _say(f"ok {word}")
        return True

    def _commit(self, offsets: dict[tuple[str, int], int]) -> None:
        try:
            self.c.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - a commit racing a rebalance is refused
            _say(f"note commit refused: {type(exc).__name__}: {exc}")
            return
        wall = int(time.time() * 1000)
        for tp, offset in sorted(offsets.items()):
            waiting = self.pending.get(tp)
            ts = waiting[0][1] if waiting and waiting[0][0] == offset else -1
            self.committed[tp] = offset
            _say(f"committed {tp[0]}-{tp[1]} {offset} {ts} {wall}")
        self.last_commit = time.monotonic()

    def _process(self) -> None:
        now = time.monotonic()
        self.budget = min(self.budget + (now - self.last_tick) * self.arg, max(self.arg, 1.0))
        self.last_tick = now
        if self.mode in ("pause", "stall"):
            return
        cutoff = time.time() * 1000 - self.arg * 1000
        for tp in sorted(self.pending):
            waiting = self.pending[tp]
            while waiting:
                offset, ts = waiting[0]
                if self.mode == "delay" and ts > cutoff:
                    break
                if self.mode == "rate":
                    if self.budget < 1:
                        break
                    self.budget -= 1
                waiting.popleft()
                self.position[tp] = offset + 1

    def step(self) -> None:
        for topic, partition, offset, ts in self.c.fetch():
            tp = (topic, partition)
            self.pending.setdefault(tp, deque()).append((offset, ts))
            self.position.setdefault(tp, offset)
        owned = self.c.owned()
        if owned != self.owned:
            for tp in self.owned - owned:
                self.pending.pop(tp, None)
                self.position.pop(tp, None)
                self.committed.pop(tp, None)
            self.owned = owned
            if self.mode in ("pause", "stall"):
                self.c.pause()
            _say("assigned " + ",".join(sorted(f"{t}-{p}" for t, p in owned)))
        member = self.c.member_id()
        if member and member != self.member:
            self.member = member
            _say(f"member {member}")
        self._process()
        since = time.monotonic() - self.last_commit
        if self.mode == "stall":
            if since >= STALL_EVERY and self.committed:
                self._commit(dict(self.committed))
        elif self.mode != "pause" and since >= COMMIT_EVERY:
            moved = {
                tp: pos
                for tp, pos in self.position.items()
                if tp in self.owned and self.committed.get(tp) != pos
            }
            if moved:
                self._commit(moved)


def main(argv: list[str]) -> int:
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    client, bootstrap, group, topics, client_id = argv[:5]
    protocol = argv[5] if len(argv) > 5 else "classic"
    make = {"confluent": confluent_client, "kafka-python": kafka_python_client}[client]
    loop = Loop(make(bootstrap, group, topics.split(","), client_id, protocol))
    threading.Thread(target=_watch_stdin, daemon=True).start()
    running = True
    while running:
        while running:
            try:
                line = COMMANDS.get_nowait()
            except queue.Empty:
                break
            running = loop.command(line)
        if running:
            loop.step()
    loop.c.close()
    _say("closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
