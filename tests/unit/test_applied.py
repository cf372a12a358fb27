"""What the engine reports it applied (``Analyzer.apply``), which the job's rows are built from:
a classic snapshot's members as the engine converted them, a modern record with its group's
state after it, and nothing for a record that broke the engine's contract."""

from __future__ import annotations

from groupwatch.config import load
from groupwatch.detect import Analyzer
from groupwatch.detect.modern.model import RecordRole
from groupwatch.processing import decode
from groupwatch.protocol import DecodedRecord
from groupwatch.protocol.models import ConsumerGroupMetadataKey
from tests.modern_log import G, Log
from tests.scenario_groups import scenario_records


def analyzer() -> Analyzer:
    return Analyzer(load(None, env={}).detect.detector())


def test_a_classic_snapshot_reports_the_members_the_engine_judged() -> None:
    records, _ = scenario_records("incidents/kafka_7026.json")
    engine = analyzer()
    for record in records:
        rec = decode(record)
        applied = engine.apply(rec, "kafka-7026")
        assert applied.modern is None
        assert applied.members is not None
        assert [m.member_id for m in applied.members] == [m.member_id for m in rec.members]


def test_a_modern_record_reports_the_groups_state_after_it() -> None:
    log = Log().member("A", 1).epoch(1, 1).target("A", [0, 1], 1).current("A", 1, 0, [0, 1], 1)
    engine = analyzer()
    roles = []
    for record in log.records():
        applied = engine.apply(decode(record), G)
        assert applied.members is None and applied.modern is not None
        assert applied.modern.state.source.offset == record.offset
        assert applied.modern.state is engine.modern(G)
        roles.append(applied.modern.record.role)
    assert roles[-1] is RecordRole.CURRENT
    assert RecordRole.GROUP_EPOCH in roles


def test_a_record_that_breaks_the_contract_is_a_finding_and_no_state_change() -> None:
    # A current-assignment tombstone whose key names no member (a group's key).
    broken = DecodedRecord(
        8,
        "ConsumerGroupCurrentMemberAssignment",
        key=ConsumerGroupMetadataKey(G),
        tombstone=True,
        topic="__consumer_offsets",
        partition=0,
        offset=7,
        timestamp=1_000,
    )
    engine = analyzer()
    applied = engine.apply(broken, G)
    assert applied.modern is None and applied.members is None
    assert [f.kind for f in applied.findings] == ["decode_error"]
    assert applied.findings[0].evidence["error_kind"] == "contract"
    assert engine.modern(G) is None


def test_feed_record_gives_the_findings_apply_reports() -> None:
    records, _ = scenario_records("incidents/kafka_7026.json")
    one, other = analyzer(), analyzer()
    for record in records:
        rec = decode(record)
        assert one.feed_record(rec, "kafka-7026") == list(other.apply(rec, "kafka-7026").findings)
