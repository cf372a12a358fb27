"""Coordinator records: key/value framing, dispatch by record type, tombstones, and the embedded
consumer protocol of classic-group members.

Framing (``CoordinatorRecordSerde``): ``key = int16 record_type + key struct (version 0)``,
``value = null (tombstone) | int16 version + value struct``.  Both coordinator topics frame their
records this way, each with its own record types: ``__consumer_offsets`` (the group coordinator's)
and ``__share_group_state`` (the share coordinator's); the record's topic picks the table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from groupwatch.protocol import _wire as w
from groupwatch.protocol.codec import decode_body, decode_prefix, encode_body
from groupwatch.protocol.consumer_protocol import decode_assignment, decode_subscription
from groupwatch.protocol.errors import DecodeError, EncodeError
from groupwatch.protocol.models import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    RecordKey,
    RecordValue,
)
from groupwatch.protocol.specs import (
    MEMBER_METADATA,
    RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
    RecordType,
    record_types_of,
)
from groupwatch.protocol.user_data import UserData, decode_user_data

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True)
class RawValue:
    """The value of a record type we know by name only (its layout is not released)."""

    version: int | None
    data: bytes


@dataclass(frozen=True)
class NewerVersion:
    """A value written at a version newer than the schema tables know (a newer Kafka), read by
    the fields groupwatch knows: those of ``read_as``, the newest version it knows.

    Kafka's rule for a new version is that it adds fields (or drops some); an older reader of
    Kafka's own refuses it. groupwatch reads what it can instead: the whole value as ``read_as``
    when the bytes are exactly that layout (a version that only added tagged fields, or changed
    meaning alone), else the regular fields of ``read_as`` as a prefix, with the rest of the
    bytes (the new fields, and the tagged section after them) in ``unread``."""

    version: int
    read_as: int
    unread: bytes = b""


@dataclass(frozen=True)
class GroupMember:
    """A classic-group member with its embedded protocol decoded.

    For ``protocol_type == "consumer"`` the subscription/assignment are decoded; bytes that do not
    decode leave ``None`` plus the error next to it, and the rest of the record is unaffected.
    Empty bytes (a member not yet assigned) decode to ``None`` without error.  For other protocol
    types (``connect``, ...) both stay ``None``; the raw bytes are in ``metadata``.
    """

    metadata: MemberMetadata
    subscription: ConsumerProtocolSubscription | None = None
    assignment: ConsumerProtocolAssignment | None = None
    subscription_user_data: UserData | None = None
    assignment_user_data: UserData | None = None
    subscription_error: DecodeError | None = None
    assignment_error: DecodeError | None = None

    @property
    def member_id(self) -> str:
        return self.metadata.member_id


@dataclass(frozen=True)
class DecodedRecord:
    """One decoded coordinator record.  ``error`` is set when something failed; what
    decoded before the failure (the key, say) is kept."""

    record_type_id: int | None
    record_type: str  # RecordType.name, or "unknown"
    key: RecordKey | None = None  # None: a type known by name only, or a key that failed
    value: RecordValue | RawValue | None = None  # None: a tombstone, or a failure
    value_version: int | None = None
    tombstone: bool = False
    members: tuple[GroupMember, ...] = ()  # group_metadata records only
    error: DecodeError | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None
    #: Set when the value's version is newer than groupwatch knows: ``value`` then holds the
    #: fields known (``value_version`` stays the version written).
    newer: NewerVersion | None = None

    @property
    def group(self) -> str | None:
        k = self.key
        if k is None:
            return None
        # The two oldest keys call it group, as Kafka's OffsetCommitKey and GroupMetadataKey do.
        return k.group if isinstance(k, OffsetCommitKey | GroupMetadataKey) else k.group_id


@functools.cache
def member_has(field_name: str, version: int) -> bool:
    """Whether a ``GroupMetadataValue`` of ``version`` has ``field_name`` in its members
    (``rebalance_timeout`` came in v1, ``group_instance_id`` in v3): an absent field holds
    Kafka's default, which says nothing."""
    return any(f.name == field_name and version in f.versions for f in MEMBER_METADATA.fields)


