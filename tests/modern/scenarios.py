"""The healthy KIP-848 consumer groups of the modern-group proof, and the life each one lives.

Every group lives on its own topics, all at the same time, hosted by one
``groupwatch.modern.ModernMembers`` JVM; each step waits until the members' own reports cover
every partition exactly once (unchanged for a second).  Members stay up at the end: the groups
are dumped in their steady state.  See ``tests/modern/README.md`` for the list.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kafka import KafkaProducer

from groupwatch_dev.demo.traffic import create_topic
from tests.modern.members import ModernMembers

PREFIX = "kip848-"
#: max.poll.interval.ms (= the rebalance timeout under the consumer protocol) of the fenced
#: group's members, and how long one of them stops polling.
FENCE_MAX_POLL_MS = 5_000
FENCE_STALL_MS = 20_000
#: how long the static member stays away (MemberEpoch -2) before its restart
STATIC_AWAY_S = 3.0


@dataclass(frozen=True)
class GroupSpec:
    """One group: its id, what it shows, its topics (name -> partitions, created up front) and
    the topic created only after the group started (regex groups)."""

    group: str
    shows: str
    topics: dict[str, int]
    late_topic: tuple[str, int] | None = None
    #: the subscription pattern of a regex group
    pattern: str | None = None

    @property
    def partitions(self) -> int:
        return sum(self.topics.values()) + (self.late_topic[1] if self.late_topic else 0)

    @property
    def all_topics(self) -> dict[str, int]:
        return {**self.topics, **dict([self.late_topic] if self.late_topic else [])}


UNIFORM = GroupSpec(
    PREFIX + "uniform",
    "uniform assignor, 3 members, the third joining late (a revocation round)",
    {PREFIX + "uniform": 6},
)
RANGE = GroupSpec(
    PREFIX + "range",
    "range assignor, 3 members joining one by one, two topics",
    {PREFIX + "range-a": 4, PREFIX + "range-b": 3},
)


def _regex_group(name: str, tag: str, subscribe: str) -> GroupSpec:
    """A group subscribed to ``PREFIX + tag + "-.*"``, whose second matching topic is created
    after the group formed."""
    return GroupSpec(
        PREFIX + name,
        f"{subscribe}, a matching topic created later",
        {PREFIX + tag + "-early": 4},
        late_topic=(PREFIX + tag + "-late", 2),
        pattern=PREFIX + tag + "-.*",
    )


REGEX_CLIENT = _regex_group(
    "regex", "rxc", "subscribe(java.util.regex.Pattern) (resolved by the client)"
)
REGEX_BROKER = _regex_group(
    "regex-broker", "rxb", "subscribe(SubscriptionPattern) (resolved by the broker)"
)
STATIC = GroupSpec(
    PREFIX + "static",
    "3 static members; one closed (MemberEpoch -2) and restarted under its instance id",
    {PREFIX + "static": 6},
)
FENCED = GroupSpec(
    PREFIX + "fenced",
    f"3 members (max.poll.interval.ms {FENCE_MAX_POLL_MS}); one stops polling for "
    f"{FENCE_STALL_MS // 1000} s, is removed, and rejoins",
    {PREFIX + "fenced": 6},
)
UPGRADE = GroupSpec(
    PREFIX + "upgrade",
    "classic cooperative-sticky group, members restarted one by one with group.protocol=consumer",
    {PREFIX + "upgrade": 6},
)

GROUPS: tuple[GroupSpec, ...] = (
    UNIFORM,
    RANGE,
    REGEX_CLIENT,
    REGEX_BROKER,
    STATIC,
    FENCED,
    UPGRADE,
)


@dataclass
class Timeline:
    """What happened to one group, with times; ``error`` says why its life was cut short."""

    spec: GroupSpec
    t0: float = field(default_factory=time.monotonic)
    events: list[str] = field(default_factory=list)
    #: member name -> every member id it reported
    member_ids: dict[str, list[str]] = field(default_factory=dict)
    #: the members still up at the end
    live: list[str] = field(default_factory=list)
    error: str | None = None

    def note(self, what: str) -> None:
        self.events.append(f"+{time.monotonic() - self.t0:5.1f}s {what}")


def produce_everywhere(bootstrap: str, topics: dict[str, int], per_partition: int = 10) -> None:
    """A few records on every partition, so that every member fetches and commits (the commits'
    OffsetCommitValue v4 name each topic id)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for topic, partitions in topics.items():
            for p in range(partitions):
                for i in range(per_partition):
                    producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=p)
        producer.flush()
    finally:
        producer.close()


class Life:
    """Helpers one group's life uses: start members, wait for coverage, note each step."""

    def __init__(self, host: ModernMembers, bootstrap: str, spec: GroupSpec, tl: Timeline) -> None:
        self.host = host
        self.bootstrap = bootstrap
        self.spec = spec
        self.tl = tl
        self.started: list[str] = []

    def name(self, member: str) -> str:
        return f"{self.spec.group}-{member}"

    def start(self, member: str, **options: object) -> str:
        name = self.name(member)
        self.host.join(name, self.spec.group, **options)  # type: ignore[arg-type]
        self.started.append(name)
        self.tl.note(f"started {name} {options}")
        return name

    def converge(self, names: Sequence[str], partitions: int, step: str, **kw: float) -> None:
        took = self.host.wait_covered(names, partitions, **kw)
        self.tl.note(f"{step}: {len(names)} member(s) own all {partitions} ({took:.1f}s)")

    def stop(self, name: str) -> None:
        self.host.leave(name)
        self.tl.note(f"closed {name}")


