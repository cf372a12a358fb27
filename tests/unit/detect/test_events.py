"""The engine's two readings of a record agree: the typed one (the job, raw input) and the
``groupwatch decode`` JSON one (``analyze``'s decoded input).

They differ by design in one thing only: the JSON view sorts topic-partition lists and topics,
the typed records keep the order they were written in (the order the group's leader read).
Over every record a real broker wrote in the captured corpus (every client of the fleet, KIP-848,
streams, share and connect groups) and every scenario of the library, the events are equal once
that order is set aside, and equal outright where the writer sorted.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.detect.decoded import event_from_decoded, record_from_raw
from groupwatch.detect.events import event_from_record
from groupwatch.detect.model import GroupSnapshot, MemberState
from groupwatch.protocol import to_json_dict
from groupwatch_dev.scenarios.builder import load as load_scenario
from groupwatch_dev.scenarios.builder import raw_records, scenario_files

CAPTURED = Path(__file__).resolve().parents[2] / "vectors" / "captured"
ORDERED = ("topics", "owned_partitions", "user_data_previous", "assigned", "claim")


def corpus() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(CAPTURED.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines()):
            out.append((f"{path.stem}:{n}", json.loads(line)))
    for path in scenario_files():
        for n, raw in enumerate(raw_records(load_scenario(path))):
            out.append((f"{path.stem}:{n}", raw))
    return out


def unordered(event: Any) -> Any:
    """The event with every member's lists sorted, as the JSON view prints them."""
    if not isinstance(event, GroupSnapshot):
        return event

    def member(m: MemberState) -> MemberState:
        return dataclasses.replace(
            m,
            **{
                name: None if getattr(m, name) is None else tuple(sorted(getattr(m, name)))
                for name in ORDERED
            },
        )

    return dataclasses.replace(event, members=tuple(member(m) for m in event.members))


RECORDS = corpus()


def test_the_corpus_covers_what_the_engine_reads() -> None:
    kinds = set()
    for _, raw in RECORDS:
        record = record_from_raw(raw)
        kinds.add((record.record_type_id, record.tombstone, record.error is not None))
    # classic snapshots and tombstones, commits, KIP-848/streams/share records, bad records
    assert {(2, False, False), (2, True, False), (1, False, False), (8, False, False)} <= kinds
    assert {t for t, _, _ in kinds} >= {1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 17, 19, 22}
    assert any(bad for _, _, bad in kinds)


@pytest.mark.parametrize(("where", "raw"), RECORDS, ids=[w for w, _ in RECORDS])
def test_typed_and_json_readings_agree(where: str, raw: dict[str, Any]) -> None:
    record = record_from_raw(raw)
    typed = event_from_record(record)
    printed = event_from_decoded(to_json_dict(record))
    assert unordered(typed) == unordered(printed)


def test_only_the_typed_reading_keeps_the_order_a_member_wrote() -> None:
    """A member whose owned partitions were written out of order (not every client sorts)."""
    from groupwatch.protocol import (
        ConsumerProtocolSubscription,
        GroupMetadataKey,
        GroupMetadataValue,
        MemberMetadata,
        TopicPartitions,
        decode_record,
        encode_key,
        encode_subscription,
        encode_value,
    )

    owned = (TopicPartitions("b", (3, 1)), TopicPartitions("a", (2,)))
    subscription = encode_subscription(ConsumerProtocolSubscription(1, ("b", "a"), None, owned), 1)
    member = MemberMetadata("m", "c", "/h", 10_000, subscription, b"", rebalance_timeout=30_000)
    value = GroupMetadataValue("consumer", 5, "cooperative-sticky", "m", (member,))
    record = decode_record(encode_key(GroupMetadataKey("g")), encode_value(value, 3))
    typed = event_from_record(record)
    printed = event_from_decoded(to_json_dict(record))
    assert isinstance(typed, GroupSnapshot) and isinstance(printed, GroupSnapshot)
    assert typed.members[0].owned_partitions == (("b", 3), ("b", 1), ("a", 2))
    assert printed.members[0].owned_partitions == (("a", 2), ("b", 1), ("b", 3))
    assert unordered(typed) == unordered(printed)


def test_a_classic_and_a_modern_line_off_the_contract_fail_alike() -> None:
    from groupwatch.detect.decoded import source_of
    from groupwatch.detect.errors import ContractError
    from groupwatch.detect.model import UndecodableRecord
    from groupwatch.detect.modern import modern_record
    from groupwatch.errors import GroupwatchError

    classic = {"record_type": "group_metadata", "record_type_id": 2, "key": {}, "value": {}}
    # a current-assignment key (type 8) without its member id
    modern = {"record_type": "consumer_group_current_member_assignment", "record_type_id": 8}
    modern |= {"group": "g", "key": {"group_id": "g"}, "value": None, "tombstone": True}
    with pytest.raises(ContractError, match="without its member") as raised:
        modern_record(modern, "g", source_of(modern), None)
    assert isinstance(raised.value, GroupwatchError) and isinstance(raised.value, ValueError)
    events = [event_from_decoded(classic), event_from_decoded(modern)]
    assert all(isinstance(e, UndecodableRecord) for e in events)
    assert [e.error_kind for e in events if isinstance(e, UndecodableRecord)] == ["contract"] * 2
