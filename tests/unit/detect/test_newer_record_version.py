"""Records of a newer Kafka: judged by the fields groupwatch knows, an ``info`` finding naming the
record type and version, and their raw bytes kept; through ``analyze``'s engine (raw and decoded
lines alike) and through the job's per-group step.

The newer records are the scenario library's KAFKA-7026 records renumbered: their group
metadata written at v4 (flexible) and then called v5, with a new regular field appended after
v4's fields, as a newer Kafka would add one; the group's verdict must not change.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json

from groupwatch.detect import Analyzer
from groupwatch.processing import SourceRecord
from groupwatch.protocol import decode_record, encode_key, encode_value, to_json_dict
from groupwatch.protocol.codec import decode_prefix
from groupwatch.protocol.models import GroupMetadataValue, OffsetCommitKey, OffsetCommitValue
from groupwatch.protocol.specs import GROUP_METADATA_VALUE
from tests.scenario_groups import run_group, scenario_records

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NEW_FIELD = b"\x00\x00\x00\x2a"  # an int32 a v5 might add


def _as_v5(record: SourceRecord) -> SourceRecord:
    rec = decode_record(record.key, record.value)
    if not isinstance(rec.value, GroupMetadataValue):
        return record
    v4 = encode_value(rec.value, 4)
    _, end = decode_prefix(GROUP_METADATA_VALUE, 4, v4, 2)
    v5 = b"\x00\x05" + v4[2:end] + NEW_FIELD + v4[end:]
    return dataclasses.replace(record, value=v5)


def _newer(findings: list[object]) -> list[object]:
    return [f for f in findings if getattr(f, "kind", None) == "newer_record_version"]


def test_the_job_step_judges_newer_records_and_keeps_their_bytes() -> None:
    records, _ = scenario_records("incidents/kafka_7026.json")
    before = run_group("kafka-7026", records, NOW)
    newer = [_as_v5(r) for r in records]
    assert newer != records
    after = run_group("kafka-7026", newer, NOW)
    kinds = sorted(f.kind for f in after.rows["findings"])
    assert kinds == sorted([*(f.kind for f in before.rows["findings"]), "newer_record_version"])
    [info] = _newer(after.rows["findings"])
    assert info.severity == "info"
    assert "group_metadata value version 5" in info.detail and "version 4" in info.detail
    evidence = json.loads(info.evidence)
    assert evidence["record_type"] == "group_metadata" and evidence["version"] == 5
    assert evidence["known_version"] == 4
    assert bytes.fromhex(evidence["unread_hex"]).startswith(NEW_FIELD)
    # Judged as before: the same snapshots, read from the newer bytes.
    assert [s.generation for s in after.rows["group_snapshots"]] == [
        s.generation for s in before.rows["group_snapshots"]
    ]
    # The first newer record's raw bytes kept, once for the finding.
    [kept] = after.rows["quarantine"]
    first = next(r for r in newer if r.value is not None and r.value[:2] == b"\x00\x05")
    assert (kept.error_kind, kept.key, kept.value) == ("newer_version", first.key, first.value)
    assert (kept.source_partition, kept.source_offset) == (first.partition, first.offset)
    assert kept.byte_offset == len(first.value) - len(NEW_FIELD) - 1  # the new field's start
    assert "quarantine" not in before.rows


def test_analyze_raises_it_once_per_group_type_and_version_from_raw_and_decoded_lines() -> None:
    key = encode_key(OffsetCommitKey("orders", "t", 0))
    v4 = encode_value(OffsetCommitValue(42, "", 1_700_000_000_000), 4)
    v5 = b"\x00\x05" + v4[2:-1] + NEW_FIELD + v4[-1:]

    def raw(offset: int, value: bytes) -> dict[str, object]:
        return {
            "key": base64.b64encode(key).decode(),
            "value": base64.b64encode(value).decode(),
            "topic": "__consumer_offsets",
            "partition": 7,
            "offset": offset,
            "timestamp": 1_700_000_000_000 + offset,
        }

    lines = [raw(0, v5), raw(1, v5), raw(2, v4)]
    from_raw = [f for line in lines for f in Analyzer().feed(line)]
    analyzer = Analyzer()
    once = [f for line in lines for f in analyzer.feed(line)]
    decoded = Analyzer()
    from_decoded = [
        f
        for line in lines
        for f in decoded.feed(
            to_json_dict(
                decode_record(
                    key,
                    base64.b64decode(str(line["value"])),
                    topic="__consumer_offsets",
                    partition=7,
                    offset=int(str(line["offset"])),
                    timestamp=int(str(line["timestamp"])),
                )
            )
        )
    ]
    assert len(_newer(from_raw)) == 2  # each new Analyzer raises it afresh
    [found] = _newer(once)
    [same] = _newer(from_decoded)
    assert found.finding_id == same.finding_id
    assert found.to_state() == same.to_state()
    assert found.group == "orders" and found.source.offset == 0
    assert "offset_commit value version 5" in found.detail
    assert found.evidence["unread_bytes"] == len(NEW_FIELD) + 1
