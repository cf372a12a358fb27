"""The engine's reading of ``groupwatch decode`` JSON lines: ``analyze``'s decoded input.

Input is one object per record exactly as ``groupwatch decode`` prints it (issue 3's
command-line contract); output is an :data:`~groupwatch.detect.model.Event` or ``None`` for
records the engine has no use for (newer record types, offset-commit tombstones, non-consumer
records other than group metadata).  Everything else -- the job, raw records given to
``analyze`` -- takes the typed path (:mod:`groupwatch.detect.events`); the two share the claim
rule (:func:`~groupwatch.detect.events.member_state`).  Every field is validated here, since a
line may come from anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect.errors import ContractError
from groupwatch.detect.events import DEFAULT_TOPIC, error_line, member_state
from groupwatch.detect.findings import Source
from groupwatch.detect.model import (
    Event,
    GroupSnapshot,
    MemberState,
    OffsetCommit,
    Tombstone,
    UndecodableRecord,
)
from groupwatch.detect.modern.adapt import modern_record

if TYPE_CHECKING:
    from groupwatch.protocol import DecodedRecord

__all__ = [
    "ContractError",
    "decode_raw",
    "event_from_decoded",
    "is_raw",
    "member_from_contract",
    "record_from_raw",
    "source_of",
]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _is_map(value: Any) -> bool:
    # Decoded lines are plain dicts; the ABC check behind isinstance(.., Mapping) is the
    # slow path, kept for other mappings.
    return type(value) is dict or isinstance(value, Mapping)


def _is_int_list(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    for p in value:
        if type(p) is not int and _int_or_none(p) is None:
            return False
    return True


def _tps(value: Any, where: str) -> tuple[TopicPartition, ...]:
    """``[{"topic": t, "partitions": [..]}]`` -> ``((t, p), ...)`` in wire order."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ContractError(f"{where} is not a list of topic partitions")
    out: list[TopicPartition] = []
    for entry in value:
        topic = entry.get("topic") if _is_map(entry) else None
        if not isinstance(topic, str):
            raise ContractError(f"{where} has an entry without a topic")
        parts = entry.get("partitions") or []
        if not _is_int_list(parts):
            raise ContractError(f"{where} has non-integer partitions")
        out.extend([TopicPartition(topic, p) for p in parts])
    return tuple(out)


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, Mapping):
        return error_line(
            error.get("kind") or "error", error.get("field_path"), error.get("message") or ""
        )
    return str(error)


def source_of(line: Mapping[str, Any]) -> Source:
    """The record's position, as far as the line tells it."""
    return Source(
        topic=_str_or_none(line.get("topic")) or DEFAULT_TOPIC,
        partition=_int_or_none(line.get("partition")),
        offset=_int_or_none(line.get("offset")),
        timestamp=_int_or_none(line.get("timestamp")),
    )


def member_from_contract(m: Mapping[str, Any], protocol: str | None) -> MemberState:
    """One ``value.members[i]`` object -> :class:`MemberState` (partitions as printed:
    sorted), with its claim computed by :func:`~groupwatch.detect.events.member_state`."""
    member_id = m.get("member_id")
    if not isinstance(member_id, str):
        raise ContractError("a member has no member_id")
    sub = m.get("subscription")
    sub = sub if _is_map(sub) else None
    asg = m.get("assignment")
    asg = asg if _is_map(asg) else None
    topics: tuple[str, ...] = ()
    owned: tuple[TopicPartition, ...] = ()
    sub_generation: int | None = None
    version: int | None = None
    rack: str | None = None
    ud_kind: str | None = None
    ud_generation: int | None = None
    ud_previous: tuple[TopicPartition, ...] | None = None
    if sub is not None:
        version = _int_or_none(sub.get("version"))
        raw_topics = sub.get("topics") or []
        if not isinstance(raw_topics, list) or not all(isinstance(t, str) for t in raw_topics):
            raise ContractError(f"member {member_id}: subscription topics are not strings")
        topics = tuple(raw_topics)
        owned = _tps(sub.get("owned_partitions"), f"member {member_id} owned_partitions")
        gen = _int_or_none(sub.get("generation_id"))
        sub_generation = gen if gen is not None and gen >= 0 else None
        rack = _str_or_none(sub.get("rack_id"))
        ud = sub.get("user_data")
        if _is_map(ud):
            ud_kind = _str_or_none(ud.get("kind")) or "raw"
            if ud_kind in ("sticky", "cooperative-sticky"):
                ud_generation = _int_or_none(ud.get("generation"))
            if ud_kind == "sticky":
                ud_previous = _tps(
                    ud.get("previous_assignment"), f"member {member_id} sticky user data"
                )
    assigned: tuple[TopicPartition, ...] = ()
    if asg is not None:
        assigned = _tps(asg.get("assigned_partitions"), f"member {member_id} assignment")
    return member_state(
        member_id=member_id,
        group_instance_id=_str_or_none(m.get("group_instance_id")),
        client_id=_str_or_none(m.get("client_id")),
        client_host=_str_or_none(m.get("client_host")),
        protocol=protocol,
        subscription_version=version,
        topics=topics,
        owned=owned,
        subscription_generation=sub_generation,
        rack_id=rack,
        user_data_kind=ud_kind,
        user_data_generation=ud_generation,
        user_data_previous=ud_previous,
        assigned=assigned,
        subscription_error=_error_text(m.get("subscription_error")),
        assignment_error=_error_text(m.get("assignment_error")),
    )


