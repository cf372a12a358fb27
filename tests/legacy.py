"""Historical client bugs reproduced with unmodified old releases of Kafka's Java client
(``groupwatch_dev.legacy_clients``) on the test broker, each returned with the records it left
in ``__consumer_offsets`` and the clients' own account of it (their logs and reports).

Every step waits for a state the clients reported, never for a fixed time; the timeouts only
bound a run that went wrong.  Each reproduction uses a group and a topic of its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic, produce
from groupwatch_dev.legacy_clients import (
    COOPERATIVE_VIOLATION,
    ClientLog,
    LegacyMembers,
    available,
    release_dir,
)
from tests.realgroups import dump_consumer_offsets

Records = list[dict[str, Any]]


def require_release(version: str) -> None:
    """Skip without the release (fail under CI, where setup must have fetched it)."""
    if not available(version):
        if os.environ.get("CI"):
            pytest.fail(f"{release_dir(version)} is missing: scripts/setup did not fetch it")
        pytest.skip(f"kafka-clients {version} not fetched; run scripts/setup")


@dataclass(frozen=True)
class Reproduction:
    """One group's incident on a real old client, and its ground truth."""

    version: str
    group: str
    topic: str
    #: every record of ``__consumer_offsets`` once the incident was over (all groups' records,
    #: as ``groupwatch analyze`` reads them)
    records: Records = field(repr=False)
    #: the clients' own account, from their logs
    clients: ClientLog = field(repr=False)
    #: what the member host printed (assignments, fetches, the application's errors), timed
    transcript: list[tuple[float, str]] = field(repr=False)
    #: the steps of the run, each with the seconds since it began
    events: list[str] = field(default_factory=list, repr=False)
    #: the records while the incident was still going on (None: not taken)
    records_during: Records | None = field(default=None, repr=False)
    #: the broker's own view of the group then (its DescribeGroups answer; None: not asked)
    broker_during: dict[str, Any] | None = field(default=None, repr=False)

    def generations(self, records: Records | None = None) -> list[int]:
        """The generations of the group's GroupMetadataValue records, in log order."""
        from groupwatch.detect.decoded import decode_raw

        out = []
        for line in self.records if records is None else records:
            d = decode_raw(line)
            if d.get("record_type") == "group_metadata" and d.get("group") == self.group:
                value = d.get("value")
                if value is not None and value.get("members"):
                    out.append(int(value["generation"]))
        return out

    def errors(self, text: str = "") -> list[str]:
        """The application's ``error`` lines (exceptions out of poll) containing ``text``."""
        return [line for _, line in self.transcript if line.startswith("error ") and text in line]


class _Story:
    """The steps of a run with their times, printed as they happen (pytest shows them when a
    test fails)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.t0 = time.monotonic()
        self.events: list[str] = []

    def __call__(self, text: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:6.1f}s {text}")
        print(f"{self.name}: {self.events[-1]}")


def describe_group(broker: str, group: str) -> dict[str, Any]:
    """The broker's DescribeGroups answer for ``group`` (state, protocol, members)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker)
    try:
        answer: dict[str, Any] = admin.describe_groups([group])[group]
        return answer
    finally:
        admin.close()


