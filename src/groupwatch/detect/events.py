"""The decoder's typed records -> the engine's events: the path the job and raw input take.

:func:`event_from_record` reads a :class:`~groupwatch.protocol.DecodedRecord` as the decoder
returns it, with partitions in wire order (the order the group's leader read them), so nothing
is lost between the bytes and the engine.  The ``groupwatch decode`` JSON view (sorted lists,
printed ids) is read by :mod:`groupwatch.detect.decoded` only, for ``analyze``'s decoded input;
both build members with :func:`member_state`, which holds the claim rule once.
"""

from __future__ import annotations

from collections.abc import Sequence

from groupwatch.assignor import TopicPartition
from groupwatch.detect.errors import ContractError
from groupwatch.detect.findings import Source
from groupwatch.detect.model import (
    NO_GENERATION,
    Event,
    GroupSnapshot,
    MemberState,
    OffsetCommit,
    Tombstone,
    UndecodableRecord,
)
from groupwatch.detect.modern.adapt import modern_from_record
from groupwatch.protocol import (
    CooperativeStickyUserData,
    DecodedRecord,
    DecodeError,
    GroupMember,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    StickyUserData,
    TopicPartitions,
    UserData,
)
from groupwatch.protocol.jsonview import kafka_uuid

DEFAULT_TOPIC = "__consumer_offsets"
CONSUMER = "consumer"


def member_state(
    *,
    member_id: str,
    group_instance_id: str | None,
    client_id: str | None,
    client_host: str | None,
    protocol: str | None,
    subscription_version: int | None,
    topics: tuple[str, ...],
    owned: tuple[TopicPartition, ...],
    subscription_generation: int | None,
    rack_id: str | None,
    user_data_kind: str | None,
    user_data_generation: int | None,
    user_data_previous: tuple[TopicPartition, ...] | None,
    assigned: tuple[TopicPartition, ...],
    subscription_error: str | None,
    assignment_error: str | None,
) -> MemberState:
    """A member with its claim computed (issue 5's model).

    Claim = ``owned_partitions``; for the ``sticky`` protocol, when that is empty, the previous
    assignment in the sticky user data.  Claim generation = the subscription's generation when
    it has one, else the user data's, else -1.
    """
    claim = owned
    if not claim and protocol == "sticky" and user_data_previous:
        claim = user_data_previous
    if subscription_generation is not None:
        claim_generation = subscription_generation
    elif user_data_generation is not None:
        claim_generation = user_data_generation
    else:
        claim_generation = NO_GENERATION
    return MemberState(
        member_id=member_id,
        group_instance_id=group_instance_id,
        client_id=client_id,
        client_host=client_host,
        subscription_version=subscription_version,
        topics=topics,
        owned_partitions=owned,
        subscription_generation=subscription_generation,
        rack_id=rack_id,
        user_data_kind=user_data_kind,
        user_data_generation=user_data_generation,
        user_data_previous=user_data_previous,
        assigned=assigned,
        subscription_error=subscription_error,
        assignment_error=assignment_error,
        claim=claim,
        claim_generation=claim_generation,
    )


def error_line(kind: str, field_path: str | None, message: str) -> str:
    """A member's decode error in one line (the ``member_assignments`` table's wording)."""
    return f"{kind} at {field_path}: {message}" if field_path else f"{kind}: {message}"


def error_text(error: DecodeError | None) -> str | None:
    return None if error is None else error_line(error.kind, error.field_path, error.message)


def _pairs(tps: Sequence[TopicPartitions]) -> tuple[TopicPartition, ...]:
    """Kafka's topic-partitions structs -> ``TopicPartition``s in wire order.

    Built with ``tuple.__new__``: a named tuple's own constructor is a Python function, and a
    large group's record holds thousands of these.
    """
    new = tuple.__new__
    return tuple([new(TopicPartition, (tp.topic, p)) for tp in tps for p in tp.partitions])


def _user_data_kind(ud: UserData | None) -> str | None:
    if ud is None:
        return None
    if isinstance(ud, StickyUserData):
        return "sticky"
    if isinstance(ud, CooperativeStickyUserData):
        return "cooperative-sticky"
    return "raw"


