"""Transient states are confirmed before they are raised.

A healthy group passes through states that look wrong for a moment: a cooperative leader (Kafka's
``cooperative-sticky``, Kafka Streams' ``stream``) leaves the partitions it revokes unassigned for
one round; kafka-python's leader assigns nothing in a group's first generation because it has no
topic metadata yet.  So ``unassigned_partitions`` and ``imbalanced_assignment`` are held as
*pending* and raised only when the state persists:

* the group's next generation still has it (for unassigned partitions: some of the same
  partitions are still unassigned), or
* ``confirm_after_ms`` of stream time passes on the group's ``__consumer_offsets`` partition
  without a new generation (a :class:`~groupwatch.detect.model.Tick` or any later record says
  how far stream time got).

A pending state that the next generation no longer shows is dropped.  One that was unassigned
while a member still claimed it and is handed out in the next generation is the two-round
hand-over of KIP-429: the group is then known to rebalance cooperatively (``withholding_seen``),
and claimed partitions it leaves out are withheld, not missing, from then on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import GroupSnapshot

#: Kinds a healthy group can show for a moment: raised only once confirmed.
TRANSIENT_KINDS = frozenset({"unassigned_partitions", "imbalanced_assignment"})


@dataclass(frozen=True, slots=True)
class Pending:
    """A finding that awaits confirmation."""

    finding: Finding
    #: Event time (ms) the state was first seen in this generation; ``None``: no time known.
    since_ms: int | None
    #: Stream time from which it is raised if no new generation came; ``None``: never by time.
    deadline_ms: int | None
    #: The ``__consumer_offsets`` partition whose stream time counts.
    partition: int | None
    #: Of the finding's partitions, those a member still claimed (its ``owned_partitions``).
    claimed: frozenset[TopicPartition] = frozenset()

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.finding.kind, self.finding.topic)

    def to_json(self) -> dict[str, Any]:
        return {
            "finding": self.finding.to_state(),
            "since_ms": self.since_ms,
            "deadline_ms": self.deadline_ms,
            "partition": self.partition,
            "claimed": sorted([t, p] for t, p in self.claimed),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Pending:
        return cls(
            finding=Finding.from_state(doc["finding"]),
            since_ms=doc.get("since_ms"),
            deadline_ms=doc.get("deadline_ms"),
            partition=doc.get("partition"),
            claimed=frozenset(TopicPartition(str(t), int(p)) for t, p in doc.get("claimed") or ()),
        )


def due(pending: Sequence[Pending], clock_ms: int | None, partition: int | None) -> list[int]:
    """Indexes of the pending findings whose time is up at ``clock_ms`` on ``partition``."""
    if clock_ms is None:
        return []
    return [
        i
        for i, p in enumerate(pending)
        if p.deadline_ms is not None
        and clock_ms >= p.deadline_ms
        and (p.partition is None or partition is None or p.partition == partition)
    ]


def expire(
    pending: tuple[Pending, ...], clock_ms: int | None, partition: int | None
) -> tuple[tuple[Pending, ...], list[Finding]]:
    """Raise what stayed unconfirmed for ``confirm_after_ms``; keep the rest pending."""
    ready = set(due(pending, clock_ms, partition))
    if not ready:
        return pending, []
    raised = [
        p.finding.with_evidence(
            confirmed_by="time",
            unresolved_since_ms=p.since_ms,
            confirmed_at_ms=p.deadline_ms,
        )
        for i, p in enumerate(pending)
        if i in ready
    ]
    return tuple(p for i, p in enumerate(pending) if i not in ready), raised


def _partitions(finding: Finding) -> frozenset[TopicPartition]:
    return frozenset(finding.partitions or ())


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one snapshot did to the pending findings."""

    pending: tuple[Pending, ...]
    raised: list[Finding]
    withholding_seen: bool


def judge(
    pending: tuple[Pending, ...],
    snap: GroupSnapshot,
    candidates: Iterable[Finding],
    confirm_after_ms: int,
    withholding_seen: bool,
) -> Outcome:
    """Hold this snapshot's transient findings, and raise those an earlier generation already
    showed.  ``candidates`` are the snapshot's findings of :data:`TRANSIENT_KINDS`."""
    if snap.awaiting_assignment:
        # The record predates the leader's SyncGroup: it says nothing about the assignment.
        return Outcome(pending, [], withholding_seen)
    older: dict[tuple[str, str | None], Pending] = {}
    same: dict[tuple[str, str | None], Pending] = {}
    for p in pending:
        generation = p.finding.generation
        if generation is not None and generation < snap.generation:
            older[p.key] = p
        elif generation == snap.generation:
            same[p.key] = p
    assigned = {tp for m in snap.members for tp in m.assigned}
    owned = {tp for m in snap.members for tp in m.owned_partitions}
    for p in older.values():
        if p.claimed & assigned:
            # Left out while its owner revoked it, handed out one rebalance later.
            withholding_seen = True
    raised: list[Finding] = []
    kept: list[Pending] = []
    for c in candidates:
        before = older.get((c.kind, c.topic))
        if before is not None:
            persists = (
                bool(_partitions(c) & _partitions(before.finding))
                if c.kind == "unassigned_partitions"
                else True
            )
            if persists:
                raised.append(
                    c.with_evidence(
                        confirmed_by="next_generation",
                        also_in_generation=before.finding.generation,
                    )
                )
        earlier = same.get((c.kind, c.topic))
        since = earlier.since_ms if earlier is not None else snap.time_ms
        kept.append(
            Pending(
                finding=c,
                since_ms=since,
                deadline_ms=None if since is None else since + confirm_after_ms,
                partition=snap.source.partition,
                claimed=frozenset(_partitions(c) & owned),
            )
        )
    return Outcome(tuple(kept), raised, withholding_seen)
