"""The captured corpus (``tests/vectors/captured``): bytes a real 4.3.1 broker wrote, for every
kind of group. Every record decodes without an error, embedded payloads included, and encodes
back to the very same bytes; the corpus holds the record kinds it was captured for."""

from __future__ import annotations

import collections

import pytest

from groupwatch.protocol import decode_record, encode_key, encode_value
from groupwatch.protocol.models import ClassicMemberMetadata, ConsumerGroupMemberMetadataValue
from tests.vectors import captured

CORPUS = {kind: captured.load(kind) for kind in captured.KINDS}


@pytest.mark.parametrize("kind", captured.KINDS)
def test_every_captured_record_decodes(kind: str) -> None:
    failures = []
    for rec in CORPUS[kind]:
        d = decode_record(rec.key, rec.value, partition=rec.partition, offset=rec.offset)
        if d.error is not None:
            failures.append(f"{rec.id} {d.record_type}: {d.error}")
        for i, m in enumerate(d.members):
            if m.subscription_error is not None:
                failures.append(f"{rec.id} members[{i}].subscription: {m.subscription_error}")
            if m.assignment_error is not None:
                failures.append(f"{rec.id} members[{i}].assignment: {m.assignment_error}")
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("kind", captured.KINDS)
def test_every_captured_record_encodes_back_to_its_bytes(kind: str) -> None:
    for rec in CORPUS[kind]:
        d = decode_record(rec.key, rec.value)
        assert encode_key(d.key, d.record_type_id) == rec.key, rec.id
        if rec.value is not None:
            assert encode_value(d.value, d.value_version, d.record_type_id) == rec.value, rec.id


def _kinds_of_records(kind: str) -> collections.Counter[str]:
    c: collections.Counter[str] = collections.Counter()
    for rec in CORPUS[kind]:
        d = decode_record(rec.key, rec.value)
        c[d.record_type + ("-" if d.tombstone else "")] += 1
        if d.record_type == "group_metadata" and d.value is not None:
            c[f"protocol_type={d.value.protocol_type}"] += 1
            c[f"protocol={d.value.protocol}"] += 1
        if isinstance(d.value, ConsumerGroupMemberMetadataValue):
            classic = isinstance(d.value.classic_member_metadata, ClassicMemberMetadata)
            c["classic_member" if classic else "consumer_member"] += 1
    return c


# What each capture must contain ("-" = tombstone): the records the broker writes for that kind
# of group, so a capture that silently missed a group kind cannot pass.
EXPECTED = {
    "classic": {
        "group_metadata", "group_metadata-", "offset_commit", "offset_commit-",
        "protocol_type=consumer", "protocol=range", "protocol=cooperative-sticky",
    },
    "consumer": {
        "consumer_group_metadata", "consumer_group_metadata-",
        "consumer_group_member_metadata", "consumer_group_member_metadata-",
        "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
        "consumer_group_target_assignment_member-", "consumer_group_current_member_assignment",
        "consumer_group_current_member_assignment-", "consumer_group_regular_expression",
        "offset_commit", "classic_member", "consumer_member", "group_metadata-",
    },
    "share": {
        "share_group_metadata", "share_group_member_metadata", "share_group_member_metadata-",
        "share_group_target_assignment_metadata", "share_group_target_assignment_member",
        "share_group_current_member_assignment", "share_group_state_partition_metadata",
    },
    "streams": {
        "streams_group_metadata", "streams_group_member_metadata",
        "streams_group_member_metadata-", "streams_group_target_assignment_metadata",
        "streams_group_target_assignment_member", "streams_group_current_member_assignment",
        "streams_group_topology", "offset_commit",
    },
    "streams-classic": {"group_metadata", "protocol=stream", "offset_commit"},
    "connect": {
        "group_metadata", "protocol_type=connect", "protocol_type=consumer", "offset_commit",
    },
    "fleet": {"group_metadata", "protocol=cooperative-sticky", "protocol=sticky", "offset_commit"},
}  # fmt: skip


@pytest.mark.parametrize("kind", captured.KINDS)
def test_the_corpus_holds_what_it_was_captured_for(kind: str) -> None:
    missing = EXPECTED[kind] - set(_kinds_of_records(kind))
    assert not missing, f"{kind}.jsonl lacks {sorted(missing)}"


def test_a_consumer_protocol_member_as_a_431_broker_writes_it() -> None:
    # ClassicMemberMetadata null is written (its default is an empty struct): tag 0, size 1,
    # payload 00 -- an unsigned varint null marker, not an int8 one.
    value = bytes.fromhex(
        "0000000014666c6565742d6a6176612d636f6e73756d65720b2f3132372e302e302e31030d666c6565"
        "742d636c69636b730d666c6565742d6f726465727301000493e00001000100"
    )
    key = bytes.fromhex("0005") + b"\x00\x01g" + b"\x00\x02m1"
    d = decode_record(key, value)
    assert d.error is None, d.error
    assert isinstance(d.value, ConsumerGroupMemberMetadataValue)
    assert d.value.classic_member_metadata is None
    assert d.value.client_id == "fleet-java-consumer"
    assert d.value.subscribed_topic_names == ("fleet-clicks", "fleet-orders")
    assert d.value.rebalance_timeout_ms == 300000
    assert encode_value(d.value, 0, 5) == value
