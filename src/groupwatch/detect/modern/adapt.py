"""``groupwatch decode`` output objects of modern-group records -> :class:`ModernRecord`.

The decoder prints these values as ``{"version": v, "data": {...}}`` with Kafka's field names in
snake_case and topic ids as Kafka prints them; this module is the only place that knows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from groupwatch.errors import GroupwatchError

G, R = GroupType, RecordRole
#: record type id -> (group type, role).  Types 0-2 are classic; 18 and 24 have no layout.
ROLES: dict[int, tuple[GroupType, RecordRole]] = {
    3: (G.CONSUMER, R.GROUP_EPOCH),
    4: (G.CONSUMER, R.TOPIC_NAMES),
    5: (G.CONSUMER, R.MEMBER),
    6: (G.CONSUMER, R.ASSIGNMENT_EPOCH),
    7: (G.CONSUMER, R.TARGET),
    8: (G.CONSUMER, R.CURRENT),
    9: (G.SHARE, R.TOPIC_NAMES),
    10: (G.SHARE, R.MEMBER),
    11: (G.SHARE, R.GROUP_EPOCH),
    12: (G.SHARE, R.ASSIGNMENT_EPOCH),
    13: (G.SHARE, R.TARGET),
    14: (G.SHARE, R.CURRENT),
    15: (G.SHARE, R.OTHER),
    16: (G.CONSUMER, R.REGEX),
    17: (G.STREAMS, R.GROUP_EPOCH),
    18: (G.STREAMS, R.OTHER),
    19: (G.STREAMS, R.MEMBER),
    20: (G.STREAMS, R.ASSIGNMENT_EPOCH),
    21: (G.STREAMS, R.TARGET),
    22: (G.STREAMS, R.CURRENT),
    23: (G.STREAMS, R.OTHER),
    24: (G.STREAMS, R.OTHER),
}


class ModernContractError(GroupwatchError, ValueError):
    """A decoded modern record does not have the shape the decoder promises."""


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModernContractError(f"{where} is not an object")
    return value


def _int(data: Mapping[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ModernContractError(f"{name} is not an integer")
    return value


def _opt_int(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_str(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) and value != "" else None


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModernContractError(f"{where} is not a list of strings")
    return tuple(value)


def _slots(value: Any, id_field: str, where: str) -> tuple[Slot, ...]:
    """``[{"topic_id"|"subtopology_id": t, "partitions": [..]}]`` -> ``((t, p), ...)``."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ModernContractError(f"{where} is not a list")
    out: list[Slot] = []
    for entry in value:
        entry = _map(entry, where)
        owner = entry.get(id_field)
        parts = entry.get("partitions") or []
        if not isinstance(owner, str) or not isinstance(parts, list):
            raise ModernContractError(f"{where} has an entry without {id_field} or partitions")
        for p in parts:
            if not isinstance(p, int) or isinstance(p, bool):
                raise ModernContractError(f"{where} has a non-integer partition")
            out.append((owner, p))
    return tuple(out)


def _payload(group_type: GroupType, role: RecordRole, data: Mapping[str, Any]) -> Payload | None:
    streams = group_type is GroupType.STREAMS
    ids = "subtopology_id" if streams else "topic_id"
    if role in (R.GROUP_EPOCH, R.ASSIGNMENT_EPOCH):
        return Epoch(_int(data, "epoch" if role is R.GROUP_EPOCH else "assignment_epoch"))
    if role is R.TOPIC_NAMES:
        names = []
        for topic in data.get("topics") or []:
            topic = _map(topic, "topics[]")
            tid, name = topic.get("topic_id"), topic.get("topic_name")
            if isinstance(tid, str) and isinstance(name, str):
                names.append((tid, name))
        return TopicNames(tuple(names))
    if role is R.MEMBER:
        return MemberMetadata(
            subscribed=_strs(data.get("subscribed_topic_names"), "subscribed_topic_names"),
            regex=_opt_str(data, "subscribed_topic_regex"),
            rebalance_timeout_ms=_opt_int(data, "rebalance_timeout_ms"),
            instance_id=_opt_str(data, "instance_id"),
            client_id=_opt_str(data, "client_id"),
            client_host=_opt_str(data, "client_host"),
            server_assignor=_opt_str(data, "server_assignor"),
            classic=data.get("classic_member_metadata") is not None,
            process_id=_opt_str(data, "process_id"),
        )
    if role is R.TARGET:
        if streams:
            return Target(
                _slots(data.get("active_tasks"), ids, "active_tasks"),
                _slots(data.get("standby_tasks"), ids, "standby_tasks")
                + _slots(data.get("warmup_tasks"), ids, "warmup_tasks"),
            )
        return Target(_slots(data.get("topic_partitions"), ids, "topic_partitions"))
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
                assigned=_slots(data.get("active_tasks"), ids, "active_tasks"),
                pending=_slots(
                    data.get("active_tasks_pending_revocation"), ids, "active_tasks_pending"
                ),
                standby=_slots(data.get("standby_tasks"), ids, "standby_tasks")
                + _slots(data.get("warmup_tasks"), ids, "warmup_tasks"),
                standby_pending=_slots(
                    data.get("standby_tasks_pending_revocation"), ids, "standby_tasks_pending"
                )
                + _slots(data.get("warmup_tasks_pending_revocation"), ids, "warmup_tasks_pending"),
            )
        return Current(
            epoch,
            previous,
            state,
            assigned=_slots(data.get("assigned_partitions"), ids, "assigned_partitions"),
            pending=_slots(
                data.get("partitions_pending_revocation"), ids, "partitions_pending_revocation"
            ),
        )
    if role is R.REGEX:
        return RegexTopics(_strs(data.get("topics"), "topics"))
    return None


def modern_record(
    line: Mapping[str, Any], group: str, source: Source, time_ms: int | None
) -> ModernRecord | None:
    """The modern record of a decoded line, or ``None`` if its type is not a modern one.

    Raises :class:`ModernContractError` when the line does not have the decoder's shape.
    """
    type_id = line.get("record_type_id")
    if not isinstance(type_id, int) or type_id not in ROLES:
        return None
    group_type, role = ROLES[type_id]
    key = line.get("key")
    subkey: str | None = None
    if isinstance(key, Mapping):
        subkey = key.get("regular_expression") if role is R.REGEX else key.get("member_id")
    if role in (R.MEMBER, R.TARGET, R.CURRENT, R.REGEX) and not isinstance(subkey, str):
        raise ModernContractError(f"{line.get('record_type')} key without its member or regex")
    value: Payload | None = None
    if not line.get("tombstone") and line.get("value") is not None and role is not R.OTHER:
        wrapped = _map(line.get("value"), "value")
        data = wrapped.get("data", wrapped)
        value = _payload(group_type, role, _map(data, "value"))
    return ModernRecord(group, group_type, role, subkey, value, source, time_ms)
