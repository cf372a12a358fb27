"""The job's per-group step: records -> rows of every table, state carried across batches.

Records are the scenario library's encoded bytes, decoded by the step as in the job; the Spark
tests run the same step inside Spark.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from groupwatch.config import load
from groupwatch.group_state import SavedGroupState
from groupwatch.processing import GroupResult, SourceRecord, process_group
from groupwatch.tables import PARTITION_OWNERSHIP
from tests.scenario_groups import run_group, scenario_records

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def run(records: list[SourceRecord], state: Any = None) -> GroupResult:
    return run_group("kafka-7026", records, NOW, state)


def test_kafka_7026_rows_and_findings() -> None:
    records, by_pos = scenario_records("incidents/kafka_7026.json")
    result = run(records)
    snaps = result.rows["group_snapshots"]
    assert [s.generation for s in snaps] == [1, 2, 3, 4]
    assert [s.member_count for s in snaps] == [1, 2, 1, 2]
    members = result.rows["member_assignments"]
    assert len(members) == 6
    last = [m for m in members if m.generation == 4]
    assert {m.member_id for m in last} == {"C1-1", "C2-1"}
    assert all(m.claim == [{"topic": "test", "partitions": [0]}] for m in last)
    kinds = {(f.kind, f.generation) for f in result.rows["findings"]}
    assert ("assignment_overlap", 4) in kinds
    overlap = next(f for f in result.rows["findings"] if f.kind == "assignment_overlap")
    assert json.loads(overlap.evidence)  # evidence travels as a JSON string
    assert overlap.detected_at == NOW
    # History: C1-1 owned test-0 from gen 1 to 3; C2-1 from 3 on (an overlap keeps the first).
    own = [
        (r.member_id, r.from_generation, r.to_generation)
        for r in result.rows["partition_ownership"]
    ]
    assert ("C1-1", 1, 3) in own and ("C2-1", 3, None) in own


def test_batching_does_not_change_the_outcome() -> None:
    """Findings are a function of the record sequence, whatever the micro-batch boundaries."""
    records, by_pos = scenario_records("incidents/kafka_7026.json")
    whole = run(records)
    state = None
    pieces: dict[str, list[Any]] = {}
    for chunk in (records[:1], records[1:3], records[3:]):
        part = run(chunk, state)
        state = SavedGroupState.decode(part.state.encode())  # crosses batches as text
        for table, rows in part.rows.items():
            pieces.setdefault(table, []).extend(rows)
    for table in ("findings", "group_snapshots", "member_assignments"):
        assert pieces[table] == whole.rows[table], table

    # The table upserts on its key, so compare what the table would hold.
    def upserted(rows: list[Any]) -> list[str]:
        return sorted(
            map(
                str,
                {tuple(getattr(r, k) for k in PARTITION_OWNERSHIP.key): r for r in rows}.values(),
            )
        )

    assert upserted(pieces["partition_ownership"]) == upserted(whole.rows["partition_ownership"])
    assert state == SavedGroupState.decode(whole.state.encode())


def test_tombstone_closes_history_and_decode_errors_are_quarantined() -> None:
    records, by_pos = scenario_records("kinds/decode_error.json")
    result = run_group("g", records, NOW)
    quarantined = result.rows.get("quarantine", [])
    # Each quarantine row carries its record's own bytes.
    raw = {(r.partition, r.offset): (r.key, r.value) for r in records}
    assert quarantined and all(
        (q.key, q.value) == raw[(q.source_partition, q.source_offset)] for q in quarantined
    )
    # One whole record and one member's subscription: both kept, with their raw bytes.
    assert sorted((q.member_id or "", q.error_kind) for q in quarantined) == [
        ("", "unsupported_version"),
        (
            "M2-1",
            by_pos[(records[1].partition, records[1].offset)]["value"]["members"][1][
                "subscription_error"
            ]["kind"],
        ),
    ]
    assert [s.decode_error for s in result.rows["group_snapshots"]] == [
        "unsupported_version",
        None,
    ]
    assert any(f.kind == "decode_error" for f in result.rows["findings"])


def test_an_interval_opened_and_closed_in_one_batch_is_one_row() -> None:
    records, by_pos = scenario_records("incidents/kafka_7026.json")
    rows = run(records).rows["partition_ownership"]
    keys = [(r.member_id, r.from_generation) for r in rows]
    assert len(keys) == len(set(keys))
    assert ("C1-1", 1, 3) in {(r.member_id, r.from_generation, r.to_generation) for r in rows}


def test_a_group_whose_last_record_is_a_tombstone_is_marked_deleted() -> None:
    records, by_pos = scenario_records("kinds/generation_regression.json")
    group = by_pos[(records[0].partition, records[0].offset)]["key"]["group"]
    tombstone = next(
        i for i, r in enumerate(records) if by_pos[(r.partition, r.offset)].get("tombstone")
    )

    def through(upto: int) -> bool:
        return run_group(group, records[:upto], NOW).deleted

    assert not through(tombstone)
    assert through(tombstone + 1)  # state maintenance may forget the group
    assert not through(tombstone + 2)  # the name is in use again


def test_a_key_that_does_not_decode_joins_the_group_it_was_routed_to() -> None:
    """The JVM routes a record by what it can read of the key; when the decoder then rejects
    the key, the record still belongs to that group (its state, quarantine row and finding)."""
    from groupwatch.protocol import OffsetCommitKey, encode_key

    detector = load(None, env={}).detect.detector()
    key = encode_key(OffsetCommitKey("g", "orders", 3)) + b"\x00"  # a byte too many
    records = [SourceRecord(key, b"\x00\x03", "mirror", 0, 7, 1_700_000_000_000)]
    state = process_group(
        "g",
        None,
        [],
        detector=detector,
        detected_at=NOW,
        commits=[("orders", 5)],
    ).state
    result = process_group("g", state, records, detector=detector, detected_at=NOW)
    [row] = result.rows["quarantine"]
    assert (row.group, row.error_kind, row.field_path) == ("g", "trailing_bytes", "key")
    assert row.key == key
    assert [(f.group, f.kind) for f in result.rows["findings"]] == [("g", "decode_error")]


def test_a_stuck_rebalance_from_commits_of_earlier_batches_and_the_brokers_view() -> None:
    """The job's step: the group's last commit comes from ``group_offsets`` (earlier batches'
    commits never reach Python), the brokers' view after the batch's records."""
    from groupwatch.detect.model import BrokerView
    from groupwatch_dev.scenarios.builder import BASE_TIME_MS

    records, _ = scenario_records("kinds/rebalance_stuck.json")
    mine = [r for r in records if r.key is not None and b"kind-rebalance-stuck" in r.key]
    mine = [r for r in mine if b"kind-rebalance-stuck-healthy" not in r.key]
    metadata = [r for r in mine if r.key is not None and r.key[:2] == b"\x00\x02"]
    first, last = metadata[0], metadata[-1]
    group = "kind-rebalance-stuck"
    detector = load(None, env={}).detect.detector()

    def step(
        records: list[SourceRecord], state: Any, commits: Any = (), view: Any = None
    ) -> GroupResult:
        return process_group(
            group,
            state,
            records,
            detector=detector,
            detected_at=NOW,
            commits=commits,
            view=view,
        )

    # Generation 7, then commits the JVM aggregated (last at t=20 s), then generation 13.
    one = step([first], None)
    state = SavedGroupState.decode(one.state.encode())
    committed = [("t", 1, BASE_TIME_MS + 20_000)]
    two = step([last], state, committed)
    [f] = [f for f in two.rows["findings"] if f.kind == "rebalance_stuck"]
    assert f.generation == 7 and json.loads(f.evidence)["stuck_for_ms"] == 162_000
    # Without the commits' time the group is not known to have committed: nothing.
    assert not [
        f for f in step([last], state).rows.get("findings", []) if f.kind == "rebalance_stuck"
    ]

    # The brokers' view: two looks, 330 s and 360 s after generation 7.
    def look(at_s: int) -> BrokerView:
        return BrokerView(group, "CompletingRebalance", ("A-1 (a)",), BASE_TIME_MS + at_s * 1000)

    a = step([], state, committed, look(330))
    assert not a.rows.get("findings")
    b = step([], SavedGroupState.decode(a.state.encode()), committed, look(360))
    [g] = b.rows["findings"]
    assert (g.kind, g.generation, json.loads(g.evidence)["broker_state"]) == (
        "rebalance_stuck",
        7,
        "CompletingRebalance",
    )


def test_deleted_topics_one_record_a_batch_with_the_jobs_commit_hints() -> None:
    """The job's step, one record per batch and every batch told the group's earlier commits
    (as the job reads them from group_offsets, without their time), raises what analyze raises:
    a deleted or re-created topic's old commits count nothing anew."""
    from groupwatch.detect import Analyzer

    records, by_pos = scenario_records("kinds/subscribed_topic_missing.json")
    detector = load(None, env={}).detect.detector()
    analyzer = Analyzer(detector)
    expected = sorted(
        f.finding_id
        for pos in sorted(by_pos, key=lambda p: by_pos[p]["timestamp"])
        for f in analyzer.feed(by_pos[pos])
    )
    states: dict[str, Any] = {}
    commits: dict[str, dict[str, int]] = {}
    found = []
    for rec in sorted(records, key=lambda r: r.timestamp_ms):
        line = by_pos[(rec.partition, rec.offset)]
        group = line["group"]
        hints = sorted(commits.get(group, {}).items())
        result = process_group(
            group,
            states.get(group),
            [rec],
            detector=detector,
            detected_at=NOW,
            commits=hints,
        )
        states[group] = SavedGroupState.decode(result.state.encode())
        found += [f.finding_id for f in result.rows.get("findings", [])]
        if line["record_type"] == "offset_commit":
            topic, partition = line["key"]["topic"], line["key"]["partition"]
            seen = commits.setdefault(group, {})
            seen[topic] = max(partition, seen.get(topic, -1))
    assert expected and sorted(found) == expected


