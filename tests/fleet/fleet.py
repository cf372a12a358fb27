"""The fleet: which groups of which clients, and the life every group goes through.

Every group lives the same healthy life: three members join one by one, the first leaves cleanly,
the second restarts (a new process; under the same ``group.instance.id`` where the group uses
static membership), and each step waits until the members' own reports cover every partition
exactly once.  Then the remaining members close.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from tests.fleet.clients import Fleet, Member, ProcessMember, wait_covered

#: topic -> partitions; consumers subscribe to both, the Streams application reads the second.
TOPICS = {"fleet-orders": 6, "fleet-clicks": 12}
CONSUMER_TOPICS = tuple(TOPICS)
STREAMS_TOPIC = "fleet-clicks"
#: Groups living at the same time: enough to finish in minutes on two cores, few enough that
#: no member misses its heartbeats while JVMs start next to it.
PARALLEL = 3


StartMember = Callable[[Fleet, "GroupSpec", str, "str | None"], Member]


def _java(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.java(name, spec.group, spec.topics, spec.assignor, instance)


def _java_consumer(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.java(name, spec.group, spec.topics, spec.assignor, instance, protocol="consumer")


def _confluent(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.python("confluent", name, spec.group, spec.topics, spec.assignor, instance)


def _kafka_python(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.python("kafka-python", name, spec.group, spec.topics, spec.assignor, instance)


def _go(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.go(name, spec.group, spec.topics, spec.assignor, instance)


def _streams(fleet: Fleet, spec: GroupSpec, name: str, instance: str | None) -> Member:
    return fleet.streams(name, spec.group, spec.topics[0], "classic")


@dataclass(frozen=True)
class GroupSpec:
    group: str
    client: str
    #: the client's assignor setting (for KIP-848: the broker's assignor)
    assignor: str
    static: bool
    start: StartMember = field(repr=False)
    topics: tuple[str, ...] = CONSUMER_TOPICS

    @property
    def partitions(self) -> int:
        return sum(TOPICS[t] for t in self.topics)


GROUPS: tuple[GroupSpec, ...] = (
    GroupSpec("fleet-java-range", "Java 4.3.1 classic", "range", True, _java),
    GroupSpec("fleet-java-coop", "Java 4.3.1 classic", "cooperative-sticky", True, _java),
    GroupSpec(
        "fleet-java-consumer",
        "Java 4.3.1 group.protocol=consumer",
        "uniform",
        True,
        _java_consumer,
    ),
    GroupSpec(
        "fleet-rdkafka-coop",
        "librdkafka (confluent-kafka 2.16.1)",
        "cooperative-sticky",
        True,
        _confluent,
    ),
    GroupSpec(
        "fleet-rdkafka-range-rr",
        "librdkafka (confluent-kafka 2.16.1)",
        "range,roundrobin",
        True,
        _confluent,
    ),
    GroupSpec("fleet-kpy-sticky", "kafka-python 3.0.12", "sticky", True, _kafka_python),
    GroupSpec("fleet-kpy-coop", "kafka-python 3.0.12", "cooperative-sticky", True, _kafka_python),
    GroupSpec("fleet-go-coop", "franz-go 1.22.2", "cooperative-sticky", True, _go),
    # Streams: dynamic members (a Streams instance is identified by its state, not an
    # instance id); the application id is the group.
    GroupSpec(
        "fleet-streams",
        "Kafka Streams 4.3.1 (classic protocol)",
        "stream",
        False,
        _streams,
        topics=(STREAMS_TOPIC,),
    ),
)


@dataclass
class Timeline:
    spec: GroupSpec
    t0: float = field(default_factory=time.monotonic)
    events: list[str] = field(default_factory=list)
    #: why the group's life could not be completed (its verdict is then a failure)
    error: str | None = None
    #: the group the life was lived under: ``spec.group``, or ``spec.group-2`` when the first
    #: attempt's first member never got an assignment (see ``FirstJoinHang``)
    group: str = ""

    def __post_init__(self) -> None:
        self.group = self.group or self.spec.group

    def note(self, what: str) -> None:
        self.events.append(f"+{time.monotonic() - self.t0:5.1f}s {what}")


class FirstJoinHang(AssertionError):
    """The group's first member, alone, never reported an assignment.

    Seen only with kafka-python's cooperative-sticky member on a loaded machine (its heartbeat
    thread stops after the broker hands it everything; the member's log has its stacks).  That is
    the client's hang before the group has any life to judge, so the life is lived again under a
    new group name; any later step that does not converge stays the group's failure."""


def live(fleet: Fleet, spec: GroupSpec, tl: Timeline) -> None:
    """One group's life, noted in ``tl``; raises if any step does not converge."""

    def start(name: str, slot: int) -> Member:
        instance = f"{spec.group}-pod-{slot}" if spec.static and slot > 0 else None
        member = spec.start(fleet, spec, f"{spec.group}-{name}", instance)
        tl.note(f"started {member.name}" + (f" (instance {instance})" if instance else ""))
        return member

    def converge(members: Sequence[Member], step: str) -> None:
        took = wait_covered(members, spec.partitions, what=f"{spec.group} {step}")
        tl.note(f"{step}: {len(members)} member(s) own all {spec.partitions} ({took:.1f}s)")

    # The first member stays dynamic so that its leave is a real LeaveGroup; the others are
    # static where the group uses static membership (closing those sends no LeaveGroup).
    m0 = start("m0", 0)
    try:
        converge([m0], "first join")
    except AssertionError as exc:
        # only a client process can hang like this (and be killed); Java members share a JVM
        if m0.owned() or not isinstance(m0, ProcessMember):
            raise
        m0.kill()
        raise FirstJoinHang(str(exc)) from exc
    m1 = start("m1", 1)
    converge([m0, m1], "second join")
    m2 = start("m2", 2)
    converge([m0, m1, m2], "third join")
    m0.leave()
    tl.note(f"{m0.name} left")
    converge([m1, m2], "after a leave")
    m1.leave()
    tl.note(f"{m1.name} stopped for a restart")
    m1b = start("m1-restarted", 1)
    converge([m1b, m2], "after a restart")
    time.sleep(2.0)  # a commit interval, so that the members commit what they consumed
    for m in (m1b, m2):
        m.leave()
    tl.note("closed")
    problems = {m.name: m.problems() for m in (m0, m1, m2, m1b) if m.problems()}
    if problems:
        tl.note(f"client-reported problems: {problems}")


def _live_or_error(fleet: Fleet, spec: GroupSpec, attempts: int = 2) -> Timeline:
    tl = Timeline(spec)
    for attempt in range(1, attempts + 1):
        tl.group = spec.group if attempt == 1 else f"{spec.group}-{attempt}"
        try:
            live(fleet, replace(spec, group=tl.group), tl)
            tl.error = None
            return tl
        except FirstJoinHang as exc:
            tl.note(f"first join of {tl.group} hung in the client; lived again: {exc}")
            tl.error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - one group's failure is that group's verdict
            tl.error = f"{type(exc).__name__}: {exc}"
            return tl
    return tl


def run_fleet(fleet: Fleet, groups: Sequence[GroupSpec] = GROUPS) -> list[Timeline]:
    """Every group's life, ``PARALLEL`` groups at a time."""
    with ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="fleet") as pool:
        return list(pool.map(lambda spec: _live_or_error(fleet, spec), groups))
