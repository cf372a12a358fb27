"""A modern group's state, rebuilt from its records the way the coordinator replays them.

One value per key: the group epoch, the assignment epoch, and per member its subscription,
target and current assignment; a tombstone removes its key.  ``holders`` remembers, for every
partition (task) ever held, who held it last and at which member epoch: the handover checks
compare the next holder with it.  All of it is bounded by the group's members and partitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.modern.model import (
    STATIC_AWAY_EPOCH,
    Current,
    GroupType,
    MemberMetadata,
    Slot,
    Target,
)

_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (MemberMetadata, Target, Current)
}


def _flat(record: MemberMetadata | Target | Current) -> dict[str, Any]:
    """A member record's fields by name, in declaration order: what ``dataclasses.asdict``
    gives for these records (strings, numbers and tuples of them, nothing nested), without its
    recursive copy of every value, which was most of a KIP-848 group's state encoding."""
    return {name: getattr(record, name) for name in _FIELD_NAMES[type(record)]}


@dataclass(frozen=True, slots=True)
class Member:
    """What the group's records say about one member."""

    meta: MemberMetadata | None = None
    target: Target | None = None
    current: Current | None = None
    #: Stream time (ms) its current ``State`` (or its away epoch -2) began.
    state_since_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Holder:
    """The last member whose current assignment held a partition, and at which epoch."""

    member_id: str
    epoch: int
    instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class Watch:
    """A violation awaiting a quiescent point.

    ``lasting`` violations describe the state and are dropped when the state no longer shows
    them; the others (a handover out of order, an epoch that went back) happened and stay until
    raised.
    """

    finding: Finding
    since_ms: int | None
    deadline_ms: int | None
    lasting: bool
    raised: bool = False


@dataclass(frozen=True)
class ModernState:
    group_type: GroupType
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    #: Stream time (ms) the group epoch first went above the assignment epoch.
    epoch_behind_since_ms: int | None = None
    members: Mapping[str, Member] = field(default_factory=dict)
    #: regex -> the topics it resolved to (record 16).
    regexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: topic id -> name, from partition metadata (4) and v4 offset commits.
    topic_names: Mapping[str, str] = field(default_factory=dict)
    holders: Mapping[Slot, Holder] = field(default_factory=dict)
    #: Time of the newest record, and whether the state changed since it was last judged.
    last_write_ms: int | None = None
    dirty: bool = False
    #: The ``__consumer_offsets`` partition the group's records live in.
    partition: int | None = None
    watch: tuple[Watch, ...] = ()
    #: The newest record's position: the source of findings about the state as a whole.
    source: Source = Source()

    # -- derived views ---------------------------------------------------------------------
    def name_of(self, topic_id: str, names: Mapping[str, str]) -> str | None:
        """The topic's name from the group's records, else from ``names`` (the Admin API)."""
        return self.topic_names.get(topic_id) or names.get(topic_id)

    def subscribed(self, meta: MemberMetadata) -> frozenset[str]:
        """A member's subscribed topic names: its list plus what its regex resolved to."""
        resolved = self.regexes.get(meta.regex, ()) if meta.regex else ()
        return frozenset(meta.subscribed) | frozenset(resolved)

    @property
    def pending_deadline(self) -> int | None:
        """The earliest deadline among violations not yet raised."""
        times = [w.deadline_ms for w in self.watch if not w.raised and w.deadline_ms is not None]
        return min(times) if times else None

    # -- JSON ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        def member(m: Member) -> dict[str, Any]:
            return {
                "meta": None if m.meta is None else _flat(m.meta),
                "target": None if m.target is None else _flat(m.target),
                "current": None if m.current is None else _flat(m.current),
                "since": m.state_since_ms,
            }

        def watch(w: Watch) -> dict[str, Any]:
            return {
                "finding": w.finding.to_state(),
                "since": w.since_ms,
                "deadline": w.deadline_ms,
                "lasting": w.lasting,
                "raised": w.raised,
            }

        return {
            "type": self.group_type.value,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "behind_since": self.epoch_behind_since_ms,
            "members": {k: member(v) for k, v in sorted(self.members.items())},
            "regexes": {k: list(v) for k, v in sorted(self.regexes.items())},
            "topic_names": dict(sorted(self.topic_names.items())),
            "holders": [
                [t, p, h.member_id, h.epoch, h.instance_id]
                for (t, p), h in sorted(self.holders.items())
            ],
            "last_write": self.last_write_ms,
            "dirty": self.dirty,
            "partition": self.partition,
            "watch": [watch(w) for w in self.watch],
            "source": self.source.to_dict(),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ModernState:
        def slots(raw: Any) -> tuple[Slot, ...]:
            return tuple((str(t), int(p)) for t, p in raw or ())

        def member(raw: Mapping[str, Any]) -> Member:
            meta, target, current = raw.get("meta"), raw.get("target"), raw.get("current")
            return Member(
                meta=None
                if meta is None
                else MemberMetadata(**{**meta, "subscribed": tuple(meta["subscribed"])}),
                target=None
                if target is None
                else Target(slots(target["slots"]), slots(target.get("standby"))),
                current=None
                if current is None
                else Current(
                    int(current["member_epoch"]),
                    int(current["previous_member_epoch"]),
                    int(current["state"]),
                    slots(current["assigned"]),
                    slots(current["pending"]),
                    slots(current.get("standby")),
                    slots(current.get("standby_pending")),
                ),
                state_since_ms=raw.get("since"),
            )

        return cls(
            group_type=GroupType(doc["type"]),
            group_epoch=doc.get("group_epoch"),
            assignment_epoch=doc.get("assignment_epoch"),
            epoch_behind_since_ms=doc.get("behind_since"),
            members={str(k): member(v) for k, v in (doc.get("members") or {}).items()},
            regexes={str(k): tuple(v) for k, v in (doc.get("regexes") or {}).items()},
            topic_names=dict(doc.get("topic_names") or {}),
            holders={
                (str(t), int(p)): Holder(str(m), int(e), i)
                for t, p, m, e, i in doc.get("holders") or ()
            },
            last_write_ms=doc.get("last_write"),
            dirty=bool(doc.get("dirty", False)),
            partition=doc.get("partition"),
            watch=tuple(
                Watch(
                    Finding.from_state(w["finding"]),
                    w.get("since"),
                    w.get("deadline"),
                    bool(w.get("lasting")),
                    bool(w.get("raised")),
                )
                for w in doc.get("watch") or ()
            ),
            source=Source(**(doc.get("source") or {})),
        )


def with_member(state: ModernState, member_id: str, member: Member | None) -> ModernState:
    """``state`` with ``member_id`` replaced (``None``: removed when nothing of it is left)."""
    members = dict(state.members)
    if member is None or (member.meta is None and member.target is None and member.current is None):
        members.pop(member_id, None)
    else:
        members[member_id] = member
    return replace(state, members=members)


def held(current: Current | None) -> frozenset[Slot]:
    """What a current assignment holds: assigned and pending revocation (what replay claims)."""
    if current is None:
        return frozenset()
    return frozenset(current.assigned) | frozenset(current.pending)


def is_away(current: Current | None) -> bool:
    return current is not None and current.member_epoch == STATIC_AWAY_EPOCH
