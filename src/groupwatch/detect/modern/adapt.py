"""Modern-group records -> :class:`ModernRecord`, from either form the decoder gives them.

The decoder returns keys and values of types 3-24 as frozen dataclasses (consumer groups) or
dicts (streams and share groups), with Kafka's field names in snake_case and topic ids as
``uuid.UUID``; ``groupwatch decode`` prints them as ``{"version": v, "data": {...}}`` with ids
as Kafka prints them.  Both are read here by field name (:func:`_get`), so the one reading of
each record type serves the job (:func:`modern_from_record`) and decoded JSON input
(:func:`modern_record`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from groupwatch.detect.errors import ContractError
from groupwatch.detect.findings import Source
from groupwatch.detect.modern.model import (
    Current,
    Epoch,
    GroupType,
    MemberMetadata,
    ModernRecord,
    Payload,
    RecordRole,
    RegexTopics,
    Slot,
    Target,
    TopicNames,
)
from groupwatch.protocol.jsonview import kafka_uuid
from groupwatch.protocol.specs import RECORD_TYPE_IDS

if TYPE_CHECKING:
    from groupwatch.protocol import DecodedRecord

G, R = GroupType, RecordRole
#: record type id -> (group type, role); written by Kafka's names so the ids are the protocol
#: table's.  The classic types (0-2) have none; 18 and 24 have no layout.
ROLES: dict[int, tuple[GroupType, RecordRole]] = {
    RECORD_TYPE_IDS[name]: role
    for name, role in {
        "ConsumerGroupMetadata": (G.CONSUMER, R.GROUP_EPOCH),
        "ConsumerGroupPartitionMetadata": (G.CONSUMER, R.TOPIC_NAMES),
        "ConsumerGroupMemberMetadata": (G.CONSUMER, R.MEMBER),
        "ConsumerGroupTargetAssignmentMetadata": (G.CONSUMER, R.ASSIGNMENT_EPOCH),
        "ConsumerGroupTargetAssignmentMember": (G.CONSUMER, R.TARGET),
        "ConsumerGroupCurrentMemberAssignment": (G.CONSUMER, R.CURRENT),
        "ShareGroupPartitionMetadata": (G.SHARE, R.TOPIC_NAMES),
        "ShareGroupMemberMetadata": (G.SHARE, R.MEMBER),
        "ShareGroupMetadata": (G.SHARE, R.GROUP_EPOCH),
        "ShareGroupTargetAssignmentMetadata": (G.SHARE, R.ASSIGNMENT_EPOCH),
        "ShareGroupTargetAssignmentMember": (G.SHARE, R.TARGET),
        "ShareGroupCurrentMemberAssignment": (G.SHARE, R.CURRENT),
        "ShareGroupStatePartitionMetadata": (G.SHARE, R.OTHER),
        "ConsumerGroupRegularExpression": (G.CONSUMER, R.REGEX),
        "StreamsGroupMetadata": (G.STREAMS, R.GROUP_EPOCH),
        "StreamsGroupPartitionMetadata": (G.STREAMS, R.OTHER),
        "StreamsGroupMemberMetadata": (G.STREAMS, R.MEMBER),
        "StreamsGroupTargetAssignmentMetadata": (G.STREAMS, R.ASSIGNMENT_EPOCH),
        "StreamsGroupTargetAssignmentMember": (G.STREAMS, R.TARGET),
        "StreamsGroupCurrentMemberAssignment": (G.STREAMS, R.CURRENT),
        "StreamsGroupTopology": (G.STREAMS, R.OTHER),
        "StreamsGroupTargetAssignmentResolvedTopicIds": (G.STREAMS, R.OTHER),
    }.items()
}


def _is_struct(value: Any) -> bool:
    return isinstance(value, Mapping) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def _struct(value: Any, where: str) -> Any:
    if not _is_struct(value):
        raise ContractError(f"{where} is not an object")
    return value


def _get(data: Any, name: str) -> Any:
    """A field of a decoded struct: a dict (JSON, or a type decoded generically) or a typed
    dataclass."""
    if isinstance(data, Mapping):
        return data.get(name)
    return getattr(data, name, None)


def _seq(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _id(value: Any) -> Any:
    """A topic id as Kafka prints it (the JSON form already is)."""
    return kafka_uuid(value) if isinstance(value, uuid.UUID) else value


def _int(data: Any, name: str) -> int:
    value = _get(data, name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ContractError(f"{name} is not an integer")
    return value


def _opt_int(data: Any, name: str) -> int | None:
    value = _get(data, name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(data: Any, name: str) -> str | None:
    value = _get(data, name)
    return value if isinstance(value, str) and value != "" else None


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not _seq(value) or not all(isinstance(v, str) for v in value):
        raise ContractError(f"{where} is not a list of strings")
    return tuple(value)


def _slots(value: Any, id_field: str, where: str) -> tuple[Slot, ...]:
    """``[{"topic_id"|"subtopology_id": t, "partitions": [..]}]`` -> ``((t, p), ...)``."""
    if value is None:
        return ()
    if not _seq(value):
        raise ContractError(f"{where} is not a list")
    out: list[Slot] = []
    for entry in value:
        entry = _struct(entry, where)
        owner = _id(_get(entry, id_field))
        parts = _get(entry, "partitions") or []
        if not isinstance(owner, str) or not _seq(parts):
            raise ContractError(f"{where} has an entry without {id_field} or partitions")
        for p in parts:
            if not isinstance(p, int) or isinstance(p, bool):
                raise ContractError(f"{where} has a non-integer partition")
            out.append((owner, p))
    return tuple(out)


def _payload(group_type: GroupType, role: RecordRole, data: Any) -> Payload | None:
    streams = group_type is GroupType.STREAMS
    ids = "subtopology_id" if streams else "topic_id"
    if role in (R.GROUP_EPOCH, R.ASSIGNMENT_EPOCH):
        return Epoch(_int(data, "epoch" if role is R.GROUP_EPOCH else "assignment_epoch"))
    if role is R.TOPIC_NAMES:
        names = []
        for topic in _get(data, "topics") or []:
            topic = _struct(topic, "topics[]")
            tid, name = _id(_get(topic, "topic_id")), _get(topic, "topic_name")
            if isinstance(tid, str) and isinstance(name, str):
                names.append((tid, name))
        return TopicNames(tuple(names))
    if role is R.MEMBER:
        return MemberMetadata(
            subscribed=_strs(_get(data, "subscribed_topic_names"), "subscribed_topic_names"),
            regex=_opt_str(data, "subscribed_topic_regex"),
            rebalance_timeout_ms=_opt_int(data, "rebalance_timeout_ms"),
            instance_id=_opt_str(data, "instance_id"),
            client_id=_opt_str(data, "client_id"),
            client_host=_opt_str(data, "client_host"),
            server_assignor=_opt_str(data, "server_assignor"),
            classic=_get(data, "classic_member_metadata") is not None,
            process_id=_opt_str(data, "process_id"),
        )
    if role is R.TARGET:
        if streams:
            return Target(
                _slots(_get(data, "active_tasks"), ids, "active_tasks"),
                _slots(_get(data, "standby_tasks"), ids, "standby_tasks")
                + _slots(_get(data, "warmup_tasks"), ids, "warmup_tasks"),
            )
        return Target(_slots(_get(data, "topic_partitions"), ids, "topic_partitions"))
    if role is R.CURRENT:
        epoch, previous, state = (
            _int(data, "member_epoch"),
            _int(data, "previous_member_epoch"),
            _int(data, "state"),
        )
        if streams:
            return Current(
                epoch,
                previous,
                state,
                assigned=_slots(_get(data, "active_tasks"), ids, "active_tasks"),
                pending=_slots(
                    _get(data, "active_tasks_pending_revocation"), ids, "active_tasks_pending"
                ),
                standby=_slots(_get(data, "standby_tasks"), ids, "standby_tasks")
                + _slots(_get(data, "warmup_tasks"), ids, "warmup_tasks"),
                standby_pending=_slots(
                    _get(data, "standby_tasks_pending_revocation"), ids, "standby_tasks_pending"
                )
                + _slots(
                    _get(data, "warmup_tasks_pending_revocation"), ids, "warmup_tasks_pending"
                ),
            )
        return Current(
            epoch,
            previous,
            state,
            assigned=_slots(_get(data, "assigned_partitions"), ids, "assigned_partitions"),
            pending=_slots(
                _get(data, "partitions_pending_revocation"), ids, "partitions_pending_revocation"
            ),
        )
    if role is R.REGEX:
        return RegexTopics(_strs(_get(data, "topics"), "topics"))
    return None


def _record(
    type_id: Any,
    record_type: Any,
    key: Any,
    data: Any,
    group: str,
    source: Source,
    time_ms: int | None,
) -> ModernRecord | None:
    """The modern record of a key and a value (``None``: a tombstone), whichever form."""
    if not isinstance(type_id, int) or type_id not in ROLES:
        return None
    group_type, role = ROLES[type_id]
    subkey: str | None = None
    if _is_struct(key):
        subkey = _get(key, "regular_expression" if role is R.REGEX else "member_id")
    if role in (R.MEMBER, R.TARGET, R.CURRENT, R.REGEX) and not isinstance(subkey, str):
        raise ContractError(f"{record_type} key without its member or regex")
    value: Payload | None = None
    if data is not None and role is not R.OTHER:
        value = _payload(group_type, role, _struct(data, "value"))
    return ModernRecord(group, group_type, role, subkey, value, source, time_ms)


def modern_from_record(
    record: DecodedRecord, group: str, source: Source, time_ms: int | None
) -> ModernRecord | None:
    """The modern record of a decoded record, or ``None`` if its type is not a modern one.

    Raises :class:`ContractError` when a field does not have the type Kafka gives it.
    """
    data = None if record.tombstone else record.value
    return _record(
        record.record_type_id, record.record_type, record.key, data, group, source, time_ms
    )


def modern_record(
    line: Mapping[str, Any], group: str, source: Source, time_ms: int | None
) -> ModernRecord | None:
    """The modern record of a ``groupwatch decode`` line (values printed as ``{"version": v,
    "data": {...}}``), or ``None`` if its type is not a modern one.

    Raises :class:`ContractError` when the line does not have the decoder's shape.
    """
    type_id = line.get("record_type_id")
    if not isinstance(type_id, int) or ROLES.get(type_id, (None, R.OTHER))[1] is R.OTHER:
        data = None  # not ours, or a type whose value says nothing here
    elif not line.get("tombstone") and line.get("value") is not None:
        wrapped = _struct(line.get("value"), "value")
        data = wrapped.get("data", wrapped) if isinstance(wrapped, Mapping) else wrapped
    else:
        data = None
    return _record(type_id, line.get("record_type"), line.get("key"), data, group, source, time_ms)
