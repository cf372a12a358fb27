"""Members whose pace a test steers (``lagmember.py``) and a producer that keeps its own account:
the ground truth of the lag tests is what the clients themselves say they produced, consumed and
committed, and when.

* :class:`Pacer` produces to chosen partitions at a fixed rate from a thread of its own and keeps,
  from the delivery reports, the offset and the record timestamp of every record it wrote.
* :class:`SteeredMember` runs ``lagmember.py`` (librdkafka or kafka-python) and keeps its member
  id and every commit it made (partition, offset, timestamp of the record at that offset, wall
  time of the commit).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.fleet.clients import Fleet, ProcessMember

LAGMEMBER = Path(__file__).with_name("lagmember.py")


@dataclass(frozen=True)
class Commit:
    """One commit as the member reports it."""

    partition: str  # "topic-p"
    offset: int
    #: timestamp (ms) of the record at ``offset`` (the oldest unprocessed), -1 if none fetched
    record_ms: int
    wall_ms: int


class SteeredMember(ProcessMember):
    """A ``lagmember.py`` process: commands go down its standard input (``command``)."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self._cond = threading.Condition()
        self.commits: list[Commit] = []
        self.member_ids: list[str] = []
        self._acks = 0
        super().__init__(name, argv, log)

    def heard(self, line: str) -> None:
        words = line.split()
        with self._cond:
            if words[:1] == ["committed"] and len(words) == 5:
                self.commits.append(Commit(words[1], int(words[2]), int(words[3]), int(words[4])))
            elif words[:1] == ["member"] and len(words) == 2:
                self.member_ids.append(words[1])
            elif words[:1] == ["ok"]:
                self._acks += 1
            self._cond.notify_all()

    def command(self, line: str, timeout: float = 30.0) -> None:
        """Send one command and wait until the member applied it."""
        with self._cond:
            target = self._acks + 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        with self._cond:
            ok = self._cond.wait_for(
                lambda: self._acks >= target or self.proc.poll() is not None, timeout
            )
        assert ok and self.proc.poll() is None, f"{self.name} did not apply {line!r}: {self.log}"

    def member_id(self, timeout: float = 60.0) -> str:
        with self._cond:
            self._cond.wait_for(lambda: bool(self.member_ids), timeout)
            assert self.member_ids, f"{self.name} reported no member id: {self.log}"
            return self.member_ids[-1]

    def last_commit(self) -> Commit | None:
        with self._cond:
            return self.commits[-1] if self.commits else None

    def wait_commit(self, predicate: object, timeout: float = 60.0, what: str = "") -> Commit:
        """The first commit from now on (or the latest one) for which ``predicate`` holds."""
        assert callable(predicate)
        with self._cond:
            ok = self._cond.wait_for(
                lambda: bool(self.commits) and predicate(self.commits[-1]), timeout
            )
            assert ok, f"{self.name}: no commit {what} in {timeout:.0f}s: {self.commits[-3:]}"
            return self.commits[-1]


def steered(
    fleet: Fleet,
    client: str,
    name: str,
    group: str,
    topics: Sequence[str],
    client_id: str,
    protocol: str = "classic",
) -> SteeredMember:
    argv = [
        sys.executable,
        str(LAGMEMBER),
        client,
        fleet.bootstrap,
        group,
        ",".join(topics),
        client_id,
        protocol,
    ]
    member = fleet._start(name, argv, SteeredMember)  # noqa: SLF001 - the fleet owns the processes
    assert isinstance(member, SteeredMember)
    return member


class Pacer:
    """Produces one record per partition every ``1 / rate`` seconds to the partitions it is told
    (``start``/``stop``), and keeps every delivered record's offset and timestamp."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
        self._lock = threading.Lock()
        #: (topic, partition) -> records a second
        self._rates: dict[tuple[str, int], float] = {}
        self._next: dict[tuple[str, int], float] = {}
        #: (topic, partition) -> offset -> timestamp ms, from the delivery reports
        self.produced: dict[tuple[str, int], dict[int, int]] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="pacer")
        self._thread.start()

    def start(self, topic: str, partitions: Sequence[int], rate: float) -> None:
        with self._lock:
            for p in partitions:
                self._rates[(topic, p)] = rate
                self._next[(topic, p)] = time.monotonic()

    def stop(self, topic: str) -> None:
        with self._lock:
            for tp in [tp for tp in self._rates if tp[0] == topic]:
                del self._rates[tp]
        self._producer.flush(10)

    def _delivered(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))
            return
        ts = msg.timestamp()[1]  # type: ignore[attr-defined]
        tp = (msg.topic(), msg.partition())  # type: ignore[attr-defined]
        with self._lock:
            self.produced.setdefault(tp, {})[msg.offset()] = ts  # type: ignore[attr-defined]

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            with self._lock:
                due = [tp for tp, at in self._next.items() if tp in self._rates and at <= now]
                for tp in due:
                    self._next[tp] += 1.0 / self._rates[tp]
            for topic, p in due:
                self._producer.produce(
                    topic, value=b"x" * 20, partition=p, on_delivery=self._delivered
                )
            self._producer.poll(0)
            time.sleep(0.005)
        self._producer.flush(10)

    def timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """When the record at ``offset`` was produced (ms), if this producer wrote it."""
        with self._lock:
            return self.produced.get((topic, partition), {}).get(offset)

    def end(self, topic: str, partition: int) -> int:
        """One past the last offset delivered."""
        with self._lock:
            offsets = self.produced.get((topic, partition), {})
            return max(offsets) + 1 if offsets else 0

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        # The account stays; the client goes (it would keep calling a broker that is gone).
        del self._producer