def record_type(type_id: int, types: dict[int, RecordType] = RECORD_TYPES) -> RecordType:
    rt = types.get(type_id)
    if rt is None:
        raise DecodeError(
            "unknown_record_type", f"record type {type_id} is not known", byte_offset=0
        )
    return rt


def decode_key(
    data: bytes, types: dict[int, RecordType] = RECORD_TYPES
) -> tuple[RecordType, RecordKey | None]:
    """(record type, key) of key bytes; the key is ``None`` for types known by name only."""
    type_id, pos = w.read_int16(data, 0)
    rt = record_type(type_id, types)
    if rt.key is None:
        return rt, None
    key, end = decode_body(rt.key, 0, data, pos)
    _no_trailing(data, end)
    return rt, key


def decode_value(rt: RecordType, data: bytes) -> tuple[int, RecordValue | RawValue]:
    """(version, value) of non-null value bytes of record type ``rt``."""
    version, pos = w.read_int16(data, 0)
    if rt.value is None:
        return version, RawValue(version, data)
    value, end = decode_body(rt.value, version, data, pos)
    _no_trailing(data, end)
    return version, value


def decode_newer_value(rt: RecordType, data: bytes) -> tuple[RecordValue, NewerVersion] | None:
    """The known fields of a value whose version is newer than ``rt``'s newest (see
    :class:`NewerVersion`); ``None`` when the version is not newer, or when even the known
    fields do not read (the record is then an ``unsupported_version`` error as before)."""
    spec = rt.value
    if spec is None or spec.valid.hi is None or len(data) < 2:
        return None
    version, pos = w.read_int16(data, 0)
    known = spec.valid.hi
    if version <= known:
        return None
    try:
        value, end = decode_body(spec, known, data, pos)
        if end == len(data):
            return value, NewerVersion(version, known)
    except DecodeError:
        pass
    try:
        value, end = decode_prefix(spec, known, data, pos)
    except DecodeError:
        return None
    return value, NewerVersion(version, known, data[end:])


def _no_trailing(data: bytes, end: int) -> None:
    # Stricter than Kafka (whose generated readers stop early): no writer leaves bytes behind,
    # so leftovers mean the bytes are not what the type says they are.
    if end != len(data):
        raise DecodeError(
            "trailing_bytes",
            f"{len(data) - end} bytes after the end of the record",
            byte_offset=end,
        )


def decode_members(value: GroupMetadataValue) -> tuple[GroupMember, ...]:
    """Decode every member's embedded subscription/assignment, keeping errors per member."""
    if value.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return tuple(GroupMember(m) for m in value.members)
    return tuple(_decode_member(i, m, value.protocol) for i, m in enumerate(value.members))


def _decode_member(index: int, m: MemberMetadata, protocol: str | None) -> GroupMember:
    sub = asg = None
    sub_ud = asg_ud = None
    sub_err = asg_err = None
    if m.subscription:
        try:
            sub = decode_subscription(m.subscription)
            sub_ud = decode_user_data(protocol, sub.user_data)
        except DecodeError as e:
            e.prefix_path("subscription")
            e.prefix_path(f"members[{index}]")
            sub_err = e
    if m.assignment:
        try:
            asg = decode_assignment(m.assignment)
            asg_ud = decode_user_data(protocol, asg.user_data, assignment=True)
        except DecodeError as e:
            e.prefix_path("assignment")
            e.prefix_path(f"members[{index}]")
            asg_err = e
    return GroupMember(m, sub, asg, sub_ud, asg_ud, sub_err, asg_err)


