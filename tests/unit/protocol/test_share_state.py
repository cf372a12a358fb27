"""``__share_group_state`` records: round trips through the share coordinator's own table, the
topic choosing the table, and bad bytes as DecodeErrors with a field path and a byte offset."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupwatch.protocol import decode_key, decode_record, decode_value, encode_key, encode_value
from groupwatch.protocol.jsonview import to_json_dict
from groupwatch.protocol.models import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    StateBatch,
)
from groupwatch.protocol.specs import SHARE_STATE_RECORD_TYPES, SHARE_STATE_TOPIC
from tests.unit.protocol import strategies as gs

QUICK = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
TOPIC_ID = uuid.UUID("ab9d4a5e-6f0e-4b43-9c36-2f1d6e3d7a10")


def _pair(type_id: int) -> st.SearchStrategy[tuple[Any, Any]]:
    rt = SHARE_STATE_RECORD_TYPES[type_id]
    assert rt.key is not None and rt.value is not None
    return st.tuples(gs.message_values(rt.key, 0), gs.message_values(rt.value, 0))


@pytest.mark.parametrize("type_id", sorted(SHARE_STATE_RECORD_TYPES))
def test_share_state_round_trip(type_id: int) -> None:
    @QUICK
    @given(_pair(type_id))
    def check(kv: tuple[Any, Any]) -> None:
        key, value = kv
        kb, vb = encode_key(key), encode_value(value, 0)
        assert int.from_bytes(kb[:2], "big") == type_id
        rt, k2 = decode_key(kb, SHARE_STATE_RECORD_TYPES)
        assert (rt.id, k2) == (type_id, key)
        assert decode_value(rt, vb) == (0, value)
        rec = decode_record(kb, vb, topic=SHARE_STATE_TOPIC)
        assert rec.error is None and rec.value == value
        assert to_json_dict(rec)["record_type"] == rt.name

    check()


def _snapshot(count: int = -1) -> tuple[bytes, bytes]:
    key = ShareSnapshotKey("g", TOPIC_ID, 0)
    value = ShareSnapshotValue(
        snapshot_epoch=0,
        state_epoch=0,
        leader_epoch=0,
        start_offset=12,
        create_timestamp=1,
        write_timestamp=2,
        state_batches=(StateBatch(12, 14, 4, 5),),
        delivery_complete_count=count,
    )
    return encode_key(key), encode_value(value, 0)


def test_the_topic_picks_the_table() -> None:
    kb, vb = _snapshot()
    assert kb[:2] == b"\x00\x00"  # the id of a legacy offset commit in __consumer_offsets
    rec = decode_record(kb, vb, topic=SHARE_STATE_TOPIC)
    assert (rec.record_type, rec.group, rec.error) == ("share_snapshot", "g", None)
    out = to_json_dict(rec)
    assert out["value"]["data"]["state_batches"] == [
        {"first_offset": 12, "last_offset": 14, "delivery_state": 4, "delivery_count": 5}
    ]
    # Read as __consumer_offsets the same bytes are not an offset commit: an error, no crash.
    other = decode_record(kb, vb, topic="__consumer_offsets")
    assert other.record_type == "offset_commit" and other.error is not None
    update = decode_record(
        encode_key(ShareUpdateKey("g", TOPIC_ID, 3)), None, topic=SHARE_STATE_TOPIC
    )
    assert (update.record_type, update.tombstone, update.error) == ("share_update", True, None)


def test_the_delivery_complete_count_is_tagged_and_minus_one_when_unwritten() -> None:
    _, old = _snapshot(-1)
    _, new = _snapshot(3)
    assert len(new) - len(old) == 6  # tag 0, size 4, int32
    for data, count in ((old, -1), (new, 3)):
        _, value = decode_value(SHARE_STATE_RECORD_TYPES[0], data)
        assert isinstance(value, ShareSnapshotValue) and value.delivery_complete_count == count


def test_bad_bytes_name_the_field_and_the_offset() -> None:
    kb, vb = _snapshot()
    # The batch array claims a thousand batches the bytes do not hold.
    at = 2 + 4 * 3 + 8 * 3  # version, three epochs, SPSO and both timestamps
    assert vb[at] == 2  # a compact array of one
    bad = vb[:at] + bytes([0xE9, 0x07]) + vb[at + 1 :]
    rec = decode_record(kb, bad, topic=SHARE_STATE_TOPIC)
    assert rec.error is not None and rec.error.kind == "truncated"
    assert (rec.error.field_path, rec.error.byte_offset) == ("state_batches", at)
    # Cut inside the batch: the path goes down to the field.
    cut = at + 1 + 8 + 8 + 1 + 1
    rec = decode_record(kb, vb[:cut], topic=SHARE_STATE_TOPIC)
    assert rec.error is not None and rec.error.kind == "truncated"
    assert (rec.error.field_path, rec.error.byte_offset) == (
        "state_batches[0].delivery_count",
        cut - 1,
    )
    unknown = decode_record(b"\x00\x07" + kb[2:], vb, topic=SHARE_STATE_TOPIC)
    assert unknown.error is not None and unknown.error.kind == "unknown_record_type"
    short_key = decode_record(kb[:-2], vb, topic=SHARE_STATE_TOPIC)
    assert short_key.error is not None and short_key.error.field_path == "key.partition"
    assert short_key.error.byte_offset == len(kb) - 4


@QUICK
@given(
    st.sampled_from(sorted(SHARE_STATE_RECORD_TYPES))
    .flatmap(_pair)
    .flatmap(
        lambda kv: st.tuples(gs.corrupted(encode_key(kv[0])), gs.corrupted(encode_value(kv[1], 0)))
    )
)
def test_corrupted_share_state_bytes_are_decode_errors(kv: tuple[bytes, bytes]) -> None:
    rec = decode_record(kv[0], kv[1], topic=SHARE_STATE_TOPIC)
    assert rec.error is None or rec.error.kind != "internal_error", rec.error
    to_json_dict(rec)
