"""The share-state scenario library (``tests/scenarios/share/*.json``) through analyze.

A scenario is a share group's ``__share_group_state`` history::

    {"name", "summary", "group": g, "topic": t,
     "states": [{"at": s, "partition": p, "snapshot"?: false, "start": n, "count"?: -1,
                 "state_epoch"?: 0, "leader_epoch"?: 0,
                 "batches"?: [[first, last, "available"|"acknowledged"|"archived", count]]}],
     "group_partition"?: n, "group_writes"?: [WRITE], "config"?: {DetectorConfig field: value},
     "expect": [MATCH], "expect_evidence"?: [{"kind"?, "partition", "text"?, "evidence"?: {..},
     "archived_offsets"?, "delivery_counts"?}], "forbid": [MATCH], "exhaustive": true}

``group_writes`` are the share group's own records in ``__consumer_offsets`` partition
``group_partition`` (members, targets, current assignments: who is assigned which partition),
written as the modern-group library writes them (``tests/scenarios/modern_records.py``, type
``share``, the same topic id), and fed in time order with the states (at one time, the group's
records first).

Each state is one record of the share coordinator (a ShareSnapshot when ``snapshot``, else a
ShareUpdate), its bytes written by Kafka's own ``ShareCoordinatorRecordSerde`` (the oracle's
``"serde": "share"``), one JVM run for the library.  The records are fed to the Analyzer as raw
lines of ``__share_group_state`` and as ``groupwatch decode`` lines: the same findings either
way, judged with the expect / forbid / exhaustive rules of the other libraries.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.protocol.command import decode_line
from groupwatch.protocol.jsonview import kafka_uuid
from groupwatch.protocol.specs import SHARE_STATE_TOPIC
from tests.scenarios.modern_records import build
from tests.scenarios.test_scenarios import check
from tests.vectors.build import java_harness

pytestmark = pytest.mark.oracle  # the records come from Kafka's serialisers (one JVM run)

LIBRARY = Path(__file__).resolve().parent / "share"
DOCS = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(LIBRARY.glob("*.json"))}
BASE_TIME_MS = 1_700_000_000_000
STATES = {"available": 0, "acknowledged": 2, "archived": 4}
NAMESPACE = uuid.UUID("0d4b2f3e-9a57-4c1b-8e22-5b7a1c9e6f30")


def topic_id(doc: dict[str, Any]) -> str:
    return kafka_uuid(uuid.uuid5(NAMESPACE, str(doc["topic"])))


def _request(doc: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    snapshot = bool(s.get("snapshot"))
    time_ms = BASE_TIME_MS + round(float(s["at"]) * 1000)
    value: dict[str, Any] = {
        "snapshotEpoch": 0,
        "leaderEpoch": int(s.get("leader_epoch", 0)),
        "startOffset": int(s["start"]),
        "stateBatches": [
            {
                "firstOffset": first,
                "lastOffset": last,
                "deliveryState": STATES[state],
                "deliveryCount": count,
            }
            for first, last, state, count in s.get("batches", [])
        ],
    }
    if int(s.get("count", -1)) != -1:  # -1: left out, as a broker before 4.2 writes it
        value["deliveryCompleteCount"] = int(s["count"])
    if snapshot:
        value.update(
            stateEpoch=int(s.get("state_epoch", 0)), createTimestamp=time_ms, writeTimestamp=time_ms
        )
    key = {"groupId": doc["group"], "topicId": topic_id(doc), "partition": int(s["partition"])}
    return {
        "op": "record",
        "serde": "share",
        "type": 0 if snapshot else 1,
        "version": 0,
        "key": key,
        "value": value,
    }


def _group_scenario(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "partition": int(doc["group_partition"]),
        "group": doc["group"],
        "type": "share",
        "topics": {doc["topic"]: str(uuid.uuid5(NAMESPACE, str(doc["topic"])))},
        "writes": doc["group_writes"],
    }


@pytest.fixture(scope="module")
def raw() -> dict[str, list[dict[str, Any]]]:
    with_group = {name: _group_scenario(doc) for name, doc in DOCS.items() if "group_writes" in doc}
    groups = build(with_group) if with_group else {}
    flat = [(name, s) for name, doc in DOCS.items() for s in doc["states"]]
    answers = java_harness([_request(DOCS[name], s) for name, s in flat])
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in DOCS}
    for (name, s), ans in zip(flat, answers, strict=True):
        assert "error" not in ans, (name, s, ans)
        lines = out[name]
        lines.append(
            {
                "key": base64.b64encode(bytes.fromhex(ans["key_hex"])).decode(),
                "value": base64.b64encode(bytes.fromhex(ans["value_hex"])).decode(),
                "topic": SHARE_STATE_TOPIC,
                "partition": 11,
                "offset": len(lines),
                "timestamp": BASE_TIME_MS + round(float(s["at"]) * 1000),
            }
        )
    for name, lines in groups.items():
        # Stable: at one time the group's records come before the state's.
        out[name] = sorted([*lines, *out[name]], key=lambda line: int(line["timestamp"]))
    return out


def findings_of(doc: dict[str, Any], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    config = DetectorConfig(topic_names={topic_id(doc): str(doc["topic"])}, **doc.get("config", {}))
    analyzer = Analyzer(config)
    found = [f for line in lines for f in analyzer.feed(line)]
    found.extend(analyzer.finish())
    return [f.to_dict() for f in found]


@pytest.mark.parametrize("name", sorted(DOCS))
def test_share_scenario(name: str, raw: dict[str, list[dict[str, Any]]]) -> None:
    doc = DOCS[name]
    found = findings_of(doc, raw[name])
    check(doc, found)
    assert {f["group"] for f in found} <= {doc["group"]}
    for want in doc.get("expect_evidence", []):
        kind = want.get("kind", "share_records_archived")
        [f] = [f for f in found if f["kind"] == kind and f["partition"] == want["partition"]]
        evidence = dict(want.get("evidence", {}))
        for field in ("archived_offsets", "delivery_counts"):
            if field in want:
                evidence[field] = want[field]
        assert {k: f["evidence"].get(k) for k in evidence} == evidence, f["evidence"]
        assert f["evidence"]["topic"] == doc["topic"] and want.get("text", "") in f["detail"]
    # The same records as `groupwatch decode` prints them: the same findings.
    decoded = [decode_line(json.dumps(line)) for line in raw[name]]
    assert [d["error"] for d in decoded] == [None] * len(decoded)
    assert sorted(f["finding_id"] for f in findings_of(doc, decoded)) == sorted(
        f["finding_id"] for f in found
    )


def test_the_library_has_a_healthy_group_and_every_share_kind() -> None:
    from groupwatch.detect.catalogue import CATALOGUE

    share_kinds = {k.name for k in CATALOGUE if k.share}
    expected = {p["kind"] for doc in DOCS.values() for p in doc["expect"]}
    kinds = {
        "share_records_archived",
        "share_partition_stalled",
        "share_delivery_retries",
        "share_new_partition_records_skipped",
    }
    assert expected >= share_kinds == kinds
    assert any(doc["expect"] == [] and doc["exhaustive"] for doc in DOCS.values())


# --- the job's step: process_group, batch after batch ----------------------------------------


def _source_records(lines: list[dict[str, Any]]) -> list[Any]:
    from groupwatch.rows.source import SourceRecord

    return [
        SourceRecord(
            key=base64.b64decode(line["key"]) if line.get("key") is not None else None,
            value=base64.b64decode(line["value"]) if line.get("value") is not None else None,
            topic=str(line["topic"]),
            partition=int(line["partition"]),
            offset=int(line["offset"]),
            timestamp_ms=int(line["timestamp"]),
        )
        for line in lines
    ]


def _job_run(
    doc: dict[str, Any], lines: list[dict[str, Any]], per_batch: int
) -> tuple[list[Any], dict[tuple[str, int], Any], list[Any]]:
    """The scenario through the job's step ``per_batch`` records at a time, the group's state
    saved as text between batches (as ``group_state`` holds it): findings, the newest
    ``share_partition_state`` row per partition, every ``share_partition_history`` row."""
    import datetime as dt

    from groupwatch import processing, tables
    from groupwatch.group_state import SavedGroupState

    config = DetectorConfig(topic_names={topic_id(doc): str(doc["topic"])}, **doc.get("config", {}))
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    records = _source_records(lines)
    saved: str | None = None
    found: list[Any] = []
    latest: dict[tuple[str, int], Any] = {}
    history: list[Any] = []
    for start in range(0, len(records), per_batch):
        state = None if saved is None else SavedGroupState.decode(saved)
        result = processing.process_group(
            doc["group"],
            state,
            records[start : start + per_batch],
            detector=config,
            detected_at=when,
        )
        saved = result.state.encode()
        found += result.rows.get(tables.FINDINGS.name, [])
        history += result.rows.get(tables.SHARE_PARTITION_HISTORY.name, [])
        for row in result.rows.get(tables.SHARE_PARTITION_STATE.name, []):
            latest[(row.topic_id, row.partition)] = row
    return found, latest, history


@pytest.mark.parametrize("name", sorted(DOCS))
@pytest.mark.parametrize("per_batch", [1, 3, 1000])
def test_share_scenario_through_the_job_step(
    name: str, per_batch: int, raw: dict[str, list[dict[str, Any]]]
) -> None:
    """The job's step raises what analyze raises as the records arrive, each finding once,
    however the records are cut into batches (the share state saved between them: without it a
    batch would take a snapshot repeating an archived range for new, and raise it again), and
    its share_partition_state rows are analyze's share state."""
    doc = DOCS[name]
    lines = raw[name]
    config = DetectorConfig(topic_names={topic_id(doc): str(doc["topic"])}, **doc.get("config", {}))
    analyzer = Analyzer(config)
    # What analyze raises at the records (its end of input judges stalls once more, which the
    # job does at the next share record instead).
    expected = [f.finding_id for line in lines for f in analyzer.feed(line)]
    found, latest, history = _job_run(doc, lines, per_batch)
    ids = [f.finding_id for f in found]
    assert len(ids) == len(set(ids)), "a share finding raised twice"
    assert sorted(ids) == sorted(expected)
    share_lines = [line for line in lines if line["topic"] == SHARE_STATE_TOPIC]
    assert len(history) == len(share_lines)
    states = {(s.key.topic_id, s.key.partition): s for s in analyzer.share_states}
    assert set(latest) == set(states)
    columns = (
        "start_offset",
        "state_epoch",
        "in_flight_records",
        "archived_records",
        "max_delivery_count",
    )
    for k, s in states.items():
        want = s.to_row(None, str(doc["topic"]))
        row = latest[k]
        assert {c: getattr(row, c) for c in columns} == {c: want[c] for c in columns}
        assert row.topic == doc["topic"] and row.group == doc["group"]
        assert row.end_offset is None and row.lag_records is None
        assert [[r["first_offset"], r["last_offset"]] for r in row.archived_ranges] == want[
            "archived_ranges"
        ]
        assert row.records_applied == s.records_applied


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_job_step_judges_stalls_on_the_clock_as_analyze_at_its_end(
    name: str, raw: dict[str, list[dict[str, Any]]]
) -> None:
    """A share group whose consumers stop writes nothing: the job wakes it when the stream's
    clock passes a watched partition's stall deadline (``pending_until``) and, in a batch that
    read everything, judges its share partitions at that clock, as ``analyze`` does at its
    input's end: the same findings."""
    import datetime as dt

    from groupwatch import processing, tables
    from groupwatch.group_state import SavedGroupState

    doc = DOCS[name]
    lines = raw[name]
    config = DetectorConfig(topic_names={topic_id(doc): str(doc["topic"])}, **doc.get("config", {}))
    analyzer = Analyzer(config)
    expected = [f.finding_id for line in lines for f in analyzer.feed(line)]
    expected += [f.finding_id for f in analyzer.finish()]
    offsets = [int(x["timestamp"]) for x in lines if x["topic"] != SHARE_STATE_TOPIC]
    clock = max(offsets or [int(x["timestamp"]) for x in lines])
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    first = processing.process_group(
        doc["group"], None, _source_records(lines), detector=config, detected_at=when
    )
    found = list(first.rows.get(tables.FINDINGS.name, []))
    # The batch after: no records of the group, the stream's clock where analyze's input ends.
    state = SavedGroupState.decode(first.state.encode())
    after = processing.process_group(
        doc["group"], state, [], detector=config, detected_at=when, clocks={0: clock},
        quiescent=True,
    )  # fmt: skip
    found += after.rows.get(tables.FINDINGS.name, [])
    assert sorted(f.finding_id for f in found) == sorted(expected)
    stalls = after.rows.get(tables.FINDINGS.name, [])
    if stalls:
        # The group asked to be woken by then: its deadline is no later than the clock.
        assert first.pending_until is not None and first.pending_until[0] <= clock
    # Raised once: the group no longer asks to be woken for it.
    again = processing.process_group(
        doc["group"], SavedGroupState.decode(after.state.encode()), [], detector=config,
        detected_at=when, clocks={0: clock + 1}, quiescent=True,
    )  # fmt: skip
    assert again.rows.get(tables.FINDINGS.name, []) == []