def test_a_share_partitions_tombstone_is_a_removal_row_of_its_state() -> None:
    """The share coordinator's tombstone (the share group deleted): the partition's
    ``share_partition_state`` row of the batch has its key and no state, the table's
    ``removed_when``, so the MERGE deletes the row; a later state is a row again."""
    import uuid

    from groupwatch.protocol import encode_key, encode_value
    from groupwatch.protocol.models import ShareSnapshotKey, ShareSnapshotValue
    from groupwatch.protocol.specs import SHARE_STATE_TOPIC
    from groupwatch.tables import SHARE_PARTITION_STATE

    topic_id = uuid.UUID("6a3b1f1e-0c1d-4f7e-9a55-0d5b8a2c3e44")
    key = encode_key(ShareSnapshotKey("queue", topic_id, 0))
    snap = encode_value(ShareSnapshotValue(0, 1, 0, -1, 900, 900, (), -1), 0)

    def record(value: bytes | None, offset: int) -> SourceRecord:
        return SourceRecord(key, value, SHARE_STATE_TOPIC, 0, offset, 1_700_000_000_000 + offset)

    detector = load(None, env={}).detect.detector()

    def rows(*records: SourceRecord) -> list[Any]:
        result = process_group("queue", None, list(records), detector=detector, detected_at=NOW)
        return list(result.rows[SHARE_PARTITION_STATE.name])

    [kept] = rows(record(snap, 0))
    assert kept.start_offset is not None and kept.partition == 0
    [removed] = rows(record(snap, 0), record(None, 1))
    assert (removed.group, removed.topic_id, removed.partition) == (
        kept.group,
        kept.topic_id,
        kept.partition,
    )
    assert removed.start_offset is None and removed.source["offset"] == 1
    assert SHARE_PARTITION_STATE.removed_when == "s.start_offset IS NULL"
    [again] = rows(record(snap, 0), record(None, 1), record(snap, 2))
    assert again.start_offset == kept.start_offset and again.source["offset"] == 2
