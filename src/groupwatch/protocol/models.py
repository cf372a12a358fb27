"""Typed results: one frozen dataclass per Kafka struct, fields named as Kafka names them
(snake_case).

Values carry Kafka's semantics for fields a version lacks: they take the schema default, exactly
as Kafka's generated classes do (``leader_epoch == -1`` for an ``OffsetCommitValue`` v1).  Which
fields a version *has* is a question for the spec (``MessageSpec.present``), and the JSON view
shows absent ones as null.  Tagged fields that were not written are ``None``.  Unknown tagged
fields are kept raw (tag, bytes) so a re-encode is byte-identical.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

TaggedFields = tuple[tuple[int, bytes], ...]


# --- __consumer_offsets: offset commits (record types 0, 1) ----------------------------------


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1
    topic_id: uuid.UUID | None = None
    unknown_tagged_fields: TaggedFields = ()


# --- classic groups (record type 2) ----------------------------------------------------------


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class MemberMetadata:
    """One member as stored; ``subscription``/``assignment`` are the raw protocol bytes."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None
    rebalance_timeout: int = -1
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...]
    current_state_timestamp: int = -1
    unknown_tagged_fields: TaggedFields = ()


# --- embedded consumer protocol -------------------------------------------------------------


@dataclass(frozen=True)
class TopicPartitions:
    """Kafka's ``TopicPartition`` struct of the consumer protocol: a topic and its partitions."""

    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class ConsumerProtocolSubscription:
    """``version`` is the version on the wire; versions above the newest we know are read as the
    newest (as Kafka does) and flagged by :attr:`newer_version`."""

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None

    @property
    def newer_version(self) -> bool:
        return self.version > CONSUMER_PROTOCOL_HIGHEST_VERSION


@dataclass(frozen=True)
class ConsumerProtocolAssignment:
    version: int
    assigned_partitions: tuple[TopicPartitions, ...]
    user_data: bytes | None = None

    @property
    def newer_version(self) -> bool:
        return self.version > CONSUMER_PROTOCOL_HIGHEST_VERSION


CONSUMER_PROTOCOL_HIGHEST_VERSION = 3


# --- KIP-848 consumer groups (record types 3-8, 16) ------------------------------------------


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    racks: tuple[str, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """Present for a classic-protocol member of a KIP-848 group; ``metadata`` of each supported
    protocol is a ConsumerProtocolSubscription."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int = -1
    classic_member_metadata: ClassicMemberMetadata | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class TopicIdPartitions:
    """Kafka's ``TopicPartitions`` of the KIP-848 records: partitions by topic id.
    ``assignment_epochs`` (tagged, 4.3+) exists only in current-assignment records."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicIdPartitions, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]
    partitions_pending_revocation: tuple[TopicIdPartitions, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ConsumerGroupRegularExpressionKey:
    group_id: str
    regular_expression: str


@dataclass(frozen=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    version: int
    timestamp: int
    unknown_tagged_fields: TaggedFields = ()
