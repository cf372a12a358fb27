"""Modern-group records -> :class:`ModernRecord`, from the decoder's models or its JSON lines.

The decoder returns keys and values of types 3-23 as the frozen dataclasses of
:mod:`groupwatch.protocol.models`, topic ids as ``uuid.UUID``; they are read by their typed
fields (:func:`modern_from_record`, the job).  ``groupwatch decode`` prints the same values as
``{"version": v, "data": {...}}`` with ids as Kafka prints them; those are read by field name,
checked as they are read (:func:`modern_record`, ``analyze``'s decoded input).  The two readings
give the same record for the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from groupwatch.protocol import models as m
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
        # Which partitions the share coordinator has state for; names every topic id it holds.
        "ShareGroupStatePartitionMetadata": (G.SHARE, R.TOPIC_NAMES),
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


# --- the decoder's models -------------------------------------------------------------------


def _nonempty(value: str | None) -> str | None:
    return value or None


def _topic_slots(entries: tuple[m.TopicIdPartitions, ...]) -> tuple[Slot, ...]:
    return tuple((kafka_uuid(e.topic_id), p) for e in entries for p in e.partitions)


def _task_slots(*lists: tuple[m.TaskIds, ...]) -> tuple[Slot, ...]:
    return tuple((e.subtopology_id, p) for entries in lists for e in entries for p in e.partitions)


def _model_payload(value: object) -> Payload | None:
    """The engine's reading of a decoded value (``None``: one that says nothing to it)."""
    if isinstance(value, m.ConsumerGroupMetadataValue | m.ShareGroupMetadataValue):
        return Epoch(value.epoch)
    if isinstance(value, m.StreamsGroupMetadataValue):
        return Epoch(value.epoch)
    if isinstance(
        value,
        m.ConsumerGroupTargetAssignmentMetadataValue
        | m.ShareGroupTargetAssignmentMetadataValue
        | m.StreamsGroupTargetAssignmentMetadataValue,
    ):
        return Epoch(value.assignment_epoch)
    if isinstance(
        value, m.ConsumerGroupPartitionMetadataValue | m.ShareGroupPartitionMetadataValue
    ):
        return TopicNames(tuple((kafka_uuid(t.topic_id), t.topic_name) for t in value.topics))
    if isinstance(value, m.ShareGroupStatePartitionMetadataValue):
        pairs = [
            (kafka_uuid(t.topic_id), t.topic_name)
            for t in (*value.initializing_topics, *value.initialized_topics)
        ]
        pairs += [(kafka_uuid(t.topic_id), t.topic_name) for t in value.deleting_topics]
        return TopicNames(tuple(pairs))
    if isinstance(value, m.ConsumerGroupMemberMetadataValue):
        return MemberMetadata(
            subscribed=value.subscribed_topic_names,
            regex=_nonempty(value.subscribed_topic_regex),
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            instance_id=_nonempty(value.instance_id),
            client_id=_nonempty(value.client_id),
            client_host=_nonempty(value.client_host),
            server_assignor=_nonempty(value.server_assignor),
            classic=value.classic_member_metadata is not None,
        )
    if isinstance(value, m.ShareGroupMemberMetadataValue):
        return MemberMetadata(
            subscribed=value.subscribed_topic_names,
            regex=None,
            rebalance_timeout_ms=None,
            instance_id=None,
            client_id=_nonempty(value.client_id),
            client_host=_nonempty(value.client_host),
            server_assignor=None,
        )
    if isinstance(value, m.StreamsGroupMemberMetadataValue):
        # A streams member subscribes through its topology, not by topic names.
        return MemberMetadata(
            subscribed=(),
            regex=None,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            instance_id=_nonempty(value.instance_id),
            client_id=_nonempty(value.client_id),
            client_host=_nonempty(value.client_host),
            server_assignor=None,
            process_id=_nonempty(value.process_id),
        )
    if isinstance(
        value, m.ConsumerGroupTargetAssignmentMemberValue | m.ShareGroupTargetAssignmentMemberValue
    ):
        return Target(_topic_slots(value.topic_partitions))
    if isinstance(value, m.StreamsGroupTargetAssignmentMemberValue):
        return Target(
            _task_slots(value.active_tasks), _task_slots(value.standby_tasks, value.warmup_tasks)
        )
    if isinstance(value, m.ConsumerGroupCurrentMemberAssignmentValue):
        return Current(
            value.member_epoch,
            value.previous_member_epoch,
            value.state,
            assigned=_topic_slots(value.assigned_partitions),
            pending=_topic_slots(value.partitions_pending_revocation),
        )
    if isinstance(value, m.ShareGroupCurrentMemberAssignmentValue):
        return Current(
            value.member_epoch,
            value.previous_member_epoch,
            value.state,
            assigned=_topic_slots(value.assigned_partitions),
            pending=(),
        )
    if isinstance(value, m.StreamsGroupCurrentMemberAssignmentValue):
        return Current(
            value.member_epoch,
            value.previous_member_epoch,
            value.state,
            assigned=_task_slots(value.active_tasks),
            pending=_task_slots(value.active_tasks_pending_revocation),
            standby=_task_slots(value.standby_tasks, value.warmup_tasks),
            standby_pending=_task_slots(
                value.standby_tasks_pending_revocation, value.warmup_tasks_pending_revocation
            ),
        )
    if isinstance(value, m.ConsumerGroupRegularExpressionValue):
        return RegexTopics(value.topics)
    return None