def _wait(predicate: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _fill(broker: str, topic: str, partitions: int, per_partition: int = 10) -> None:
    create_topic(broker, topic, partitions)
    produce(broker, topic, [(None, b"r%d" % i) for i in range(partitions * per_partition)])


def _lived_again(
    bug: str, name: str, attempts: int, once: Callable[[str], Reproduction]
) -> Reproduction:
    """``once(group)`` for group ``name``; a run that did not reach its overlap (an
    ``AssertionError``: the clients' timers raced a loaded machine) is lived again under
    ``NAME-2``, ``NAME-3``..., ``attempts`` runs at most; the last one's failure is raised."""
    groups = [name, *(f"{name}-{attempt}" for attempt in range(2, attempts + 1))]
    for group in groups[:-1]:
        try:
            return once(group)
        except AssertionError as exc:
            print(f"{bug} run {group} did not reach its overlap ({exc}); living it again")
    return once(groups[-1])


# -- KAFKA-7026: kafka-clients 2.2.2, StickyAssignor ----------------------------------------------
def reproduce_kafka_7026(
    broker: str,
    work: Path,
    name: str = "legacy-kafka-7026",
    version: str = "2.2.2",
    attempts: int = 3,
) -> Reproduction:
    """C1 and C2 share 4 partitions under 2.2.2's StickyAssignor; C1's poll loop stalls past
    max.poll.interval.ms, its heartbeat thread leaves the group and C2 takes everything; C1
    polls again and rejoins with user data (V0: no generation) that still lists its old
    partitions, and the 2.2.2 leader hands those to C1 *and* keeps them on C2.  (On a
    release with KIP-341, 2.3 and later, the same steps end without an overlap.)

    The steps race the clients' own timers (a 4 s poll interval, a 6 s session): on a loaded
    machine a member may miss its interval once more and a further generation undo the overlap
    before both members fetched what they share.  Such a run is lived again under a new group
    name, ``attempts`` times at most; the reproduction returned names the group that lived."""
    require_release(version)
    return _lived_again(
        "KAFKA-7026", name, attempts, lambda group: _kafka_7026_once(broker, work, group, version)
    )


def _kafka_7026_once(broker: str, work: Path, name: str, version: str) -> Reproduction:
    topic, group = f"{name}-orders", name
    story = _Story(name)
    _fill(broker, topic, 4)
    opts: dict[str, Any] = {"max_poll_interval_ms": 4000, "session_timeout_ms": 6000}
    with LegacyMembers(broker, version, work / f"{name}-clients.log") as m:
        m.join("C1", group, [topic], "sticky", **opts)
        m.wait_covered(["C1"], 4)
        m.join("C2", group, [topic], "sticky", **opts)
        m.wait_for(lambda o: len(o.get("C1", ())) == 2 and len(o.get("C2", ())) == 2)
        story(f"C1 and C2 balanced: {m.assignments()}")
        m.stall("C1", 9000)  # past max.poll.interval.ms (4 s)
        m.wait_for(lambda o: len(o.get("C2", ())) == 4, what="C2 to take all 4 partitions")
        alone = max(m.client_log().members["C2"].assigned)
        story(f"C1 out, C2 alone in generation {alone}")
        # C1 polls again and rejoins: wait for both members' assignments of that generation.
        _wait(
            lambda: all(
                max(m.client_log().members[n].assigned, default=0) > alone for n in ("C1", "C2")
            ),
            "C1 and C2 to be assigned in the generation after C1's return",
            60,
        )
        # New records, so both consume what they were both given.
        produce(broker, topic, [(None, b"s%d" % i) for i in range(40)])
        log = m.client_log().members
        last = max(log["C1"].assigned)
        shared = log["C1"].assigned[last] & log["C2"].assigned.get(last, frozenset())
        story(f"C1 back in generation {last}: {m.assignments()}, shared {sorted(shared)}")
        _wait(
            lambda: all(tp in _fetched_since_assigned(m, n) for n in ("C1", "C2") for tp in shared),
            "both members to fetch the partitions they share",
            60,
        )
        story("both fetched the shared partitions")
        transcript = m.transcript()
        clients = m.client_log()
    records = dump_consumer_offsets(broker)
    return Reproduction(version, group, topic, records, clients, transcript, story.events)


def _fetched_since_assigned(m: LegacyMembers, name: str) -> set[str]:
    """The partitions ``name`` fetched records of since its latest assignment."""
    out: set[str] = set()
    for _, line in m.transcript():
        if line.startswith(f"assigned {name} "):
            out.clear()
        elif line.startswith(f"fetched {name} "):
            out.add(line.split(" ", 2)[2])
    return out


# -- KAFKA-13406: kafka-clients 3.0.0, cooperative-sticky ------------------------------------------
#: The leader's session timeout in the KAFKA-13406 run: 3.0's default (KIP-735).  A leader whose
#: assignor throws rejoins every 100 ms and heartbeats in between no more: with the others' 6 s
#: the brokers removed it 6 s into the generation (its next JoinGroup: "not aware of this
#: member"), and picked the next leader from their member map, any member: in the clients'
#: logs, A, the stale claimant, then led a generation and threw in its turn.  A member removed
#: for its session gives up its partitions as lost, so a removed stale claimant takes its stale
#: claim with it, and the run healed by itself after 2 or 3 refused generations.  Kept as
#: leader, B refuses every generation for as long as A's claim is stale.
LEADER_SESSION_MS = 45_000


def reproduce_kafka_13406(
    broker: str,
    work: Path,
    name: str = "legacy-kafka-13406",
    refused_generations: int = 4,
    silent_seconds: float = 12.0,
    attempts: int = 4,
) -> Reproduction:
    """B and A share 6 partitions under 3.0.0's CooperativeStickyAssignor; A becomes a slow
    application (poll(0), then 2.5 s of work), so when C joins, A's SyncGroup for that
    generation arrives after B revoked a partition and started the next rebalance.  A rejoins
    claiming its partitions with the generation before (its user data's), the leader's
    assignor drops that stale claim and hands some of them to C while A still lists them, and
    validateCooperativeAssignment throws: no GroupMetadataValue is written.  No generation
    completes, so A's claim stays stale and B, the leader throughout (``LEADER_SESSION_MS``),
    refuses every following generation: more consumers join the group that stopped consuming
    (D1, D2, ...), each beginning a generation that B refuses, until ``refused_generations``
    were refused and the group's records have been silent (no commit, no completed
    generation) for ``silent_seconds``.  Then the records are taken (``records_during``), the
    brokers asked, and A, the stale member, leaves: the next generation completes.

    A's SyncGroup is late only when A's JoinGroup answer waits for A's next poll; when A
    happens to be inside a poll as the answer comes, A syncs in time and the hand-over to C
    completes (the clients' logs say which).  Such an attempt is dropped and the steps run
    again with a group and a topic of their own (``NAME-2``, ...), at most ``attempts`` times."""
    require_release("3.0.0")
    for attempt in range(1, attempts + 1):
        named = name if attempt == 1 else f"{name}-{attempt}"
        r = _attempt_kafka_13406(broker, work, named, refused_generations, silent_seconds)
        if r is not None:
            return r
    raise AssertionError(f"A's SyncGroup was never late in {attempts} attempts")


def _attempt_kafka_13406(
    broker: str, work: Path, name: str, refused_generations: int, silent_seconds: float
) -> Reproduction | None:
    version = "3.0.0"
    topic, group = f"{name}-orders", name
    story = _Story(name)
    _fill(broker, topic, 6)
    with LegacyMembers(broker, version, work / f"{name}-clients.log") as m:
        opts = _late_sync(m, group, topic, story, leader_session_ms=LEADER_SESSION_MS)

        def refused() -> list[int]:
            return sorted({g for mem in m.client_log().members.values() for g in mem.refused})

        _wait(lambda: bool(refused()) or _handed_over(m), "a refusal or C's partitions", 90)
        if not refused():
            story(f"A's SyncGroup was in time, C has its partitions: {m.assignments()}")
            return None
        story(f"generation {refused()} refused")
        joined: list[str] = []
        while len(refused()) < refused_generations:
            seen = len(refused())
            joined.append(f"D{len(joined) + 1}")
            m.join(joined[-1], group, [topic], "cooperative-sticky", **opts)
            _wait(
                lambda seen=seen: len(refused()) > seen,
                f"the generation {joined[-1]} began refused",
                90,
            )
            story(f"{joined[-1]} joined; generations {refused()} refused")
        during = _silent_records(broker, group, silent_seconds)
        story(f"records silent for {silent_seconds:g} s")
        view = describe_group(broker, group)
        story(f"the broker's view: {view.get('group_state')}, members {len(view['members'])}")
        m.leave("A")
        m.wait_covered(["B", "C", *joined], 6, timeout=90)
        story(f"A left; the others own everything: {m.assignments()}")
        transcript = m.transcript()
        clients = m.client_log()
    return Reproduction(
        version,
        group,
        topic,
        dump_consumer_offsets(broker),
        clients,
        transcript,
        story.events,
        records_during=during,
        broker_during=view,
    )


def last_progress_ms(group: str, records: Records) -> int | None:
    """Record time (ms) of ``group``'s newest offset commit or completed generation (with
    members): where the silence ``rebalance_stuck`` measures begins."""
    from groupwatch.detect.decoded import decode_raw

    times = []
    for line in records:
        d = decode_raw(line)
        if d.get("group") != group or line.get("timestamp") is None:
            continue
        value = d.get("value")
        if d.get("record_type") == "offset_commit" or (
            d.get("record_type") == "group_metadata" and value and value.get("members")
        ):
            times.append(int(line["timestamp"]))
    return max(times, default=None)


def _silent_records(broker: str, group: str, seconds: float, timeout: float = 120) -> Records:
    """``__consumer_offsets`` once ``group``'s records have shown no progress for ``seconds``
    (broker time; the broker runs on this machine's clock)."""
    deadline = time.monotonic() + timeout
    while True:
        records = dump_consumer_offsets(broker)
        since = last_progress_ms(group, records)
        assert since is not None, f"{group} never committed nor completed a generation"
        silent = time.time() - since / 1000
        if silent >= seconds:
            return records
        if time.monotonic() > deadline:
            raise AssertionError(f"{group}'s records not silent for {seconds} s: {silent:.1f} s")
        time.sleep(min(seconds - silent + 0.2, 5))


def _late_sync(
    m: LegacyMembers,
    group: str,
    topic: str,
    story: _Story,
    leader_session_ms: int | None = None,
) -> dict[str, Any]:
    """B, then A join (3 partitions each of 6, cooperative-sticky); A turns slow (``poll(0)``,
    2.5 s of work after each), then C joins.  B hands a partition to C in two steps (revoke,
    then rejoin at once), so the next rebalance begins before A's SyncGroup of this one.
    B, the leader, has ``leader_session_ms`` as its session timeout (default: the others').
    Returns the options the members joined with."""
    opts: dict[str, Any] = {"max_poll_interval_ms": 20000, "session_timeout_ms": 6000}
    leader = {**opts, "session_timeout_ms": leader_session_ms or opts["session_timeout_ms"]}
    m.join("B", group, [topic], "cooperative-sticky", **leader)
    m.wait_covered(["B"], 6)
    m.join("A", group, [topic], "cooperative-sticky", poll_ms=0, **opts)
    m.wait_for(lambda o: len(o.get("A", ())) == 3 and len(o.get("B", ())) == 3)
    story(f"A and B balanced: {m.assignments()}")
    m.pace("A", 2500)
    m.join("C", group, [topic], "cooperative-sticky", **opts)
    return opts


def _handed_over(m: LegacyMembers) -> bool:
    """A, B and C each own partitions and together own the topic's 6, each once: the hand-over
    to C of :func:`_late_sync` completed."""
    owned = m.assignments()
    parts = [tp for n in ("A", "B", "C") for tp in owned.get(n, frozenset())]
    return len(parts) == len(set(parts)) == 6 and all(owned.get(n) for n in "ABC")


def owned_twice(transcript: list[tuple[float, str]]) -> dict[str, frozenset[str]]:
    """From the host's reports: every partition that two members owned at one moment (both
    had reported it assigned and neither had reported it revoked), and who."""
    owned: dict[str, frozenset[str]] = {}
    out: dict[str, set[str]] = {}
    for _, line in transcript:
        words = line.split(" ", 2)
        if words[0] != "assigned" or len(words) < 2:
            continue
        owned[words[1]] = (
            frozenset(words[2].split(",")) if len(words) > 2 and words[2] else frozenset()
        )
        for tp in owned[words[1]]:
            holders = {n for n, tps in owned.items() if tp in tps}
            if len(holders) > 1:
                out.setdefault(tp, set()).update(holders)
    return {tp: frozenset(names) for tp, names in out.items()}


# -- KAFKA-14639: kafka-clients 3.0.1, cooperative-sticky ------------------------------------------
def reproduce_kafka_14639(
    broker: str, work: Path, name: str = "legacy-kafka-14639", attempts: int = 5
) -> Reproduction:
    """The choreography of KAFKA-13406 on 3.0.1, which no longer validates the built-in
    assignor's result: the leader drops A's stale claim and hands A's partitions to C at once,
    while A still owns them (A learns of it one late SyncGroup later): a partition revoked and
    assigned in one rebalance, owned by two members at once until A gives it up.

    The late SyncGroup is a race with the members' timers, as in KAFKA-13406's run: when A's
    JoinGroup answer comes while A is still inside its poll (A joined last, and a loaded
    machine held A's thread a moment), A syncs in time, the hand-over to C completes and no
    partition is owned twice.  Such a run is told as soon as C holds its share with nothing
    owned twice, and lived again under a new group name, ``attempts`` times at most (a loaded
    CI machine lost two in a row); the reproduction returned names the group that lived."""
    version = "3.0.1"
    require_release(version)
    return _lived_again(
        "KAFKA-14639", name, attempts, lambda group: _kafka_14639_once(broker, work, group, version)
    )


def _kafka_14639_once(broker: str, work: Path, name: str, version: str) -> Reproduction:
    topic, group = f"{name}-orders", name
    story = _Story(name)
    _fill(broker, topic, 6)
    with LegacyMembers(broker, version, work / f"{name}-clients.log") as m:
        _late_sync(m, group, topic, story)

        # C holds nothing before the generation that hands it A's partitions, and A reports
        # giving them up only after C reported them assigned: a hand-over seen with nothing
        # owned twice is one whose SyncGroup was in time.
        _wait(
            lambda: bool(owned_twice(m.transcript())) or _handed_over(m),
            "a partition owned by two members, or C's share",
            90,
        )
        if not owned_twice(m.transcript()):
            story(f"A's SyncGroup was in time, C has its partitions: {m.assignments()}")
            raise AssertionError("A's SyncGroup was in time: no partition owned twice")
        story(f"owned twice: {owned_twice(m.transcript())}")
        m.pace("A", 0)
        m.wait_covered(["A", "B", "C"], 6, timeout=90)
        story(f"settled: {m.assignments()}")
        transcript = m.transcript()
        clients = m.client_log()
    records = dump_consumer_offsets(broker)
    return Reproduction(version, group, topic, records, clients, transcript, story.events)


# -- healthy groups on the same releases -----------------------------------------------------------
def healthy_lifecycle(
    broker: str,
    work: Path,
    version: str,
    assignor: str,
    name: str,
    partitions: int = 6,
    attempts: int = 3,
) -> Reproduction:
    """Three members join one by one, one leaves, another restarts (a new client): every
    rebalance completes, each partition owned once, nobody stalls.

    A 3.0.0 cooperative group can hit KAFKA-13406 on its own in these steps (a SyncGroup
    that a loaded machine delays past the next rebalance): its leaders then refuse every
    assignment, which is the incident, not a healthy group. Such an attempt, told by the
    clients' own errors, is dropped and the steps run again under a group and a topic of
    their own (``NAME-2``, ...), at most ``attempts`` times; groupwatch's verdict on the
    dropped group is not a healthy group's and is not checked as one."""
    for attempt in range(1, attempts + 1):
        named = name if attempt == 1 else f"{name}-{attempt}"
        r = _healthy_attempt(broker, work, version, assignor, named, partitions)
        if not r.errors(COOPERATIVE_VIOLATION):
            return r
        print(f"{named}: the clients hit KAFKA-13406 on their own; steps run again")
    raise AssertionError(f"{name}: KAFKA-13406 in each of {attempts} healthy attempts")


def _healthy_attempt(
    broker: str, work: Path, version: str, assignor: str, name: str, partitions: int
) -> Reproduction:
    require_release(version)
    topic, group = f"{name}-orders", name
    story = _Story(name)
    _fill(broker, topic, partitions)
    names: Sequence[str] = ("M0", "M1", "M2")
    with LegacyMembers(broker, version, work / f"{name}-clients.log") as m:
        for i, member in enumerate(names):
            m.join(member, group, [topic], assignor)
            m.wait_covered(names[: i + 1], partitions)
            story(f"{member} joined: {m.assignments()}")
        m.leave("M0")
        m.wait_covered(["M1", "M2"], partitions)
        m.leave("M1")
        m.wait_covered(["M2"], partitions)
        m.join("M1r", group, [topic], assignor)
        m.wait_covered(["M2", "M1r"], partitions)
        transcript = m.transcript()
        clients = m.client_log()
        story(f"M0 and M1 left, M1r joined: {m.assignments()}")
        m.leave("M2")
        m.leave("M1r")
    records = dump_consumer_offsets(broker)
    return Reproduction(version, group, topic, records, clients, transcript, story.events)


__all__ = [
    "COOPERATIVE_VIOLATION",
    "LEADER_SESSION_MS",
    "Reproduction",
    "healthy_lifecycle",
    "last_progress_ms",
    "owned_twice",
    "reproduce_kafka_13406",
    "reproduce_kafka_14639",
    "reproduce_kafka_7026",
]
