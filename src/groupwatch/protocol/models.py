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


# --- KIP-932 share groups (record types 9-15) ------------------------------------------------


@dataclass(frozen=True)
class ShareGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ShareGroupPartitionMetadataValue:
    """Written by 3.9 and 4.0 only; the same topics as a ConsumerGroupPartitionMetadataValue."""

    topics: tuple[TopicMetadata, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicIdPartitions, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataKey:
    group_id: str


@dataclass(frozen=True)
class TopicPartitionsInfo:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class DeletingTopicInfo:
    """Kafka's ``TopicInfo`` of a ShareGroupStatePartitionMetadataValue (a topic whose share
    state is being deleted); renamed apart from the streams topology's ``TopicInfo``."""

    topic_id: uuid.UUID
    topic_name: str
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataValue:
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[DeletingTopicInfo, ...]
    unknown_tagged_fields: TaggedFields = ()


# --- KIP-1071 streams groups (record types 17, 19-23) ----------------------------------------


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: str
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class StreamsGroupMetadataValue:
    """``last_assignment_configs`` is tagged with Kafka's default of an empty list, so an
    unwritten one is ``()`` and a written null ``None``."""

    epoch: int
    metadata_hash: int
    validated_topology_epoch: int | None = None
    last_assignment_configs: tuple[KeyValue, ...] | None = ()
    stored_description_topology_epoch: int | None = None  # 4.4+
    failed_description_topology_epoch: int | None = None  # 4.4+
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: tuple[KeyValue, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class TaskIds:
    """The partitions of one subtopology a member runs tasks for.  ``assignment_epochs``
    (tagged) exists only in current-assignment records, as in :class:`TopicIdPartitions`."""

    subtopology_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberValue:
    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]
    active_tasks_pending_revocation: tuple[TaskIds, ...]
    standby_tasks_pending_revocation: tuple[TaskIds, ...]
    warmup_tasks_pending_revocation: tuple[TaskIds, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupTopologyKey:
    group_id: str


@dataclass(frozen=True)
class TopicInfo:
    """Kafka's ``TopicInfo`` of a StreamsGroupTopologyValue: an internal topic's layout."""

    name: str
    partitions: int
    replication_factor: int
    topic_configs: tuple[KeyValue, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into the subtopology's source topics, regexes and repartition source topics."""

    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class StreamsGroupTopologyValue:
    epoch: int
    subtopologies: tuple[Subtopology, ...]
    unknown_tagged_fields: TaggedFields = ()


# --- __share_group_state: the share coordinator's records (its own type ids 0, 1) ------------


@dataclass(frozen=True)
class ShareSnapshotKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True)
class ShareUpdateKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True)
class StateBatch:
    """A run of offsets in one delivery state (0 available, 2 acknowledged, 4 archived)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareSnapshotValue:
    """The whole state of a share partition as of ``write_timestamp``."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]
    # KIP-1226 (4.2+); -1 when a writer before 4.2 left it out, as Kafka reads it.
    delivery_complete_count: int = -1
    unknown_tagged_fields: TaggedFields = ()


@dataclass(frozen=True)
class ShareUpdateValue:
    """A change since the last snapshot: the batches that changed; ``start_offset`` -1 when the
    SPSO did not move."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1
    unknown_tagged_fields: TaggedFields = ()


# --- every record's key and value -------------------------------------------------------------

#: The key of every record type with a known layout.
RecordKey = (
    OffsetCommitKey
    | GroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
    | ShareGroupPartitionMetadataKey
    | ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
    | StreamsGroupMetadataKey
    | StreamsGroupMemberMetadataKey
    | StreamsGroupTargetAssignmentMetadataKey
    | StreamsGroupTargetAssignmentMemberKey
    | StreamsGroupCurrentMemberAssignmentKey
    | StreamsGroupTopologyKey
    | ShareSnapshotKey
    | ShareUpdateKey
)

#: The keys of the records about one member: their ``member_id``.
MemberKey = (
    ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ShareGroupMemberMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | StreamsGroupMemberMetadataKey
    | StreamsGroupTargetAssignmentMemberKey
    | StreamsGroupCurrentMemberAssignmentKey
)

#: The value of every record type with a known layout.
RecordValue = (
    OffsetCommitValue
    | GroupMetadataValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
    | ShareGroupPartitionMetadataValue
    | ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
    | StreamsGroupMetadataValue
    | StreamsGroupMemberMetadataValue
    | StreamsGroupTargetAssignmentMetadataValue
    | StreamsGroupTargetAssignmentMemberValue
    | StreamsGroupCurrentMemberAssignmentValue
    | StreamsGroupTopologyValue
    | ShareSnapshotValue
    | ShareUpdateValue
)
