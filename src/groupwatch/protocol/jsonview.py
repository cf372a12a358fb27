"""The JSON view of a decoded record: the ``groupwatch decode`` line contract.

Rules: fields a version does not have are ``null``; topic-partition lists are sorted by topic,
partitions ascending; bytes are standard Base64; uuids are printed as Kafka prints them
(URL-safe Base64 without padding).  Record types 3+ show ``{"version": V, "data": {...}}`` as
Kafka's own formatters do (one of them has a field called ``version``).  A value of a version
newer than groupwatch knows, read by the fields it knows, adds ``"newer_version": {"version":
V, "read_as": K, "unread": base64}`` to its line.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from typing import Any

from groupwatch.protocol.codec import UNKNOWN_TAGS
from groupwatch.protocol.errors import DecodeError
from groupwatch.protocol.models import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataValue,
    OffsetCommitValue,
    ShareSnapshotValue,
    ShareUpdateValue,
    TopicPartitions,
)
from groupwatch.protocol.records import DecodedRecord, GroupMember, RawValue, member_has
from groupwatch.protocol.schema import ArrayOf, StructSpec, TypeSpec
from groupwatch.protocol.specs import GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE, RECORD_TYPES
from groupwatch.protocol.user_data import (
    CooperativeStickyUserData,
    RawUserData,
    StickyUserData,
    UserData,
)

JSON = Any


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe Base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def plain(obj: Any) -> JSON:
    """Dataclasses/tuples/bytes/uuids -> JSON values (unknown tagged fields left out)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: plain(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.name != UNKNOWN_TAGS
        }
    if isinstance(obj, tuple | list):
        return [plain(v) for v in obj]
    if isinstance(obj, bytes):
        return b64(obj)
    if isinstance(obj, uuid.UUID):
        return kafka_uuid(obj)
    return obj


# Share and streams records were printed before they had models, from the decoder's field
# dicts: a struct's tagged fields first, then its body, and only the fields the struct has
# (a streams target assignment's tasks have no assignment_epochs).  The line contract keeps
# that text, so these values are printed by their spec rather than by their dataclass.
_PRINTED_BY_SPEC: frozenset[int] = frozenset(
    rt.id for rt in RECORD_TYPES.values() if rt.name.startswith(("share_group_", "streams_group_"))
)


def struct_json(s: StructSpec, version: int, obj: Any) -> JSON:
    """``obj`` (a model of ``s``) as the fields of ``s`` at ``version``: tagged fields and
    fields the version lacks first, then the body's fields in wire order."""
    body = [f for f in s.fields if version in f.versions and f.tag is None]
    rest = [f for f in s.fields if not (version in f.versions and f.tag is None)]
    return {f.name: _typed_json(f.type, version, getattr(obj, f.name)) for f in rest + body}


def _typed_json(t: TypeSpec, version: int, value: Any) -> JSON:
    if value is None:
        return None
    if isinstance(t, ArrayOf):
        return [_typed_json(t.element, version, v) for v in value]
    if isinstance(t, StructSpec):
        return struct_json(t, version, value)
    return plain(value)


def error_json(e: DecodeError | None) -> JSON:
    if e is None:
        return None
    return {
        "kind": e.kind,
        "field_path": e.field_path,
        "byte_offset": e.byte_offset,
        "message": e.message,
    }


def topic_partitions_json(tps: tuple[TopicPartitions, ...]) -> JSON:
    return [
        {"topic": tp.topic, "partitions": sorted(tp.partitions)}
        for tp in sorted(tps, key=lambda tp: tp.topic)
    ]


def user_data_json(ud: UserData | None) -> JSON:
    if ud is None:
        return None
    if isinstance(ud, StickyUserData):
        return {
            "kind": "sticky",
            "version": ud.version,
            "previous_assignment": topic_partitions_json(ud.previous_assignment),
            "generation": ud.generation,
        }
    if isinstance(ud, CooperativeStickyUserData):
        return {"kind": "cooperative-sticky", "generation": ud.generation}
    out: dict[str, JSON] = {"kind": "raw", "base64": b64(ud.data)}
    if isinstance(ud, RawUserData) and ud.recognised_as is not None:
        out["recognised_as"] = ud.recognised_as
        out["format_version"] = ud.format_version
    return out