def _model_subkey(key: m.RecordKey | None) -> str | None:
    """The member id (or, for a regex record, the regular expression) of a decoded key."""
    if isinstance(key, m.ConsumerGroupRegularExpressionKey):
        return key.regular_expression
    return key.member_id if isinstance(key, m.MemberKey) else None


# --- decoded JSON lines ------------------------------------------------------------------------


JSONObject = Mapping[str, Any]


def _struct(value: Any, where: str) -> JSONObject:
    if not isinstance(value, Mapping):
        raise ContractError(f"{where} is not an object")
    return value


def _get(data: JSONObject, name: str) -> Any:
    """A field of a printed struct (missing: ``None``, as an absent field prints)."""
    return data.get(name)


def _seq(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _int(data: JSONObject, name: str) -> int:
    value = _get(data, name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ContractError(f"{name} is not an integer")
    return value


def _opt_int(data: JSONObject, name: str) -> int | None:
    value = _get(data, name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(data: JSONObject, name: str) -> str | None:
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
        owner = _get(entry, id_field)
        parts = _get(entry, "partitions") or []
        if not isinstance(owner, str) or not _seq(parts):
            raise ContractError(f"{where} has an entry without {id_field} or partitions")
        for p in parts:
            if not isinstance(p, int) or isinstance(p, bool):
                raise ContractError(f"{where} has a non-integer partition")
            out.append((owner, p))
    return tuple(out)


def _json_payload(group_type: GroupType, role: RecordRole, data: JSONObject) -> Payload | None:
    streams = group_type is GroupType.STREAMS
    ids = "subtopology_id" if streams else "topic_id"
    if role in (R.GROUP_EPOCH, R.ASSIGNMENT_EPOCH):
        return Epoch(_int(data, "epoch" if role is R.GROUP_EPOCH else "assignment_epoch"))
    if role is R.TOPIC_NAMES:
        names = []
        # partition metadata (4, 9) lists "topics"; the share state's (15) its three lists
        lists = ("topics", "initializing_topics", "initialized_topics", "deleting_topics")
        for field_name in lists:
            for topic in _get(data, field_name) or []:
                topic = _struct(topic, f"{field_name}[]")
                tid, name = _get(topic, "topic_id"), _get(topic, "topic_name")
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


def _modern(
    type_id: Any,
    record_type: Any,
    subkey: str | None,
    payload: Callable[[GroupType, RecordRole], Payload | None] | None,
    group: str,
    source: Source,
    time_ms: int | None,
) -> ModernRecord | None:
    """The modern record of a type, a key's member (or regex) and a value's reading (``None``:
    a tombstone), whichever form they were read from."""
    if not isinstance(type_id, int) or type_id not in ROLES:
        return None
    group_type, role = ROLES[type_id]
    if role in (R.MEMBER, R.TARGET, R.CURRENT, R.REGEX) and subkey is None:
        raise ContractError(f"{record_type} key without its member or regex")
    value = payload(group_type, role) if payload is not None and role is not R.OTHER else None
    return ModernRecord(group, group_type, role, subkey, value, source, time_ms)


def modern_from_record(
    record: DecodedRecord, group: str, source: Source, time_ms: int | None
) -> ModernRecord | None:
    """The modern record of a decoded record, or ``None`` if its type is not a modern one.

    Raises :class:`ContractError` for a member's record whose key has no member.
    """
    value = None if record.tombstone else record.value
    return _modern(
        record.record_type_id,
        record.record_type,
        _model_subkey(record.key),
        None if value is None else lambda _t, _r: _model_payload(value),
        group,
        source,
        time_ms,
    )


def modern_record(
    line: Mapping[str, Any], group: str, source: Source, time_ms: int | None
) -> ModernRecord | None:
    """The modern record of a ``groupwatch decode`` line (values printed as ``{"version": v,
    "data": {...}}``), or ``None`` if its type is not a modern one.

    Raises :class:`ContractError` when the line does not have the decoder's shape.
    """
    type_id = line.get("record_type_id")
    data: Any = None
    if not isinstance(type_id, int) or ROLES.get(type_id, (None, R.OTHER))[1] is R.OTHER:
        pass  # not ours, or a type whose value says nothing here
    elif not line.get("tombstone") and line.get("value") is not None:
        wrapped = _struct(line.get("value"), "value")
        data = wrapped.get("data", wrapped)
    key = line.get("key")
    subkey: str | None = None
    if isinstance(key, Mapping) and isinstance(type_id, int) and type_id in ROLES:
        found = key.get("regular_expression" if ROLES[type_id][1] is R.REGEX else "member_id")
        subkey = found if isinstance(found, str) else None
    return _modern(
        type_id,
        line.get("record_type"),
        subkey,
        None if data is None else lambda t, r: _json_payload(t, r, _struct(data, "value")),
        group,
        source,
        time_ms,
    )
