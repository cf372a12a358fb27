"""Kafka's share coordinator is the oracle for ``__share_group_state`` records.

* Kafka's ``ShareCoordinatorRecordSerde`` reads our encoding of generated snapshots and updates
  (with and without the 4.2+ tagged delivery-complete count) and re-serialises the very same
  bytes; its JSON view matches ours field by field.
* Bytes Kafka's serialisers write from a JSON record decode, through the topic's table, to the
  values the JSON named.
* Truncations of Kafka-built values fail in Kafka and in our decoder (with a path and an offset).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupwatch.protocol import decode_key, decode_record, decode_value, encode_key, encode_value
from groupwatch.protocol.jsonview import plain
from groupwatch.protocol.models import ShareSnapshotValue, ShareUpdateValue
from groupwatch.protocol.specs import SHARE_STATE_RECORD_TYPES, SHARE_STATE_TOPIC
from groupwatch_dev.broker import KAFKA_VERSIONS
from tests.oracle.test_records_vectors import assert_matches_kafka, harness
from tests.unit.protocol import strategies as gs

pytestmark = pytest.mark.oracle


def _samples(type_id: int, n: int) -> list[tuple[Any, Any]]:
    rt = SHARE_STATE_RECORD_TYPES[type_id]
    assert rt.key is not None and rt.value is not None
    strategy = st.tuples(gs.message_values(rt.key, 0), gs.message_values(rt.value, 0))
    out: list[tuple[Any, Any]] = []

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def grab(x: tuple[Any, Any]) -> None:
        out.append(x)

    grab()
    return out


@pytest.mark.parametrize("release", KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
@pytest.mark.parametrize("type_id", sorted(SHARE_STATE_RECORD_TYPES))
def test_kafka_reads_our_encoding_of_generated_share_state_records(
    type_id: int, release: str
) -> None:
    samples = _samples(type_id, 40)
    pairs = [(encode_key(k), encode_value(v, 0)) for k, v in samples]
    # the tagged count both written (any value but -1) and left out (-1, Kafka's default)
    assert {v.delivery_complete_count == -1 for _, v in samples} == {True, False}
    answers = harness(
        [
            {"op": "decode_record", "serde": "share", "key_hex": k.hex(), "value_hex": v.hex()}
            for k, v in pairs
        ],
        release,
    )
    for (key, value), answer in zip(pairs, answers, strict=True):
        assert "error" not in answer, (key.hex(), value.hex(), answer)
        assert answer["key_hex"] == key.hex()
        assert answer["value_hex"] == value.hex(), "Kafka re-serialised different bytes"
        rt, our_key = decode_key(key, SHARE_STATE_RECORD_TYPES)
        assert rt.id == type_id
        assert_matches_kafka(answer["key"], plain(our_key), "key")
        version, our_value = decode_value(rt, value)
        assert answer["version"] == version == 0
        assert_matches_kafka(answer["value"], plain(our_value), "value")


_KEY = {"groupId": "orders-share", "topicId": "q5FbYOvUT9KeOShc5WZ5iw", "partition": 2}
_BATCHES = [
    {"firstOffset": 40, "lastOffset": 44, "deliveryState": 0, "deliveryCount": 1},
    {"firstOffset": 45, "lastOffset": 45, "deliveryState": 4, "deliveryCount": 5},
    {"firstOffset": 46, "lastOffset": 49, "deliveryState": 2, "deliveryCount": 2},
]
_SNAPSHOT = {
    "snapshotEpoch": 3,
    "stateEpoch": 1,
    "leaderEpoch": 7,
    "startOffset": 40,
    "deliveryCompleteCount": 5,
    "createTimestamp": 1_790_000_000_000,
    "writeTimestamp": 1_790_000_004_000,
    "stateBatches": _BATCHES,
}
_UPDATE = {
    "snapshotEpoch": 3,
    "leaderEpoch": 7,
    "startOffset": -1,
    "stateBatches": _BATCHES[1:2],
}


@pytest.mark.parametrize(
    ("type_id", "value"),
    [
        (0, _SNAPSHOT),
        (0, {k: v for k, v in _SNAPSHOT.items() if k != "deliveryCompleteCount"}),  # a 4.1 writer
        (1, _UPDATE),
        (1, {**_UPDATE, "deliveryCompleteCount": 0}),
    ],
)
def test_kafka_built_share_state_records_decode_to_their_fields(
    type_id: int, value: dict[str, Any]
) -> None:
    [built] = harness(
        [
            {
                "op": "record",
                "serde": "share",
                "type": type_id,
                "version": 0,
                "key": _KEY,
                "value": value,
            }
        ]
    )
    assert "error" not in built, built
    rec = decode_record(
        bytes.fromhex(built["key_hex"]),
        bytes.fromhex(built["value_hex"]),
        topic=SHARE_STATE_TOPIC,
    )
    assert rec.error is None, rec.error
    assert rec.record_type == ("share_snapshot", "share_update")[type_id]
    assert rec.group == "orders-share"
    assert plain(rec.key) == {
        "group_id": "orders-share",
        "topic_id": "q5FbYOvUT9KeOShc5WZ5iw",
        "partition": 2,
    }
    v = rec.value
    assert isinstance(v, ShareSnapshotValue | ShareUpdateValue)
    assert v.start_offset == value["startOffset"]
    assert v.leader_epoch == 7
    assert v.delivery_complete_count == value.get("deliveryCompleteCount", -1)
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in v.state_batches
    ] == [
        (b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
        for b in value["stateBatches"]
    ]
    if isinstance(v, ShareSnapshotValue):
        assert (v.state_epoch, v.create_timestamp) == (1, 1_790_000_000_000)


def test_truncated_share_state_values_fail_in_kafka_and_here() -> None:
    [built] = harness(
        [
            {
                "op": "record",
                "serde": "share",
                "type": 0,
                "version": 0,
                "key": _KEY,
                "value": _SNAPSHOT,
            }
        ]
    )
    key, value = bytes.fromhex(built["key_hex"]), bytes.fromhex(built["value_hex"])
    cuts = range(2, len(value), 5)
    answers = harness(
        [
            {
                "op": "decode_record",
                "serde": "share",
                "key_hex": key.hex(),
                "value_hex": value[:cut].hex(),
            }
            for cut in cuts
        ]
    )
    assert all("error" in a for a in answers), [a for a in answers if "error" not in a][:3]
    for cut in cuts:
        rec = decode_record(key, value[:cut], topic=SHARE_STATE_TOPIC)
        assert rec.error is not None and rec.error.kind == "truncated", cut
        assert 2 <= rec.error.byte_offset <= cut
        assert rec.error.field_path, cut