def decode_record(
    key: bytes | None,
    value: bytes | None,
    *,
    topic: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
    timestamp: int | None = None,
    types: dict[int, RecordType] | None = None,
) -> DecodedRecord:
    """Decode one record.  Never raises: any failure is in ``DecodedRecord.error``.

    ``types`` is the record-type table; by default the one of ``topic`` (``__share_group_state``
    has its own, every other topic is read as ``__consumer_offsets``)."""
    table = record_types_of(topic) if types is None else types
    where: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp": timestamp,
    }
    try:
        return _decode_record(key, value, where, table)
    except DecodeError as e:  # pragma: no cover - _decode_record catches its own
        return DecodedRecord(None, "unknown", error=e, **where)
    except Exception as exc:  # noqa: BLE001 - the streaming job must never die on one record
        err = DecodeError("internal_error", f"decoder bug: {exc!r}")
        err.__cause__ = exc
        return DecodedRecord(None, "unknown", error=err, **where)


def _decode_record(
    key: bytes | None, value: bytes | None, where: dict[str, Any], types: dict[int, RecordType]
) -> DecodedRecord:
    if key is None:
        return DecodedRecord(
            None,
            "unknown",
            error=DecodeError("missing_key", "record has no key"),
            tombstone=value is None,
            **where,
        )
    type_id = int.from_bytes(key[:2], "big", signed=True) if len(key) >= 2 else None
    rt = types.get(type_id) if type_id is not None else None
    name = rt.name if rt is not None else "unknown"
    try:
        rt, k = decode_key(key, types)
    except DecodeError as e:
        e.prefix_path("key")
        return DecodedRecord(type_id, name, error=e, tombstone=value is None, **where)
    if value is None:
        return DecodedRecord(rt.id, rt.name, k, tombstone=True, **where)
    version = int.from_bytes(value[:2], "big", signed=True) if len(value) >= 2 else None
    newer = None
    try:
        version, v = decode_value(rt, value)
    except DecodeError as e:
        read = decode_newer_value(rt, value) if e.kind == "unsupported_version" else None
        if read is None:
            return DecodedRecord(rt.id, rt.name, k, value_version=version, error=e, **where)
        v, newer = read
        version = newer.version
    members = decode_members(v) if isinstance(v, GroupMetadataValue) else ()
    return DecodedRecord(rt.id, rt.name, k, v, version, False, members, newer=newer, **where)


# --- encoding -----------------------------------------------------------------------------------


def _table_of(obj: object, side: str) -> dict[int, RecordType]:
    # A model class belongs to one topic's table, so the object says which ids it means.
    for rt in SHARE_STATE_RECORD_TYPES.values():
        spec = rt.key if side == "key" else rt.value
        if spec is not None and spec.struct.cls is type(obj):
            return SHARE_STATE_RECORD_TYPES
    return RECORD_TYPES


def _type_of(obj: object, record_type_id: int | None, side: str) -> RecordType:
    types = _table_of(obj, side)
    if record_type_id is not None:
        return record_type(record_type_id, types)
    matches = [
        rt
        for rt in types.values()
        if (spec := rt.key if side == "key" else rt.value) is not None
        and spec.struct.cls is type(obj)
    ]
    if not matches:
        raise EncodeError(f"no record type for {type(obj).__name__}; pass record_type_id")
    return matches[-1]  # OffsetCommitKey -> type 1, what every broker since 0.9 writes


def encode_key(key: RecordKey, record_type_id: int | None = None) -> bytes:
    """Key bytes: int16 record type + key struct.  The type follows from the key's class
    (``OffsetCommitKey`` -> 1); pass ``record_type_id`` for 0."""
    rt = _type_of(key, record_type_id, "key")
    if rt.key is None:
        raise EncodeError(f"record type {rt.id} ({rt.name}) has no known key layout")
    out = bytearray()
    w.write_int16(rt.id, out)
    encode_body(rt.key, 0, key, out)
    return bytes(out)


def encode_value(value: RecordValue, version: int, record_type_id: int | None = None) -> bytes:
    """Value bytes: int16 version + value struct at ``version``."""
    rt = _type_of(value, record_type_id, "value")
    if rt.value is None:
        raise EncodeError(f"record type {rt.id} ({rt.name}) has no known value layout")
    out = bytearray()
    w.write_int16(version, out)
    encode_body(rt.value, version, value, out)
    return bytes(out)