def subscription_json(s: ConsumerProtocolSubscription, ud: UserData | None) -> JSON:
    v = min(s.version, 3)
    return {
        "version": s.version,
        "topics": sorted(s.topics),
        "owned_partitions": topic_partitions_json(s.owned_partitions) if v >= 1 else None,
        # Kafka's Subscription: a negative generation means "none"
        "generation_id": s.generation_id if v >= 2 and s.generation_id >= 0 else None,
        "rack_id": s.rack_id,
        "user_data": user_data_json(ud),
        "newer_version": s.newer_version,
    }


def assignment_json(a: ConsumerProtocolAssignment, ud: UserData | None) -> JSON:
    return {
        "version": a.version,
        "assigned_partitions": topic_partitions_json(a.assigned_partitions),
        "user_data": user_data_json(ud),
        "newer_version": a.newer_version,
    }


def _member_json(version: int, gm: GroupMember, consumer: bool) -> JSON:
    m = gm.metadata

    def embedded(decoded: JSON | None, raw: bytes, err: DecodeError | None) -> JSON:
        if decoded is not None or err is not None or (consumer and not raw):
            return decoded
        return {"kind": "raw", "base64": b64(raw)}

    sub = subscription_json(gm.subscription, gm.subscription_user_data) if gm.subscription else None
    asg = assignment_json(gm.assignment, gm.assignment_user_data) if gm.assignment else None
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout": m.rebalance_timeout
        if member_has("rebalance_timeout", version)
        else None,
        "session_timeout": m.session_timeout,
        "subscription": embedded(sub, m.subscription, gm.subscription_error),
        "assignment": embedded(asg, m.assignment, gm.assignment_error),
        "subscription_error": error_json(gm.subscription_error),
        "assignment_error": error_json(gm.assignment_error),
    }


def value_json(rec: DecodedRecord) -> JSON:
    v, version = rec.value, rec.value_version
    if v is None or version is None:
        return None
    if isinstance(v, OffsetCommitValue):
        out: dict[str, JSON] = {"version": version}
        for name in (
            "offset",
            "leader_epoch",
            "metadata",
            "commit_timestamp",
            "expire_timestamp",
            "topic_id",
        ):
            present = OFFSET_COMMIT_VALUE.present(name, version)
            out[name] = plain(getattr(v, name)) if present else None
        return out
    if isinstance(v, GroupMetadataValue):
        consumer = v.protocol_type == "consumer"
        members = rec.members or tuple(GroupMember(m) for m in v.members)
        return {
            "version": version,
            "protocol_type": v.protocol_type,
            "generation": v.generation,
            "protocol": v.protocol,
            "leader": v.leader,
            "current_state_timestamp": v.current_state_timestamp
            if GROUP_METADATA_VALUE.present("current_state_timestamp", version)
            else None,
            "members": [_member_json(version, gm, consumer) for gm in members],
        }
    if isinstance(v, RawValue):
        return {"version": version, "base64": b64(v.data)}
    if isinstance(v, ShareSnapshotValue | ShareUpdateValue):
        # __share_group_state's ids collide with __consumer_offsets' (0, 1): never look them up.
        return {"version": version, "data": plain(v)}
    spec = RECORD_TYPES[rec.record_type_id].value if rec.record_type_id is not None else None
    if spec is not None and rec.record_type_id in _PRINTED_BY_SPEC:
        return {"version": version, "data": struct_json(spec.struct, version, v)}
    return {"version": version, "data": plain(v)}


def to_json_dict(rec: DecodedRecord) -> dict[str, JSON]:
    """The CLI's output object for one record (see the module docstring for the rules)."""
    out: dict[str, JSON] = {}
    if rec.topic is not None:
        out["topic"] = rec.topic
    out.update(
        {
            "partition": rec.partition,
            "offset": rec.offset,
            "timestamp": rec.timestamp,
            "record_type": rec.record_type,
            "record_type_id": rec.record_type_id,
            "group": rec.group,
            "tombstone": rec.tombstone,
            "key": plain(rec.key),
            "value": value_json(rec),
            "error": error_json(rec.error),
        }
    )
    if rec.newer is not None:
        # Only on a value newer than groupwatch knows, so every other line stays as it was.
        out["newer_version"] = {
            "version": rec.newer.version,
            "read_as": rec.newer.read_as,
            "unread": b64(rec.newer.unread),
        }
    return out