def snapshot_from_value(
    group: str,
    value: Mapping[str, Any],
    source: Source,
    time_ms: int | None = None,
    members: Sequence[MemberState] | None = None,
) -> GroupSnapshot:
    """The ``value`` object of a decoded group-metadata record -> :class:`GroupSnapshot`.

    ``members``: the value's members already converted with :func:`member_from_contract`, by a
    caller that needed them too (the streaming job's rows), so they are not converted twice.
    """
    generation = _int_or_none(value.get("generation"))
    if generation is None:
        raise ContractError("group metadata value without a generation")
    protocol = _str_or_none(value.get("protocol"))
    members_raw = value.get("members") or []
    if not isinstance(members_raw, list):
        raise ContractError("members is not a list")
    if members is not None and len(members) == len(members_raw):
        converted = tuple(members)
    else:
        converted = tuple(member_from_contract(m, protocol) for m in members_raw)
    if time_ms is None:
        time_ms = source.timestamp
    if time_ms is None:
        time_ms = _int_or_none(value.get("current_state_timestamp"))
        if time_ms is not None and time_ms < 0:
            time_ms = None
    return GroupSnapshot(
        group=group,
        generation=generation,
        protocol_type=_str_or_none(value.get("protocol_type")) or "",
        protocol=protocol,
        leader=_str_or_none(value.get("leader")),
        record_version=_int_or_none(value.get("version")),
        members=converted,
        source=source,
        time_ms=time_ms,
        awaiting_assignment=bool(members_raw)
        and all(
            isinstance(m, Mapping)
            and m.get("assignment") is None
            and m.get("assignment_error") is None
            for m in members_raw
        ),
    )


def event_from_decoded(
    line: Mapping[str, Any], members: Sequence[MemberState] | None = None
) -> Event | None:
    """One ``groupwatch decode`` output object -> the engine's event (or ``None``: not ours).

    A line that does not follow the contract becomes an :class:`UndecodableRecord` rather than
    an exception, so bad input never stops the engine. ``members``: see
    :func:`snapshot_from_value`.
    """
    source = source_of(line)
    time_ms = source.timestamp
    group = _str_or_none(line.get("group")) or ""
    error = line.get("error")
    if error is not None:
        err = error if isinstance(error, Mapping) else {"kind": "error", "message": str(error)}
        return UndecodableRecord(
            group=group,
            error_kind=str(err.get("kind") or "error"),
            message=str(err.get("message") or ""),
            field_path=_str_or_none(err.get("field_path")),
            byte_offset=_int_or_none(err.get("byte_offset")),
            source=source,
            time_ms=time_ms,
        )
    record_type = line.get("record_type")
    try:
        if record_type == "group_metadata":
            if not group:
                raise ContractError("group metadata record without a group")
            value = line.get("value")
            if line.get("tombstone") or value is None:
                return Tombstone(group, source, time_ms)
            if not isinstance(value, Mapping):
                raise ContractError("value is not an object")
            return snapshot_from_value(group, value, source, members=members)
        if record_type == "offset_commit":
            if line.get("tombstone") or line.get("value") is None:
                return None
            key = line.get("key")
            if not isinstance(key, Mapping):
                raise ContractError("offset commit without a decoded key")
            topic = _str_or_none(key.get("topic"))
            partition = _int_or_none(key.get("partition"))
            if not group or topic is None or partition is None or partition < 0:
                raise ContractError("offset commit key without group, topic or partition")
            value = line.get("value")
            topic_id = value.get("topic_id") if isinstance(value, Mapping) else None
            return OffsetCommit(
                group,
                topic,
                partition,
                source,
                time_ms,
                topic_id if isinstance(topic_id, str) else None,
            )
        if not group:
            return None
        return modern_record(line, group, source, time_ms)
    except ContractError as exc:
        return UndecodableRecord(group, "contract", str(exc), None, None, source, time_ms)


def record_from_raw(line: Mapping[str, Any]) -> DecodedRecord:
    """A raw record (``{"key": <base64>, "value": <base64> | null, ...}``, the decoder's input)
    -> the decoder's typed record, with the line's position and time.

    The one call into the decoder; imported here, not at the top, so the engine loads the
    decoder only once a raw record actually arrives.
    """
    import base64

    from groupwatch.protocol import decode_record

    key = base64.b64decode(str(line["key"]))
    value = None if line.get("value") is None else base64.b64decode(str(line["value"]))
    topic = line.get("topic")
    return decode_record(
        key,
        value,
        topic=topic if isinstance(topic, str) else None,
        partition=_int_or_none(line.get("partition")),
        offset=_int_or_none(line.get("offset")),
        timestamp=_int_or_none(line.get("timestamp")),
    )


def decode_raw(line: Mapping[str, Any]) -> dict[str, Any]:
    """A raw record -> its ``groupwatch decode`` output object."""
    from groupwatch.protocol import to_json_dict

    return dict(to_json_dict(record_from_raw(line)))


def is_raw(line: Mapping[str, Any]) -> bool:
    """Whether ``line`` is a raw record (``groupwatch decode`` input) rather than its output."""
    return "record_type" not in line and "key" in line and not isinstance(line["key"], Mapping)
