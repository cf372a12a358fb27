"""What the modern checks share: the group's state, names for people, and the findings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.modern.model import Current, GroupType, Slot
from groupwatch.detect.modern.state import Member, ModernState


@dataclass(frozen=True, slots=True)
class Violation:
    """A finding the state shows.  Time-limited kinds say when their condition began and how
    long it may last; the others are confirmed after ``modern_confirm_ms``."""

    finding: Finding
    began_ms: int | None = None
    limit_ms: int | None = None


class Report:
    """One evaluation of one group's state: the facts every check needs, and what they found."""

    def __init__(self, group: str, state: ModernState, config: DetectorConfig) -> None:
        self.group, self.state, self.config = group, state, config
        self.out: list[Violation] = []
        self.unresolved: set[str] = set()

    # -- helpers ---------------------------------------------------------------------------
    def topic(self, topic_id: str) -> str:
        """A topic's name for people, its id when no record named it."""
        if self.state.group_type is GroupType.STREAMS:
            return topic_id  # a subtopology id: tasks have no topic ids
        return self.state.name_of(topic_id, self.config.topic_names) or topic_id

    def names(self, topic_ids: Iterable[str]) -> dict[str, str] | None:
        """id -> name of every id, or ``None`` (and the ids noted) if one has no name."""
        out: dict[str, str] = {}
        for tid in topic_ids:
            name = self.state.name_of(tid, self.config.topic_names)
            if name is None:
                self.unresolved.add(tid)
                return None
            out[tid] = name
        return out

    def add(
        self,
        kind: str,
        detail: str,
        generation: int | None,
        *,
        member: str | None = None,
        slot: Slot | None = None,
        members: Iterable[str] = (),
        slots: Iterable[Slot] = (),
        evidence: Mapping[str, Any] | None = None,
        began_ms: int | None = None,
        limit_ms: int | None = None,
    ) -> None:
        parts = tuple(sorted(TopicPartition(self.topic(t), p) for t, p in slots))
        finding = Finding(
            kind=kind,
            group=self.group,
            generation=generation,
            detail=detail,
            source=self.state.source,
            topic=None if slot is None else self.topic(slot[0]),
            partition=None if slot is None else slot[1],
            member=member,
            members=tuple(members),
            partitions=parts or None,
            evidence={
                "group_type": self.state.group_type.value,
                "group_epoch": self.state.group_epoch,
                "assignment_epoch": self.state.assignment_epoch,
                **(
                    {"topic_id": slot[0]}
                    if slot is not None and self.state.group_type is not GroupType.STREAMS
                    else {}
                ),
                **(evidence or {}),
            },
        )
        self.out.append(Violation(finding, began_ms, limit_ms))

    def described(self, slots: Iterable[Slot]) -> str:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for t, p in sorted(slots):
            by_topic[self.topic(t)].append(p)
        return ", ".join(f"{t}{sorted(ps)}" for t, ps in sorted(by_topic.items()))

    def active(self) -> list[tuple[str, Member]]:
        """(member id, member) of the members with a current assignment, by id."""
        return [(mid, m) for mid, m in sorted(self.state.members.items()) if m.current is not None]

    def current(self, mid: str) -> Current:
        """The current assignment of a member :meth:`active` listed."""
        current = self.state.members[mid].current
        assert current is not None
        return current

    def process(self, mid: str) -> str:
        """A streams member's process (tasks are exclusive per process); itself if unknown."""
        meta = self.state.members[mid].meta
        return meta.process_id if meta is not None and meta.process_id else f"member:{mid}"

    def longest_revocation(self) -> int:
        """The longest time a member may legitimately take to revoke: its rebalance timeout
        plus the grace (members without a stated timeout count the default)."""
        cfg = self.config
        timeouts = [
            (m.meta.rebalance_timeout_ms if m.meta else None) or cfg.default_rebalance_timeout_ms
            for m in self.state.members.values()
        ]
        return max(timeouts, default=cfg.default_rebalance_timeout_ms) + cfg.revocation_grace_ms
