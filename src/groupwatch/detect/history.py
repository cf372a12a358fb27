"""What a group's last completed generations handed out: the record the claim reading checks
claims without a generation against (:mod:`groupwatch.detect.rules.reading`).

``__consumer_offsets`` gets a ``GroupMetadataValue`` with assignments only when a leader's
SyncGroup succeeds, so the latest such record is the last assignment any member received:
a member missing from it cannot have been handed anything since, whatever generations were
skipped in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect.model import GroupSnapshot, MemberState

#: An owner index meaning "assigned to nobody".
NOBODY = -1


def writes_no_generation(m: MemberState) -> bool:
    """The member's client writes its claims without a generation: sticky user data v0 (before
    2.3), or owned partitions with no generation anywhere (cooperative-sticky before 3.0,
    clients that never set one).  A member with no user data yet (a first join) is not one."""
    if m.user_data_kind == "sticky" and m.user_data_generation is None:
        return True
    return bool(m.claim) and m.claim_generation < 0


@dataclass(frozen=True, slots=True)
class AssignedGeneration:
    """One completed generation: its members and, per partition, whom it was assigned to."""

    generation: int
    members: tuple[str, ...]
    #: topic -> per partition, the index in ``members`` of its (first) assignee, or ``NOBODY``.
    owners: Mapping[str, tuple[int, ...]]

    def owner(self, tp: TopicPartition) -> str | None:
        row = self.owners.get(tp[0])
        if row is None or not 0 <= tp[1] < len(row) or row[tp[1]] == NOBODY:
            return None
        return self.members[row[tp[1]]]

    @classmethod
    def of_snapshot(cls, snap: GroupSnapshot, max_topics: int) -> AssignedGeneration:
        """The snapshot's members and assignment (at most ``max_topics`` topics: the state stays
        bounded; a topic left out reads as handed to nobody, so nothing is inferred on it)."""
        members = tuple(m.member_id for m in snap.members)
        rows: dict[str, list[int]] = {}
        for i, m in enumerate(snap.members):
            for topic, partition in m.assigned:
                if partition < 0:
                    continue
                row = rows.get(topic)
                if row is None:
                    if len(rows) >= max_topics:
                        continue
                    row = rows[topic] = []
                if len(row) <= partition:
                    row.extend([NOBODY] * (partition + 1 - len(row)))
                if row[partition] == NOBODY:
                    row[partition] = i
        return cls(snap.generation, members, {t: tuple(r) for t, r in sorted(rows.items())})

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "members": list(self.members),
            "owners": {t: list(r) for t, r in self.owners.items()},
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AssignedGeneration:
        return cls(
            generation=int(doc["generation"]),
            members=tuple(str(m) for m in doc["members"]),
            owners={str(t): tuple(int(i) for i in r) for t, r in doc["owners"].items()},
        )
