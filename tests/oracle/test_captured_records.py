"""Kafka's own deserialisers against ours on every record of the captured corpus.

Each record a real broker wrote (``tests/vectors/captured``) goes through Kafka 4.3.1's
``GroupCoordinatorRecordSerde`` and through ``groupwatch.protocol.decode_record``: every field
Kafka's JSON view prints must equal ours, and Kafka must write the same bytes back. The payloads
classic consumer members embed (subscription and assignment of each member of a ``consumer``
group, and the protocols a classic member of a KIP-848 group offered) go through Kafka's
``ConsumerProtocol``, the cooperative-sticky and sticky user data through the assignors' readers.
A record Kafka cannot read must be an error (quarantine) for us too, never a crash or a value.
"""

from __future__ import annotations

from typing import Any

import pytest

from groupwatch.protocol import (
    CooperativeStickyUserData,
    RawUserData,
    StickyUserData,
    decode_record,
    decode_subscription,
)
from groupwatch.protocol.jsonview import plain
from groupwatch.protocol.models import ConsumerGroupMemberMetadataValue
from tests.oracle.test_records_vectors import assert_matches_kafka, harness
from tests.vectors import captured

pytestmark = pytest.mark.oracle

CORPUS = captured.load_all()


def test_kafka_reads_every_captured_record_as_we_do() -> None:
    answers = harness(
        [
            {
                "op": "decode_record",
                "key_hex": rec.key.hex(),
                "value_hex": None if rec.value is None else rec.value.hex(),
            }
            for rec in CORPUS
        ]
    )
    compared = refused = 0
    for rec, answer in zip(CORPUS, answers, strict=True):
        ours = decode_record(rec.key, rec.value)
        if "error" in answer:
            # Kafka cannot read it: we must quarantine it (an error), not hand out a value.
            assert ours.error is not None, (rec.id, answer["error"])
            refused += 1
            continue
        assert ours.error is None, (rec.id, ours.error)
        assert answer["key_hex"] == rec.key.hex(), rec.id
        assert_matches_kafka(answer["key"], plain(ours.key), f"{rec.id} key")
        if rec.value is None:
            assert answer["value"] is None and ours.tombstone, rec.id
        else:
            assert answer["version"] == ours.value_version, rec.id
            assert_matches_kafka(answer["value"], plain(ours.value), f"{rec.id} value")
            assert answer["value_hex"] == rec.value.hex(), f"{rec.id}: Kafka wrote other bytes"
        compared += 1
    print(f"{compared} records compared with Kafka's, {refused} refused by both")
    assert compared == len(CORPUS) - refused > 0


def _embedded() -> list[tuple[str, str, bytes, Any]]:
    """(record id, op, payload, our decoded value) of every consumer-protocol payload."""
    out: list[tuple[str, str, bytes, Any]] = []
    for rec in CORPUS:
        d = decode_record(rec.key, rec.value)
        if d.record_type == "group_metadata" and d.value is not None:
            if d.value.protocol_type != "consumer":
                continue
            for i, m in enumerate(d.members):
                where = f"{rec.id} members[{i}]"
                if m.metadata.subscription:
                    sub = m.metadata.subscription
                    out.append((where, "decode_subscription", sub, m.subscription))
                    ud = m.subscription_user_data
                    raw = m.subscription.user_data if m.subscription else None
                    if isinstance(ud, CooperativeStickyUserData | StickyUserData):
                        assert raw is not None
                        coop = isinstance(ud, CooperativeStickyUserData)
                        out.append((where, "decode_coop" if coop else "decode_sticky", raw, ud))
                    elif d.value.protocol == "sticky" and raw:
                        # bytes we keep raw (kafka-python writes its own layout): Kafka's
                        # StickyAssignor must fall back to "no previous assignment" on them too
                        assert isinstance(ud, RawUserData), where
                        out.append((where, "decode_sticky", raw, ud))
                if m.metadata.assignment:
                    out.append((where, "decode_assignment", m.metadata.assignment, m.assignment))
        elif isinstance(d.value, ConsumerGroupMemberMetadataValue):
            cmm = d.value.classic_member_metadata
            for i, p in enumerate(cmm.supported_protocols if cmm else ()):
                where = f"{rec.id} classic_member_metadata.supported_protocols[{i}]"
                ours = decode_subscription(p.metadata)
                out.append((where, "decode_subscription", p.metadata, ours))
    return out


def test_kafka_reads_every_embedded_payload_as_we_do() -> None:
    payloads = _embedded()
    answers = harness([{"op": op, "hex": raw.hex()} for _, op, raw, _ in payloads])
    seen: dict[str, int] = {}
    for (where, op, _, ours), answer in zip(payloads, answers, strict=True):
        assert "error" not in answer, (where, answer)
        seen[op] = seen.get(op, 0) + 1
        if op == "decode_coop":
            assert answer["generation"] == ours.generation, where
        elif op == "decode_sticky" and isinstance(ours, RawUserData):
            # Kafka's fallback: no previous assignment, DEFAULT_GENERATION (-1)
            assert answer == {"partitions": [], "generation": -1}, (where, answer)
            seen["sticky_fallback"] = seen.get("sticky_fallback", 0) + 1
        elif op == "decode_sticky":
            flat = [[tp.topic, p] for tp in ours.previous_assignment for p in tp.partitions]
            assert answer["partitions"] == flat, where
            assert answer["generation"] == ours.generation, where
        else:
            assert ours is not None, where
            assert answer["version"] == ours.version, where
            mine = plain(ours)
            mine.pop("version")
            if ours.version == 0:
                mine.pop("owned_partitions", None)  # Kafka's v0 JSON leaves out what v0 lacks
            assert_matches_kafka(answer["message"], mine, where)
            if "view" in answer:  # Kafka's Subscription semantics (generation < 0 is absent)
                gen = ours.generation_id if ours.version >= 2 and ours.generation_id >= 0 else None
                assert answer["view"]["generation_id"] == gen, where
                assert answer["view"]["rack_id"] == (ours.rack_id or None), where
    print(f"embedded payloads compared with Kafka's: {dict(sorted(seen.items()))}")
    # the corpus has classic consumer groups of both assignor families and a classic member
    # inside a consumer group
    assert {"decode_subscription", "decode_assignment", "decode_coop"} <= set(seen)
