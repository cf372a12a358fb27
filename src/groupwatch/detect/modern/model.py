"""The engine's view of KIP-848 consumer groups, KIP-1071 streams groups and share groups.

A classic group's whole state is one record (``GroupMetadataValue``); a modern group's state is
spread over one record per key — the group epoch, each member's subscription, target and
current assignment — written by the broker's coordinator.  These frozen values are what one
such record says, by topic *id* (the records name no topics).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from groupwatch.detect.findings import Source

#: (topic id as Kafka prints it, partition) — or, for a streams group, (subtopology id, partition).
Slot = tuple[str, int]

#: ``MemberEpoch`` of a static member that left and may come back with its assignment.
STATIC_AWAY_EPOCH = -2


class GroupType(StrEnum):
    CONSUMER = "consumer"
    STREAMS = "streams"
    SHARE = "share"


class RecordRole(StrEnum):
    """What a modern record is about (one role per record type, whatever the group type)."""

    GROUP_EPOCH = "group_epoch"  # 3, 11, 17
    TOPIC_NAMES = "topic_names"  # 4 (<= 4.0), share 9
    MEMBER = "member"  # 5, 10, 19
    ASSIGNMENT_EPOCH = "assignment_epoch"  # 6, 12, 20
    TARGET = "target"  # 7, 13, 21
    CURRENT = "current"  # 8, 14, 22
    REGEX = "regex"  # 16
    OTHER = "other"  # share state partition metadata, streams topology, ...


@dataclass(frozen=True, slots=True)
class MemberStates:
    """The ``State`` bytes of one group type (Kafka's ``MemberState`` enums differ per type)."""

    stable: int
    unrevoked: int
    unreleased: int

    def name(self, state: int) -> str:
        names = {
            self.stable: "STABLE",
            self.unrevoked: "UNREVOKED",
            self.unreleased: "UNRELEASED",
        }
        return names.get(state, f"UNKNOWN({state})")


#: Consumer groups: STABLE 0, UNREVOKED_PARTITIONS 1, UNRELEASED_PARTITIONS 2 (UNKNOWN 127).
CONSUMER_STATES = MemberStates(stable=0, unrevoked=1, unreleased=2)
#: Streams groups: STABLE 1, UNREVOKED_TASKS 2, UNRELEASED_TASKS 3 (UNKNOWN 127).
STREAMS_STATES = MemberStates(stable=1, unrevoked=2, unreleased=3)


@dataclass(frozen=True, slots=True)
class Epoch:
    """A group epoch (3) or an assignment epoch (6)."""

    epoch: int


@dataclass(frozen=True, slots=True)
class TopicNames:
    """Topic id -> name pairs a record states (partition metadata of <= 4.0 brokers)."""

    names: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """A member's subscription record (5; 19 for streams)."""

    subscribed: tuple[str, ...]
    regex: str | None
    rebalance_timeout_ms: int | None
    instance_id: str | None
    client_id: str | None
    client_host: str | None
    server_assignor: str | None
    #: A classic-protocol member of a consumer group (an upgrade in progress).
    classic: bool = False
    #: Streams: the process the member runs in (tasks are exclusive per process).
    process_id: str | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """A member's target assignment (7; 21 for streams: its active tasks, plus standbys)."""

    slots: tuple[Slot, ...]
    standby: tuple[Slot, ...] = ()


@dataclass(frozen=True, slots=True)
class Current:
    """A member's current assignment (8; 22 for streams: active tasks as ``assigned``)."""

    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: tuple[Slot, ...]
    pending: tuple[Slot, ...]
    #: Streams only: standby and warm-up tasks, and those of them pending revocation.
    standby: tuple[Slot, ...] = ()
    standby_pending: tuple[Slot, ...] = ()


@dataclass(frozen=True, slots=True)
class RegexTopics:
    """The topics a subscription regex resolved to (16); the regex itself is in the key."""

    topics: tuple[str, ...]


Payload = Epoch | TopicNames | MemberMetadata | Target | Current | RegexTopics


@dataclass(frozen=True, slots=True)
class ModernRecord:
    """One record of a modern group.  ``value`` ``None`` is a tombstone."""

    group: str
    group_type: GroupType
    role: RecordRole
    #: The member id (roles MEMBER, TARGET, CURRENT) or the regex (REGEX); else ``None``.
    subkey: str | None
    value: Payload | None
    source: Source
    time_ms: int | None
