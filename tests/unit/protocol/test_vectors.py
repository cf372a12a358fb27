"""The committed golden vectors (bytes from Kafka's serialisers) decode to the committed JSON, and
our encoder writes the same bytes back.  No Java needed: tests/oracle rebuilds the vectors."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from groupwatch.protocol import (
    decode_assignment,
    decode_record,
    decode_subscription,
    encode_assignment,
    encode_key,
    encode_subscription,
    encode_value,
)
from tests.vectors import build

VECTORS = build.stored()


def _ids() -> list[str]:
    return sorted(VECTORS)


@pytest.mark.parametrize("path", _ids())
def test_vector_decodes_to_pinned_json(path: str) -> None:
    data, expected = VECTORS[path]
    if path.startswith("records/"):
        assert build.record_expected(_req(data, "key"), data["value"]) == expected
    elif "subscription" in data:
        assert build.subscription_expected(_req(data, "subscription")) == expected
    elif "assignment" in data:
        assert build.assignment_expected(_req(data, "assignment")) == expected
    else:
        from groupwatch.protocol import decode_user_data
        from groupwatch.protocol.jsonview import user_data_json

        ud = decode_user_data(expected["protocol"], data["user_data"])
        assert user_data_json(ud) == expected["decoded"]


@pytest.mark.parametrize("path", [p for p in _ids() if p.startswith("records/")])
def test_record_vector_reencodes_byte_for_byte(path: str) -> None:
    data, _ = VECTORS[path]
    key, value = _req(data, "key"), data["value"]
    rec = decode_record(key, value)
    assert rec.error is None
    assert encode_key(rec.key, rec.record_type_id) == key
    if value is not None:
        assert encode_value(rec.value, rec.value_version or 0, rec.record_type_id) == value
    for member in rec.members:  # embedded payloads too (Kafka-built, known versions)
        if member.subscription is not None and not member.subscription.newer_version:
            assert encode_subscription(member.subscription) == member.metadata.subscription
        if member.assignment is not None and not member.assignment.newer_version:
            assert encode_assignment(member.assignment) == member.metadata.assignment


@pytest.mark.parametrize("path", [p for p in _ids() if p.startswith("consumer_protocol/")])
def test_consumer_protocol_vector_reencodes(path: str) -> None:
    data, expected = VECTORS[path]
    if "subscription" in data:
        raw = _req(data, "subscription")
        sub = decode_subscription(raw)
        again = encode_subscription(sub)
        if expected["newer_version"]:
            # A newer version is read as the newest known one and written back as that:
            # the same fields, at version 3.
            assert decode_subscription(again) == replace(sub, version=3)
        else:
            assert again == raw
    else:
        raw = _req(data, "assignment")
        asg = decode_assignment(raw)
        again = encode_assignment(asg)
        if expected["newer_version"]:
            assert decode_assignment(again) == replace(asg, version=3)
        else:
            assert again == raw


def test_every_record_type_and_version_has_a_vector() -> None:
    seen: Counter[tuple[str, Any]] = Counter()
    for path, (_data, expected) in VECTORS.items():
        if path.startswith("records/"):
            version = None if expected["tombstone"] else expected["value"]["version"]
            seen[(expected["record_type"], version)] += 1
    for version in range(5):
        assert seen[("offset_commit", version)] >= 1
        assert seen[("group_metadata", version)] >= 1
    named = {
        expected["record_type"] for _, expected in VECTORS.values() if "record_type" in expected
    }
    decodable = {3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23}
    from groupwatch.protocol import RECORD_TYPES

    assert {RECORD_TYPES[t].name for t in decodable} <= named
    subs = {e["version"] for p, (_, e) in VECTORS.items() if "/sub_" in p}
    asgs = {e["version"] for p, (_, e) in VECTORS.items() if "/asg_" in p}
    assert {0, 1, 2, 3, 100} <= subs and {0, 1, 2, 3, 100} <= asgs


def _req(data: dict[str, bytes | None], label: str) -> bytes:
    b = data[label]
    assert b is not None
    return b