def _uniform(life: Life) -> list[str]:
    topics = list(life.spec.topics)
    a = life.start("a", topics=topics, assignor="uniform")
    b = life.start("b", topics=topics, assignor="uniform")
    life.converge([a, b], 6, "two members")
    c = life.start("c-late", topics=topics, assignor="uniform")
    life.converge([a, b, c], 6, "the late member took its share")
    return [a, b, c]


def _range(life: Life) -> list[str]:
    topics = list(life.spec.topics)
    names: list[str] = []
    for member in ("a", "b", "c"):
        names.append(life.start(member, topics=topics, assignor="range"))
        life.converge(names, 7, f"{len(names)} member(s)")
    return names


def _regex(life: Life, *, broker_side: bool) -> list[str]:
    assert life.spec.pattern is not None
    option = {"regex" if broker_side else "pattern": life.spec.pattern}
    a = life.start("a", assignor="uniform", **option)
    b = life.start("b", assignor="uniform", **option)
    life.converge([a, b], 4, f"matched {list(life.spec.topics)}")
    assert life.spec.late_topic is not None
    late, partitions = life.spec.late_topic
    create_topic(life.bootstrap, late, partitions)
    produce_everywhere(life.bootstrap, {late: partitions})
    life.tl.note(f"created {late} ({partitions} partitions)")
    life.converge([a, b], 4 + partitions, f"matched {late} too", timeout=120)
    return [a, b]


def _static(life: Life) -> list[str]:
    topics = list(life.spec.topics)
    pods = {m: f"{life.spec.group}-pod-{m}" for m in ("a", "b", "c")}
    names = [life.start(m, topics=topics, instance=pods[m]) for m in pods]
    life.converge(names, 6, "three static members")
    a, b, c = names
    held = {n: life.host.owned(n) for n in (a, c)}
    life.stop(b)
    time.sleep(STATIC_AWAY_S)
    # While b is away (MemberEpoch -2) its partitions stay reserved for its instance id.
    kept = {n: life.host.owned(n) for n in (a, c)}
    if kept != held:
        raise AssertionError(f"the others' partitions changed while {b} was away: {kept}")
    life.tl.note(f"{b} away {STATIC_AWAY_S:.0f}s, the others kept their partitions")
    b2 = life.start("b-restarted", topics=topics, instance=pods["b"])
    life.converge([a, b2, c], 6, "the restarted member is back")
    return [a, b2, c]


def _fenced(life: Life) -> list[str]:
    topics = list(life.spec.topics)
    names = [life.start(m, topics=topics, max_poll_ms=FENCE_MAX_POLL_MS) for m in ("a", "b", "c")]
    life.converge(names, 6, "three members")
    a, b, c = names
    life.host.stall(b, FENCE_STALL_MS)
    life.tl.note(f"{b} stopped polling for {FENCE_STALL_MS} ms")
    life.converge([a, c], 6, f"the others took {b}'s partitions", steady=0.5)
    life.converge(names, 6, f"{b} polled again and rejoined", timeout=120)
    return names


def _upgrade(life: Life) -> list[str]:
    topics = list(life.spec.topics)
    members = ["a", "b", "c"]
    names = [
        life.start(m, topics=topics, protocol="classic", assignor="cooperative-sticky")
        for m in members
    ]
    life.converge(names, 6, "classic group")
    for i, m in enumerate(members):
        life.stop(names[i])
        rest = names[:i] + names[i + 1 :]
        life.converge(rest, 6, f"without {names[i]}")
        names[i] = life.start(f"{m}-consumer", topics=topics)
        life.converge(names, 6, f"{names[i]} joined with group.protocol=consumer")
    return names


LIVES: dict[str, Callable[[Life], list[str]]] = {
    UNIFORM.group: _uniform,
    RANGE.group: _range,
    REGEX_CLIENT.group: lambda life: _regex(life, broker_side=False),
    REGEX_BROKER.group: lambda life: _regex(life, broker_side=True),
    STATIC.group: _static,
    FENCED.group: _fenced,
    UPGRADE.group: _upgrade,
}


def _live(host: ModernMembers, bootstrap: str, spec: GroupSpec) -> Timeline:
    tl = Timeline(spec)
    life = Life(host, bootstrap, spec, tl)
    try:
        tl.live = LIVES[spec.group](life)
    except Exception as exc:  # noqa: BLE001 - one group's failure is that group's verdict
        tl.error = f"{type(exc).__name__}: {exc}"
    prefix = spec.group + "-"
    for err in host.errors():
        if f" {prefix}" in err:
            tl.note(f"client error: {err}")
    tl.member_ids = {n: host.member_ids(n) for n in life.started}
    return tl


def run_groups(
    host: ModernMembers, bootstrap: str, groups: Sequence[GroupSpec] = GROUPS
) -> list[Timeline]:
    """Every group's life at once (one thread each); the members stay up."""
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="modern") as pool:
        return list(pool.map(lambda spec: _live(host, bootstrap, spec), groups))
