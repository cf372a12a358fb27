"""Healthy groups, simulated the way correct Kafka clients and leaders behave, for every
protocol (range, roundrobin, sticky, cooperative-sticky), subscription version and record
version: they must produce no warning, error or critical finding.

Each simulation is an ordinary scenario (see ``builder``), so it can be replayed like one.
The sticky assignments come from the assignor of issue 4 (Kafka parity); range and roundrobin
are written out here from Kafka's ``RangeAssignor``/``RoundRobinAssignor``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupwatch.assignor import MemberSubscription, TopicPartition, assign

PARTITIONS = {"t0": 6, "t1": 3}
PROTOCOLS = ("range", "roundrobin", "sticky", "cooperative-sticky")
TP = tuple[str, int]


@dataclass
class _Member:
    member_id: str
    topics: tuple[str, ...]
    instance: str | None = None
    assignment: tuple[TP, ...] | None = None  # None: never synced
    generation: int | None = None


def _range(members: Sequence[_Member], counts: Mapping[str, int]) -> dict[str, list[TP]]:
    out: dict[str, list[TP]] = {m.member_id: [] for m in members}
    for topic in sorted(counts):
        subs = sorted(
            (m for m in members if topic in m.topics), key=lambda m: m.instance or m.member_id
        )
        if not subs:
            continue
        n, c = counts[topic], len(subs)
        for i, m in enumerate(subs):
            start = n // c * i + min(i, n % c)
            length = n // c + (1 if i < n % c else 0)
            out[m.member_id].extend((topic, p) for p in range(start, start + length))
    return out


def _roundrobin(members: Sequence[_Member], counts: Mapping[str, int]) -> dict[str, list[TP]]:
    out: dict[str, list[TP]] = {m.member_id: [] for m in members}
    ring = sorted(members, key=lambda m: m.instance or m.member_id)
    subscribed = {t for m in members for t in m.topics}
    i = 0
    for topic in sorted(t for t in counts if t in subscribed):
        for p in range(counts[topic]):
            while topic not in ring[i % len(ring)].topics:
                i += 1
            out[ring[i % len(ring)].member_id].append((topic, p))
            i += 1
    return out


def _sticky(
    protocol: str, members: Sequence[_Member], counts: Mapping[str, int]
) -> tuple[dict[str, list[TP]], list[TP]]:
    subs = [
        MemberSubscription(
            m.member_id,
            m.topics,
            tuple(TopicPartition(t, p) for t, p in (m.assignment or ())),
            m.generation,
        )
        for m in members
    ]
    result = assign(protocol, counts, subs)
    return (
        {m: [(tp.topic, tp.partition) for tp in tps] for m, tps in result.assignment.items()},
        [(tp.topic, tp.partition) for tp in result.withheld],
    )


def _tps(tps: Sequence[TP] | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in tps or ():
        out.setdefault(t, []).append(p)
    return out


class _Group:
    def __init__(self, group: str, protocol: str, sub_version: int, record_version: int) -> None:
        self.group, self.protocol = group, protocol
        self.sub_version, self.record_version = sub_version, record_version
        self.members: list[_Member] = []
        self.generation = 0
        self.time = 0.0
        self.records: list[dict[str, Any]] = []

    def _member_spec(self, m: _Member, assigned: Sequence[TP]) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "id": m.member_id,
            "instance": m.instance,
            "topics": list(m.topics),
            "version": self.sub_version,
            "generation_id": -1 if m.generation is None else m.generation,
            "assigned": _tps(assigned),
        }
        if self.protocol == "sticky" and m.assignment is not None:
            gen = m.generation if self.sub_version >= 1 else None
            spec["sticky"] = {"previous": _tps(m.assignment), "generation": gen}
        if self.protocol == "cooperative-sticky":
            spec["owned"] = _tps(m.assignment)
            spec["coop"] = -1 if m.generation is None else m.generation
        return spec

    def _emit(self, assignment: Mapping[str, Sequence[TP]]) -> None:
        self.time += 30
        self.records.append(
            {
                "group": self.group,
                "generation": self.generation,
                "protocol": self.protocol if self.members else None,
                "version": self.record_version,
                "time": self.time,
                "members": [self._member_spec(m, assignment[m.member_id]) for m in self.members],
            }
        )

    def rebalance(self) -> None:
        for _ in range(5):
            self.generation += 1
            withheld: list[TP] = []
            if not self.members:
                assignment: dict[str, list[TP]] = {}
            elif self.protocol == "range":
                assignment = _range(self.members, PARTITIONS)
            elif self.protocol == "roundrobin":
                assignment = _roundrobin(self.members, PARTITIONS)
            else:
                assignment, withheld = _sticky(self.protocol, self.members, PARTITIONS)
            self._emit(assignment)
            for m in self.members:
                m.assignment = tuple(assignment[m.member_id])
                m.generation = self.generation
            if not withheld:  # a cooperative leader's follow-up round gives them out
                return
        raise AssertionError("cooperative hand-over did not converge")

    def join(self, member_id: str, topics: Sequence[str], instance: str | None = None) -> None:
        self.members.append(_Member(member_id, tuple(topics), instance))
        self.rebalance()

    def leave(self, member_id: str) -> None:
        self.members = [m for m in self.members if m.member_id != member_id]
        self.rebalance()

    def static_restart(self, member_id: str, new_id: str) -> None:
        """A static member comes back under a new member id: no rebalance, same generation."""
        old = next(m for m in self.members if m.member_id == member_id)
        fresh = _Member(new_id, old.topics, old.instance)
        assignment = {m.member_id: list(m.assignment or ()) for m in self.members}
        assignment[new_id] = list(old.assignment or ())
        self.members[self.members.index(old)] = fresh
        self._emit(assignment)
        fresh.assignment, fresh.generation = old.assignment, self.generation


def healthy_scenario(protocol: str, sub_version: int, record_version: int) -> dict[str, Any]:
    """Join, scale out (unequal subscriptions too), leave, static restart, empty, delete."""
    name = f"healthy-{protocol}-s{sub_version}-r{record_version}"
    g = _Group(name, protocol, sub_version, record_version)
    static = record_version >= 3
    g.join("A-1", ["t0", "t1"])
    g.join("B-1", ["t0", "t1"], "pod-b" if static else None)
    g.join("C-1", ["t0"])
    g.join("D-1", ["t0", "t1"])
    g.leave("A-1")
    if static:
        g.static_restart("B-1", "B-2")
    g.join("E-1", ["t0", "t1"])
    for m in list(g.members):
        g.leave(m.member_id)
    records: list[dict[str, Any]] = [*g.records, {"tombstone": name, "time": g.time + 60}]
    return {"name": name, "summary": "healthy", "records": records, "expect": []}


def healthy_scenarios() -> list[dict[str, Any]]:
    out = []
    for protocol in PROTOCOLS:
        for sub_version in range(4):
            if protocol == "cooperative-sticky" and sub_version == 0:
                continue  # cooperative needs owned_partitions (v1+)
            for record_version in range(5):
                out.append(healthy_scenario(protocol, sub_version, record_version))
    return out
