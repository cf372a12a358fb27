"""The engine's own view of the records: frozen events.

Built from the decoder's typed records by :mod:`groupwatch.detect.events` (and from
``groupwatch decode`` JSON lines by :mod:`groupwatch.detect.decoded`), so a change in the
decoder's output touches those two modules only.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupwatch.assignor import TopicPartition
from groupwatch.detect.findings import Source
from groupwatch.detect.modern.model import ModernRecord

#: What an absent claim generation counts as (Kafka's ``DEFAULT_GENERATION``).
NO_GENERATION = -1


@dataclass(frozen=True, slots=True)
class MemberState:
    """One member of one snapshot: what it subscribed to, claimed, and was assigned."""

    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    subscription_version: int | None
    topics: tuple[str, ...]
    #: The subscription's ``owned_partitions`` (v1+), in wire order.
    owned_partitions: tuple[TopicPartition, ...]
    #: The subscription's ``generation_id`` when >= 0 (v2+), else ``None``.
    subscription_generation: int | None
    rack_id: str | None
    #: ``sticky``, ``cooperative-sticky``, ``raw`` or ``None`` (no user data).
    user_data_kind: str | None
    #: The generation in the sticky (V1) or cooperative user data; ``None`` if absent.
    user_data_generation: int | None
    #: The sticky user data's previous assignment; ``None`` unless the user data is sticky.
    user_data_previous: tuple[TopicPartition, ...] | None
    assigned: tuple[TopicPartition, ...]
    subscription_error: str | None
    assignment_error: str | None
    #: The claim and its generation (issue 5's model, computed by the adapter).
    claim: tuple[TopicPartition, ...]
    claim_generation: int


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """One ``GroupMetadataValue`` record of a group: generation G and its members."""

    group: str
    generation: int
    protocol_type: str
    protocol: str | None
    leader: str | None
    record_version: int | None
    members: tuple[MemberState, ...]
    source: Source
    #: Event time in ms: the record timestamp, else the value's current_state_timestamp.
    time_ms: int | None
    #: Every member's assignment bytes are empty: the record was stored before the leader's
    #: SyncGroup handed assignments out, so it says nothing about the assignment.
    awaiting_assignment: bool = False


@dataclass(frozen=True, slots=True)
class Tombstone:
    """The group was deleted (a null group-metadata value)."""

    group: str
    source: Source
    time_ms: int | None


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """An offset commit of the group: it shows that ``topic`` has at least ``partition + 1``."""

    group: str
    topic: str
    partition: int
    source: Source
    time_ms: int | None
    #: The topic's id (``OffsetCommitValue`` v4, Kafka 4.1+), as Kafka prints it.
    topic_id: str | None = None
    #: A commit known from earlier batches (the job's ``group_offsets``): when the group last
    #: committed, which tells no stream time (``time_ms`` is then ``None``).
    committed_ms: int | None = None


@dataclass(frozen=True, slots=True)
class UndecodableRecord:
    """A record that did not decode; ``group`` is ``""`` when even the key was unreadable."""

    group: str
    error_kind: str
    message: str
    field_path: str | None
    byte_offset: int | None
    source: Source
    time_ms: int | None


@dataclass(frozen=True, slots=True)
class Tick:
    """Stream time reached ``time_ms`` on ``__consumer_offsets`` partition ``partition``.

    No record of the group says so: other groups' records on the group's partition do (every
    live consumer commits offsets there).  It lets a state that awaits confirmation be raised
    when the group itself stays silent.
    """

    group: str
    time_ms: int
    partition: int | None
    #: A quiescent point: the reader has caught up with the log (the end of ``analyze``'s
    #: input, a job batch that read everything available).  Modern groups are judged here.
    quiescent: bool = False


#: The classic group states (Admin ``GroupState``) in which a rebalance is under way.
REBALANCING_STATES = frozenset({"PreparingRebalance", "CompletingRebalance"})


@dataclass(frozen=True, slots=True)
class BrokerView:
    """What the brokers said about a group when asked (Admin ``describeConsumerGroups``).

    A live fact, not a record: ``time_ms`` is the wall-clock time of the question, and it moves
    no stream clock (see docs/detection.md, "Rebalances that never complete").
    """

    group: str
    #: The group's state as Kafka names it: ``PreparingRebalance``, ``Stable``, ``Empty``...
    state: str
    #: The members the brokers list, as ``member_id`` (``client_id``) text.
    members: tuple[str, ...]
    time_ms: int
    source: Source = Source()


#: Everything the per-group ``step`` consumes.
Event = (
    GroupSnapshot | Tombstone | OffsetCommit | UndecodableRecord | Tick | ModernRecord | BrokerView
)
