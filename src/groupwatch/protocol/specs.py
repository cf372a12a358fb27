"""The schema tables: every record of ``__consumer_offsets`` and the embedded consumer protocol,
written as data from the facts of Kafka's message specs (field names, types, version ranges).

Read a line as a Kafka JSON spec line: ``field("leader_epoch", INT32, "3+", default=-1)`` is
``{"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1}``.  Adding a Kafka
version means widening ``valid`` and adding the new fields here — nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupwatch.protocol import models as m
from groupwatch.protocol.schema import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    ArrayOf,
    FieldSpec,
    MessageSpec,
    StructSpec,
    TypeSpec,
    field,
    message,
    struct,
)

# --- offset commits ---------------------------------------------------------------------------

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey",
    "0",
    "none",
    struct(
        "OffsetCommitKey",
        m.OffsetCommitKey,
        field("group", STRING),
        field("topic", STRING),
        field("partition", INT32),
    ),
)

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    struct(
        "OffsetCommitValue",
        m.OffsetCommitValue,
        field("offset", INT64),
        field("leader_epoch", INT32, "3+", default=-1),
        field("metadata", STRING),
        field("commit_timestamp", INT64),
        field("expire_timestamp", INT64, "1", default=-1),  # only v1 carries it
        field("topic_id", UUID, "4+", tag=0),  # KAFKA-19141, written by 4.1+
    ),
)

# --- classic groups ---------------------------------------------------------------------------

GROUP_METADATA_KEY = message(
    "GroupMetadataKey",
    "0",
    "none",
    struct(
        "GroupMetadataKey",
        m.GroupMetadataKey,
        field("group", STRING),
    ),
)

MEMBER_METADATA = struct(
    "MemberMetadata",
    m.MemberMetadata,
    field("member_id", STRING),
    field("group_instance_id", STRING, "3+", nullable="3+"),
    field("client_id", STRING),
    field("client_host", STRING),
    field("rebalance_timeout", INT32, "1+", default=-1),
    field("session_timeout", INT32),
    field("subscription", BYTES),
    field("assignment", BYTES),
)

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    struct(
        "GroupMetadataValue",
        m.GroupMetadataValue,
        field("protocol_type", STRING),
        field("generation", INT32),
        field("protocol", STRING, nullable="0+"),
        field("leader", STRING, nullable="0+"),
        field("current_state_timestamp", INT64, "2+", default=-1),
        field("members", ArrayOf(MEMBER_METADATA)),
    ),
)

# --- embedded consumer protocol (never flexible) ----------------------------------------------


def _topic_partitions(name: str) -> StructSpec:
    return struct(
        name, m.TopicPartitions, field("topic", STRING), field("partitions", ArrayOf(INT32))
    )


CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    struct(
        "ConsumerProtocolSubscription",
        m.ConsumerProtocolSubscription,
        field("topics", ArrayOf(STRING)),
        field("user_data", BYTES, nullable="0+"),
        field("owned_partitions", ArrayOf(_topic_partitions("TopicPartition")), "1+"),  # KIP-429
        field("generation_id", INT32, "2+", default=-1),  # KIP-792
        field("rack_id", STRING, "3+", nullable="3+"),  # KIP-881
        versioned=True,
    ),
)

CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    struct(
        "ConsumerProtocolAssignment",
        m.ConsumerProtocolAssignment,
        field("assigned_partitions", ArrayOf(_topic_partitions("TopicPartition"))),
        field("user_data", BYTES, nullable="0+"),
        versioned=True,
    ),
)

# --- KIP-848 consumer groups (keys never flexible; values flexible from v0) -------------------


def _key(kafka_name: str, cls: type, *names: str) -> MessageSpec:
    return message(
        kafka_name, "0", "none", struct(kafka_name, cls, *(field(n, STRING) for n in names))
    )


def _value(kafka_name: str, body: StructSpec) -> MessageSpec:
    return message(kafka_name, "0", "0+", body)


def _nullable_tagged_list(name: str, element: TypeSpec, *, tag: int) -> FieldSpec:
    # Kafka's default for these is an empty list, and the broker writes a null explicitly, so
    # an unwritten one reads as () and a written null as None.
    return field(name, ArrayOf(element), nullable="0+", default=(), tag=tag)


def _topic_id_partitions(with_epochs: bool) -> StructSpec:
    fields = [field("topic_id", UUID), field("partitions", ArrayOf(INT32))]
    if with_epochs:  # 4.3+: the epoch at which each partition was assigned
        fields.append(_nullable_tagged_list("assignment_epochs", INT32, tag=0))
    return struct("TopicPartitions", m.TopicIdPartitions, *fields)


_PARTITION_METADATA_FIELDS = (
    field("topic_id", UUID),
    field("topic_name", STRING),
    field("num_partitions", INT32),
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = _value(
    "ConsumerGroupPartitionMetadataValue",
    struct(
        "ConsumerGroupPartitionMetadataValue",
        m.ConsumerGroupPartitionMetadataValue,
        field(
            "topics",
            ArrayOf(
                struct(
                    "TopicMetadata",
                    m.TopicMetadata,
                    *_PARTITION_METADATA_FIELDS,
                    field(
                        "partition_metadata",
                        ArrayOf(
                            struct(
                                "PartitionMetadata",
                                m.PartitionMetadata,
                                field("partition", INT32),
                                field("racks", ArrayOf(STRING)),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)

CONSUMER_GROUP_METADATA_VALUE = _value(
    "ConsumerGroupMetadataValue",
    struct(
        "ConsumerGroupMetadataValue",
        m.ConsumerGroupMetadataValue,
        field("epoch", INT32),
        field("metadata_hash", INT64, tag=0),  # KIP-1101, 4.1+
    ),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = _value(
    "ConsumerGroupMemberMetadataValue",
    struct(
        "ConsumerGroupMemberMetadataValue",
        m.ConsumerGroupMemberMetadataValue,
        field("instance_id", STRING, nullable="0+"),
        field("rack_id", STRING, nullable="0+"),
        field("client_id", STRING),
        field("client_host", STRING),
        field("subscribed_topic_names", ArrayOf(STRING)),
        field("subscribed_topic_regex", STRING, nullable="0+"),
        field("rebalance_timeout_ms", INT32, default=-1),
        field("server_assignor", STRING, nullable="0+"),
        field(
            "classic_member_metadata",
            struct(
                "ClassicMemberMetadata",
                m.ClassicMemberMetadata,
                field("session_timeout_ms", INT32),
                field(
                    "supported_protocols",
                    ArrayOf(
                        struct(
                            "ClassicProtocol",
                            m.ClassicProtocol,
                            field("name", STRING),
                            field("metadata", BYTES),
                        )
                    ),
                ),
            ),
            nullable="0+",
            # Kafka's default is an empty struct, not null: the broker writes the null of a
            # member on the consumer protocol as the tagged payload 00, and a reader that
            # finds no tag holds the empty struct.
            default=m.ClassicMemberMetadata(session_timeout_ms=0, supported_protocols=()),
            tag=0,
        ),
    ),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ConsumerGroupTargetAssignmentMetadataValue",
    struct(
        "ConsumerGroupTargetAssignmentMetadataValue",
        m.ConsumerGroupTargetAssignmentMetadataValue,
        field("assignment_epoch", INT32),
        field("assignment_timestamp", INT64, tag=0),  # 4.3+
    ),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ConsumerGroupTargetAssignmentMemberValue",
    struct(
        "ConsumerGroupTargetAssignmentMemberValue",
        m.ConsumerGroupTargetAssignmentMemberValue,
        field("topic_partitions", ArrayOf(_topic_id_partitions(with_epochs=False))),
    ),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ConsumerGroupCurrentMemberAssignmentValue",
    struct(
        "ConsumerGroupCurrentMemberAssignmentValue",
        m.ConsumerGroupCurrentMemberAssignmentValue,
        field("member_epoch", INT32),
        field("previous_member_epoch", INT32),
        field("state", INT8),
        field("assigned_partitions", ArrayOf(_topic_id_partitions(with_epochs=True))),
        field("partitions_pending_revocation", ArrayOf(_topic_id_partitions(with_epochs=True))),
    ),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = _value(
    "ConsumerGroupRegularExpressionValue",
    struct(
        "ConsumerGroupRegularExpressionValue",
        m.ConsumerGroupRegularExpressionValue,
        field("topics", ArrayOf(STRING)),
        field("version", INT64),
        field("timestamp", INT64),
    ),
)

# --- share and streams groups (values flexible from v0) ---------------------------------------

_TOPIC_ID_PARTITIONS = struct(
    "TopicPartitions",
    m.TopicIdPartitions,
    field("topic_id", UUID),
    field("partitions", ArrayOf(INT32)),
)
_KEY_VALUE = struct("KeyValue", m.KeyValue, field("key", STRING), field("value", STRING))


def _tasks(with_epochs: bool) -> ArrayOf:
    fields = [field("subtopology_id", STRING), field("partitions", ArrayOf(INT32))]
    if with_epochs:
        fields.append(_nullable_tagged_list("assignment_epochs", INT32, tag=0))
    return ArrayOf(struct("TaskIds", m.TaskIds, *fields))


_STREAMS_TOPIC_INFO = struct(
    "TopicInfo",
    m.TopicInfo,
    field("name", STRING),
    field("partitions", INT32),
    field("replication_factor", INT16),
    field("topic_configs", ArrayOf(_KEY_VALUE)),
)

SHARE_GROUP_PARTITION_METADATA_VALUE = _value(  # 3.9-4.0 only; same shape as type 4
    "ShareGroupPartitionMetadataValue",
    struct(
        "ShareGroupPartitionMetadataValue",
        m.ShareGroupPartitionMetadataValue,
        field(
            "topics",
            ArrayOf(
                struct(
                    "TopicMetadata",
                    m.TopicMetadata,
                    *_PARTITION_METADATA_FIELDS,
                    field(
                        "partition_metadata",
                        ArrayOf(
                            struct(
                                "PartitionMetadata",
                                m.PartitionMetadata,
                                field("partition", INT32),
                                field("racks", ArrayOf(STRING)),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
SHARE_GROUP_MEMBER_METADATA_VALUE = _value(
    "ShareGroupMemberMetadataValue",
    struct(
        "ShareGroupMemberMetadataValue",
        m.ShareGroupMemberMetadataValue,
        field("rack_id", STRING, nullable="0+"),
        field("client_id", STRING),
        field("client_host", STRING),
        field("subscribed_topic_names", ArrayOf(STRING)),
    ),
)
SHARE_GROUP_METADATA_VALUE = _value(
    "ShareGroupMetadataValue",
    struct(
        "ShareGroupMetadataValue",
        m.ShareGroupMetadataValue,
        field("epoch", INT32),
        field("metadata_hash", INT64),
    ),
)
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "ShareGroupTargetAssignmentMetadataValue",
    struct(
        "ShareGroupTargetAssignmentMetadataValue",
        m.ShareGroupTargetAssignmentMetadataValue,
        field("assignment_epoch", INT32),
        field("assignment_timestamp", INT64, tag=0),
    ),
)
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "ShareGroupTargetAssignmentMemberValue",
    struct(
        "ShareGroupTargetAssignmentMemberValue",
        m.ShareGroupTargetAssignmentMemberValue,
        field("topic_partitions", ArrayOf(_TOPIC_ID_PARTITIONS)),
    ),
)
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "ShareGroupCurrentMemberAssignmentValue",
    struct(
        "ShareGroupCurrentMemberAssignmentValue",
        m.ShareGroupCurrentMemberAssignmentValue,
        field("member_epoch", INT32),
        field("previous_member_epoch", INT32),
        field("state", INT8),
        field("assigned_partitions", ArrayOf(_TOPIC_ID_PARTITIONS)),
    ),
)
_SHARE_TOPIC_PARTITIONS_INFO = struct(
    "TopicPartitionsInfo",
    m.TopicPartitionsInfo,
    field("topic_id", UUID),
    field("topic_name", STRING),
    field("partitions", ArrayOf(INT32)),
)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = _value(
    "ShareGroupStatePartitionMetadataValue",
    struct(
        "ShareGroupStatePartitionMetadataValue",
        m.ShareGroupStatePartitionMetadataValue,
        field("initializing_topics", ArrayOf(_SHARE_TOPIC_PARTITIONS_INFO)),
        field("initialized_topics", ArrayOf(_SHARE_TOPIC_PARTITIONS_INFO)),
        field(
            "deleting_topics",
            ArrayOf(
                struct(
                    "TopicInfo",
                    m.DeletingTopicInfo,
                    field("topic_id", UUID),
                    field("topic_name", STRING),
                )
            ),
        ),
    ),
)
STREAMS_GROUP_METADATA_VALUE = _value(
    "StreamsGroupMetadataValue",
    struct(
        "StreamsGroupMetadataValue",
        m.StreamsGroupMetadataValue,
        field("epoch", INT32),
        field("metadata_hash", INT64),
        field("validated_topology_epoch", INT32, tag=0),
        _nullable_tagged_list("last_assignment_configs", _KEY_VALUE, tag=1),
        # 4.4+: the topology description plugin's epochs (stored, and permanently rejected).
        field("stored_description_topology_epoch", INT32, tag=2),
        field("failed_description_topology_epoch", INT32, tag=3),
    ),
)
STREAMS_GROUP_MEMBER_METADATA_VALUE = _value(
    "StreamsGroupMemberMetadataValue",
    struct(
        "StreamsGroupMemberMetadataValue",
        m.StreamsGroupMemberMetadataValue,
        field("instance_id", STRING, nullable="0+"),
        field("rack_id", STRING, nullable="0+"),
        field("client_id", STRING),
        field("client_host", STRING),
        field("rebalance_timeout_ms", INT32),
        field("topology_epoch", INT32),
        field("process_id", STRING),
        field(
            "user_endpoint",
            struct("Endpoint", m.Endpoint, field("host", STRING), field("port", UINT16)),
            nullable="0+",
        ),
        field("client_tags", ArrayOf(_KEY_VALUE)),
    ),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _value(
    "StreamsGroupTargetAssignmentMetadataValue",
    struct(
        "StreamsGroupTargetAssignmentMetadataValue",
        m.StreamsGroupTargetAssignmentMetadataValue,
        field("assignment_epoch", INT32),
        field("assignment_timestamp", INT64, tag=0),
    ),
)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _value(
    "StreamsGroupTargetAssignmentMemberValue",
    struct(
        "StreamsGroupTargetAssignmentMemberValue",
        m.StreamsGroupTargetAssignmentMemberValue,
        field("active_tasks", _tasks(False)),
        field("standby_tasks", _tasks(False)),
        field("warmup_tasks", _tasks(False)),
    ),
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = _value(
    "StreamsGroupCurrentMemberAssignmentValue",
    struct(
        "StreamsGroupCurrentMemberAssignmentValue",
        m.StreamsGroupCurrentMemberAssignmentValue,
        field("member_epoch", INT32),
        field("previous_member_epoch", INT32),
        field("state", INT8),
        field("active_tasks", _tasks(True)),
        field("standby_tasks", _tasks(True)),
        field("warmup_tasks", _tasks(True)),
        field("active_tasks_pending_revocation", _tasks(True)),
        field("standby_tasks_pending_revocation", _tasks(True)),
        field("warmup_tasks_pending_revocation", _tasks(True)),
    ),
)
STREAMS_GROUP_TOPOLOGY_VALUE = _value(
    "StreamsGroupTopologyValue",
    struct(
        "StreamsGroupTopologyValue",
        m.StreamsGroupTopologyValue,
        field("epoch", INT32),
        field(
            "subtopologies",
            ArrayOf(
                struct(
                    "Subtopology",
                    m.Subtopology,
                    field("subtopology_id", STRING),
                    field("source_topics", ArrayOf(STRING)),
                    field("source_topic_regex", ArrayOf(STRING)),
                    field("state_changelog_topics", ArrayOf(_STREAMS_TOPIC_INFO)),
                    field("repartition_sink_topics", ArrayOf(STRING)),
                    field("repartition_source_topics", ArrayOf(_STREAMS_TOPIC_INFO)),
                    field(
                        "copartition_groups",
                        ArrayOf(
                            struct(
                                "CopartitionGroup",
                                m.CopartitionGroup,
                                field("source_topics", ArrayOf(INT16)),
                                field("source_topic_regex", ArrayOf(INT16)),
                                field("repartition_source_topics", ArrayOf(INT16)),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)

# --- __share_group_state (the share coordinator's topic; keys never flexible) -----------------


def _share_key(kafka_name: str, cls: type) -> MessageSpec:
    return message(
        kafka_name,
        "0",
        "none",
        struct(
            kafka_name,
            cls,
            field("group_id", STRING),
            field("topic_id", UUID),
            field("partition", INT32),
        ),
    )


_STATE_BATCHES = ArrayOf(
    struct(
        "StateBatch",
        m.StateBatch,
        field("first_offset", INT64),
        field("last_offset", INT64),
        field("delivery_state", INT8),  # 0 available, 2 acknowledged, 4 archived
        field("delivery_count", INT16),
    )
)
# KIP-1226, written by 4.2+: the offsets at or past the SPSO whose delivery is complete.
_DELIVERY_COMPLETE_COUNT = field("delivery_complete_count", INT32, default=-1, tag=0)

SHARE_SNAPSHOT_KEY = _share_key("ShareSnapshotKey", m.ShareSnapshotKey)
SHARE_SNAPSHOT_VALUE = _value(
    "ShareSnapshotValue",
    struct(
        "ShareSnapshotValue",
        m.ShareSnapshotValue,
        field("snapshot_epoch", INT32),
        field("state_epoch", INT32),
        field("leader_epoch", INT32),
        field("start_offset", INT64),
        _DELIVERY_COMPLETE_COUNT,
        field("create_timestamp", INT64),
        field("write_timestamp", INT64),
        field("state_batches", _STATE_BATCHES),
    ),
)
SHARE_UPDATE_KEY = _share_key("ShareUpdateKey", m.ShareUpdateKey)
SHARE_UPDATE_VALUE = _value(
    "ShareUpdateValue",
    struct(
        "ShareUpdateValue",
        m.ShareUpdateValue,
        field("snapshot_epoch", INT32),
        field("leader_epoch", INT32),
        field("start_offset", INT64),
        _DELIVERY_COMPLETE_COUNT,
        field("state_batches", _STATE_BATCHES),
    ),
)

# --- the record-type table ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RecordType:
    """One record type of a coordinator topic: the int16 at the start of the key.  Ids are per
    topic: 0 and 1 are offset commits in ``__consumer_offsets`` but share-partition snapshots and
    updates in ``__share_group_state``."""

    id: int
    name: str  # snake_case, as the CLI prints it
    kafka_name: str
    key: MessageSpec | None  # None: recognised by name only (layout not known to us)
    value: MessageSpec | None


def _group(kafka: str, cls: type) -> MessageSpec:
    return _key(kafka + "Key", cls, "group_id")


def _member(kafka: str, cls: type) -> MessageSpec:
    return _key(kafka + "Key", cls, "group_id", "member_id")


RECORD_TYPES: dict[int, RecordType] = {
    rt.id: rt
    for rt in (
        # Types 0 and 1 share the key layout; type 0 (0.8.2) values are read with any
        # OffsetCommitValue version, as pre-4.1 brokers did (4.1+ only accepts v0 there).
        RecordType(
            0, "offset_commit", "LegacyOffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
        ),
        RecordType(1, "offset_commit", "OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
        RecordType(2, "group_metadata", "GroupMetadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
        RecordType(
            3,
            "consumer_group_metadata",
            "ConsumerGroupMetadata",
            _key("ConsumerGroupMetadataKey", m.ConsumerGroupMetadataKey, "group_id"),
            CONSUMER_GROUP_METADATA_VALUE,
        ),
        RecordType(
            4,
            "consumer_group_partition_metadata",
            "ConsumerGroupPartitionMetadata",
            _key(
                "ConsumerGroupPartitionMetadataKey", m.ConsumerGroupPartitionMetadataKey, "group_id"
            ),
            CONSUMER_GROUP_PARTITION_METADATA_VALUE,
        ),
        RecordType(
            5,
            "consumer_group_member_metadata",
            "ConsumerGroupMemberMetadata",
            _key(
                "ConsumerGroupMemberMetadataKey",
                m.ConsumerGroupMemberMetadataKey,
                "group_id",
                "member_id",
            ),
            CONSUMER_GROUP_MEMBER_METADATA_VALUE,
        ),
        RecordType(
            6,
            "consumer_group_target_assignment_metadata",
            "ConsumerGroupTargetAssignmentMetadata",
            _key(
                "ConsumerGroupTargetAssignmentMetadataKey",
                m.ConsumerGroupTargetAssignmentMetadataKey,
                "group_id",
            ),
            CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        RecordType(
            7,
            "consumer_group_target_assignment_member",
            "ConsumerGroupTargetAssignmentMember",
            _key(
                "ConsumerGroupTargetAssignmentMemberKey",
                m.ConsumerGroupTargetAssignmentMemberKey,
                "group_id",
                "member_id",
            ),
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        RecordType(
            8,
            "consumer_group_current_member_assignment",
            "ConsumerGroupCurrentMemberAssignment",
            _key(
                "ConsumerGroupCurrentMemberAssignmentKey",
                m.ConsumerGroupCurrentMemberAssignmentKey,
                "group_id",
                "member_id",
            ),
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        RecordType(
            9,
            "share_group_partition_metadata",
            "ShareGroupPartitionMetadata",
            _group("ShareGroupPartitionMetadata", m.ShareGroupPartitionMetadataKey),
            SHARE_GROUP_PARTITION_METADATA_VALUE,
        ),
        RecordType(
            10,
            "share_group_member_metadata",
            "ShareGroupMemberMetadata",
            _member("ShareGroupMemberMetadata", m.ShareGroupMemberMetadataKey),
            SHARE_GROUP_MEMBER_METADATA_VALUE,
        ),
        RecordType(
            11,
            "share_group_metadata",
            "ShareGroupMetadata",
            _group("ShareGroupMetadata", m.ShareGroupMetadataKey),
            SHARE_GROUP_METADATA_VALUE,
        ),
        RecordType(
            12,
            "share_group_target_assignment_metadata",
            "ShareGroupTargetAssignmentMetadata",
            _group("ShareGroupTargetAssignmentMetadata", m.ShareGroupTargetAssignmentMetadataKey),
            SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        RecordType(
            13,
            "share_group_target_assignment_member",
            "ShareGroupTargetAssignmentMember",
            _member("ShareGroupTargetAssignmentMember", m.ShareGroupTargetAssignmentMemberKey),
            SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        RecordType(
            14,
            "share_group_current_member_assignment",
            "ShareGroupCurrentMemberAssignment",
            _member("ShareGroupCurrentMemberAssignment", m.ShareGroupCurrentMemberAssignmentKey),
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        RecordType(
            15,
            "share_group_state_partition_metadata",
            "ShareGroupStatePartitionMetadata",
            _group("ShareGroupStatePartitionMetadata", m.ShareGroupStatePartitionMetadataKey),
            SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        RecordType(
            16,
            "consumer_group_regular_expression",
            "ConsumerGroupRegularExpression",
            _key(
                "ConsumerGroupRegularExpressionKey",
                m.ConsumerGroupRegularExpressionKey,
                "group_id",
                "regular_expression",
            ),
            CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
        ),
        RecordType(
            17,
            "streams_group_metadata",
            "StreamsGroupMetadata",
            _group("StreamsGroupMetadata", m.StreamsGroupMetadataKey),
            STREAMS_GROUP_METADATA_VALUE,
        ),
        # 18 was StreamsGroupPartitionMetadata during KIP-1071 development; never released.
        RecordType(
            18, "streams_group_partition_metadata", "StreamsGroupPartitionMetadata", None, None
        ),
        RecordType(
            19,
            "streams_group_member_metadata",
            "StreamsGroupMemberMetadata",
            _member("StreamsGroupMemberMetadata", m.StreamsGroupMemberMetadataKey),
            STREAMS_GROUP_MEMBER_METADATA_VALUE,
        ),
        RecordType(
            20,
            "streams_group_target_assignment_metadata",
            "StreamsGroupTargetAssignmentMetadata",
            _group(
                "StreamsGroupTargetAssignmentMetadata", m.StreamsGroupTargetAssignmentMetadataKey
            ),
            STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        RecordType(
            21,
            "streams_group_target_assignment_member",
            "StreamsGroupTargetAssignmentMember",
            _member("StreamsGroupTargetAssignmentMember", m.StreamsGroupTargetAssignmentMemberKey),
            STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        RecordType(
            22,
            "streams_group_current_member_assignment",
            "StreamsGroupCurrentMemberAssignment",
            _member(
                "StreamsGroupCurrentMemberAssignment", m.StreamsGroupCurrentMemberAssignmentKey
            ),
            STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        RecordType(
            23,
            "streams_group_topology",
            "StreamsGroupTopology",
            _group("StreamsGroupTopology", m.StreamsGroupTopologyKey),
            STREAMS_GROUP_TOPOLOGY_VALUE,
        ),
        # Seen only in the newest Apache trunk; its layout is not released, so name only.
        RecordType(
            24,
            "streams_group_target_assignment_resolved_topic_ids",
            "StreamsGroupTargetAssignmentResolvedTopicIds",
            None,
            None,
        ),
    )
}

# --- record-type ids, for code that dispatches on them ------------------------------------------
# Derived from the table above, so an id is written down once.

#: Record type id by Kafka's name for it (``"ConsumerGroupMetadata"`` -> 3).
RECORD_TYPE_IDS: dict[str, int] = {rt.kafka_name: rt.id for rt in RECORD_TYPES.values()}
#: Offset commits (0 as 0.8.2 wrote them, 1 since): one key layout, most of the topic's volume.
OFFSET_COMMIT_TYPES: tuple[int, ...] = tuple(
    rt.id for rt in RECORD_TYPES.values() if rt.name == "offset_commit"
)
GROUP_METADATA_TYPE = RECORD_TYPE_IDS["GroupMetadata"]


def _group_first(rt: RecordType) -> bool:
    first = rt.key.struct.fields[0] if rt.key is not None else None
    return first is not None and first.name in ("group", "group_id") and first.type is STRING


#: Record types whose key starts with the group id: every type with a known key layout (those
#: recognised by name only, 18 and 24, are left to the decoder).
GROUP_KEYED_TYPES: tuple[int, ...] = tuple(
    rt.id for rt in RECORD_TYPES.values() if _group_first(rt)
)


# --- __share_group_state's record types -----------------------------------------------------------

#: The share coordinator's topic (KIP-932): where a share group's progress lives.
SHARE_STATE_TOPIC = "__share_group_state"

#: ``ShareCoordinatorRecordSerde``'s record types, by the int16 at the start of the key.
SHARE_STATE_RECORD_TYPES: dict[int, RecordType] = {
    rt.id: rt
    for rt in (
        RecordType(0, "share_snapshot", "ShareSnapshot", SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
        RecordType(1, "share_update", "ShareUpdate", SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
    )
}


def record_types_of(topic: str | None) -> dict[int, RecordType]:
    """The record-type table of ``topic``: the share coordinator's for ``__share_group_state``,
    the group coordinator's for any other topic (and for records whose topic is not known)."""
    return SHARE_STATE_RECORD_TYPES if topic == SHARE_STATE_TOPIC else RECORD_TYPES
