"""A value of a version newer than groupwatch knows: read by the fields it knows.

The bytes here are what a newer Kafka would write under Kafka's rules for a new version of a
flexible message: the fields of the newest known version first, then the new version's
regular fields, then the struct's tagged section; or a version that only added tagged fields
(the same layout, a higher number).
"""

from __future__ import annotations

import uuid

from groupwatch.protocol import _wire as w
from groupwatch.protocol import decode_record, encode_key, encode_value, to_json_dict
from groupwatch.protocol.codec import decode_prefix
from groupwatch.protocol.models import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    ShareSnapshotKey,
    ShareSnapshotValue,
    StateBatch,
)
from groupwatch.protocol.specs import OFFSET_COMMIT_VALUE, SHARE_SNAPSHOT_VALUE, SHARE_STATE_TOPIC

TOPIC_ID = uuid.UUID("6f1c0b9e-2a44-4d6f-9a0e-3b1d5c7e9f21")


def _renumbered(value: bytes, version: int) -> bytes:
    return version.to_bytes(2, "big", signed=True) + value[2:]


def _appended(value: bytes, spec: object, known: int, new_fields: bytes) -> bytes:
    """A newer version's bytes: the known version's regular fields, ``new_fields``, then the
    known version's tagged section (where Kafka's writer puts it: last)."""
    _, end = decode_prefix(spec, known, value, 2)  # type: ignore[arg-type]
    return value[:end] + new_fields + value[end:]


def test_an_offset_commit_v5_with_a_new_field_is_read_by_the_v4_fields() -> None:
    v4 = encode_value(OffsetCommitValue(42, "m", 1_700_000_000_000, 7, topic_id=TOPIC_ID), 4)
    new_field = bytearray()
    w.write_int64(123456789, new_field)  # what a v5 might add
    v5 = _renumbered(_appended(v4, OFFSET_COMMIT_VALUE, 4, bytes(new_field)), 5)
    rec = decode_record(encode_key(OffsetCommitKey("g", "t", 3)), v5)
    assert rec.error is None
    assert rec.value_version == 5
    assert rec.newer is not None
    assert (rec.newer.version, rec.newer.read_as) == (5, 4)
    value = rec.value
    assert isinstance(value, OffsetCommitValue)
    assert (value.offset, value.leader_epoch, value.metadata) == (42, 7, "m")
    assert value.commit_timestamp == 1_700_000_000_000
    # The tagged section sits after the new field: unread, kept with it.
    assert value.topic_id is None
    assert rec.newer.unread == v5[len(v5) - len(rec.newer.unread) :]
    assert rec.newer.unread.startswith(bytes(new_field))
    line = to_json_dict(rec)
    assert line["error"] is None
    assert line["value"]["offset"] == 42 and line["value"]["version"] == 5
    assert line["newer_version"]["version"] == 5 and line["newer_version"]["read_as"] == 4


def test_a_newer_version_that_only_added_tagged_fields_reads_whole() -> None:
    v4 = encode_value(OffsetCommitValue(9, "", 5, topic_id=TOPIC_ID), 4)
    rec = decode_record(encode_key(OffsetCommitKey("g", "t", 0)), _renumbered(v4, 6))
    assert rec.error is None and rec.newer is not None
    assert (rec.newer.version, rec.newer.read_as, rec.newer.unread) == (6, 4, b"")
    assert isinstance(rec.value, OffsetCommitValue) and rec.value.topic_id == TOPIC_ID


def test_a_newer_group_metadata_keeps_its_members() -> None:
    member = MemberMetadata("m-1", "c", "/h", 1000, b"", b"", rebalance_timeout=3000)
    v4 = encode_value(GroupMetadataValue("consumer", 3, "range", "m-1", (member,), 17), 4)
    rec = decode_record(encode_key(GroupMetadataKey("g")), _renumbered(v4, 5))
    assert rec.error is None and rec.newer is not None
    assert isinstance(rec.value, GroupMetadataValue)
    assert [m.member_id for m in rec.members] == ["m-1"] and rec.value.generation == 3


def test_a_newer_share_snapshot_is_read_through_its_topics_table() -> None:
    value = ShareSnapshotValue(
        snapshot_epoch=1,
        state_epoch=0,
        leader_epoch=2,
        start_offset=10,
        create_timestamp=1,
        write_timestamp=2,
        state_batches=(StateBatch(10, 12, 0, 1),),
        delivery_complete_count=3,
    )
    v0 = encode_value(value, 0)
    v1 = _renumbered(_appended(v0, SHARE_SNAPSHOT_VALUE, 0, b"\x01\x02"), 1)
    rec = decode_record(
        encode_key(ShareSnapshotKey("sg", TOPIC_ID, 0)), v1, topic=SHARE_STATE_TOPIC
    )
    assert rec.error is None and rec.record_type == "share_snapshot"
    assert rec.newer is not None and (rec.newer.version, rec.newer.read_as) == (1, 0)
    assert isinstance(rec.value, ShareSnapshotValue)
    assert rec.value.start_offset == 10 and rec.value.state_batches == value.state_batches


def test_a_newer_version_whose_known_fields_do_not_read_stays_an_error() -> None:
    v4 = encode_value(OffsetCommitValue(42, "metadata", 5), 4)
    rec = decode_record(encode_key(OffsetCommitKey("g", "t", 0)), _renumbered(v4[:12], 5))
    assert rec.newer is None
    assert rec.error is not None and rec.error.kind == "unsupported_version"


def test_known_and_older_versions_are_not_newer() -> None:
    for version in (3, 4):
        raw = encode_value(OffsetCommitValue(1, "", 2), version)
        rec = decode_record(encode_key(OffsetCommitKey("g", "t", 0)), raw)
        assert rec.error is None and rec.newer is None
        assert "newer_version" not in to_json_dict(rec)
    negative = decode_record(
        encode_key(OffsetCommitKey("g", "t", 0)),
        _renumbered(encode_value(OffsetCommitValue(1, "", 2), 4), -1),
    )
    assert negative.newer is None and negative.error is not None