def member_from_record(member: GroupMember, protocol: str | None) -> MemberState:
    """One decoded classic-group member -> :class:`MemberState` (partitions in wire order)."""
    meta = member.metadata
    sub = member.subscription
    topics: tuple[str, ...] = ()
    owned: tuple[TopicPartition, ...] = ()
    version: int | None = None
    sub_generation: int | None = None
    rack: str | None = None
    ud = member.subscription_user_data
    ud_generation: int | None = None
    ud_previous: tuple[TopicPartition, ...] | None = None
    if sub is not None:
        version = sub.version
        topics = sub.topics
        owned = _pairs(sub.owned_partitions)
        # Kafka's Subscription: a negative generation (or a version without one) means none.
        if sub.version >= 2 and sub.generation_id >= 0:
            sub_generation = sub.generation_id
        rack = sub.rack_id
        if isinstance(ud, StickyUserData):
            ud_generation = ud.generation
            ud_previous = _pairs(ud.previous_assignment)
        elif isinstance(ud, CooperativeStickyUserData):
            ud_generation = ud.generation
    asg = member.assignment
    return member_state(
        member_id=meta.member_id,
        group_instance_id=meta.group_instance_id,
        client_id=meta.client_id,
        client_host=meta.client_host,
        protocol=protocol,
        subscription_version=version,
        topics=topics,
        owned=owned,
        subscription_generation=sub_generation,
        rack_id=rack,
        user_data_kind=_user_data_kind(ud) if sub is not None else None,
        user_data_generation=ud_generation,
        user_data_previous=ud_previous,
        assigned=() if asg is None else _pairs(asg.assigned_partitions),
        subscription_error=error_text(member.subscription_error),
        assignment_error=error_text(member.assignment_error),
    )


def awaiting_assignment(value: GroupMetadataValue, members: Sequence[GroupMember]) -> bool:
    """Every member's assignment bytes are empty: stored before the leader's SyncGroup.

    Only a consumer-protocol group can tell (other protocols' bytes are opaque to us).
    """
    return (
        bool(members)
        and value.protocol_type == CONSUMER
        and all(not m.metadata.assignment and m.assignment_error is None for m in members)
    )


def source_of(record: DecodedRecord) -> Source:
    """The record's position, as far as the decoder was told it."""
    return Source(
        topic=record.topic or DEFAULT_TOPIC,
        partition=record.partition,
        offset=record.offset,
        timestamp=record.timestamp,
    )


def snapshot_of(
    group: str,
    record: DecodedRecord,
    value: GroupMetadataValue,
    source: Source,
) -> GroupSnapshot:
    """A decoded group-metadata value -> :class:`GroupSnapshot` (its members converted once
    here; the job's member rows take them from the engine's report)."""
    decoded = record.members or tuple(GroupMember(m) for m in value.members)
    converted = tuple(member_from_record(m, value.protocol) for m in decoded)
    time_ms = source.timestamp
    if time_ms is None and value.current_state_timestamp >= 0:
        time_ms = value.current_state_timestamp
    return GroupSnapshot(
        group=group,
        generation=value.generation,
        protocol_type=value.protocol_type,
        protocol=value.protocol,
        leader=value.leader,
        record_version=record.value_version,
        members=converted,
        source=source,
        time_ms=time_ms,
        awaiting_assignment=awaiting_assignment(value, decoded),
    )


def event_from_record(record: DecodedRecord, group: str | None = None) -> Event | None:
    """One decoded record -> the engine's event (``None``: a record the engine has no use for:
    an offset-commit tombstone, a type it does not follow).

    ``group``: the group the record belongs to when its key did not say (the job routes
    records by what the JVM read of the key).  A record that does not decode, or breaks the
    engine's contract, becomes an :class:`UndecodableRecord`: bad input never stops the engine.
    """
    source = source_of(record)
    time_ms = source.timestamp
    name = record.group or group or ""
    error = record.error
    if error is not None:
        return UndecodableRecord(
            group=name,
            error_kind=error.kind,
            message=error.message,
            field_path=error.field_path,
            byte_offset=error.byte_offset,
            source=source,
            time_ms=time_ms,
        )
    value = record.value
    try:
        if record.record_type == "group_metadata":
            if not name:
                raise ContractError("group metadata record without a group")
            if record.tombstone or value is None:
                return Tombstone(name, source, time_ms)
            if not isinstance(value, GroupMetadataValue):
                raise ContractError("group metadata value of another type")
            return snapshot_of(name, record, value, source)
        if record.record_type == "offset_commit":
            if record.tombstone or value is None:
                return None
            key = record.key
            if not isinstance(key, OffsetCommitKey) or not isinstance(value, OffsetCommitValue):
                raise ContractError("offset commit without a decoded key and value")
            if not name or key.partition < 0:
                raise ContractError("offset commit key without group, topic or partition")
            topic_id = None if value.topic_id is None else kafka_uuid(value.topic_id)
            return OffsetCommit(name, key.topic, key.partition, source, time_ms, topic_id)
        if not name:
            return None
        return modern_from_record(record, name, source, time_ms)
    except ContractError as exc:
        return UndecodableRecord(name, "contract", str(exc), None, None, source, time_ms)
