"""A generation stored before its SyncGroup (no member has an assignment yet) is not judged on
assignment; its claims still are."""

from __future__ import annotations

from typing import Any

from groupwatch.detect import Analyzer, DetectorConfig


def line(assignment: dict[str, Any] | None, owned: list[int]) -> dict[str, Any]:
    sub = {
        "version": 3,
        "topics": ["t"],
        "owned_partitions": [{"topic": "t", "partitions": owned}] if owned else [],
        "generation_id": 1,
        "rack_id": None,
        "user_data": None,
    }
    member = {
        "member_id": "m1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/h",
        "rebalance_timeout": 1,
        "session_timeout": 1,
        "subscription": sub,
        "assignment": assignment,
        "subscription_error": None,
        "assignment_error": None,
    }
    return {
        "topic": "__consumer_offsets",
        "partition": 0,
        "offset": 0,
        "timestamp": 1,
        "record_type": "group_metadata",
        "record_type_id": 2,
        "group": "g",
        "tombstone": False,
        "key": {"group": "g"},
        "value": {
            "version": 3,
            "protocol_type": "consumer",
            "generation": 2,
            "protocol": "range",
            "leader": "m1",
            "current_state_timestamp": 1,
            "members": [member],
        },
        "error": None,
    }


def kinds(assignment: dict[str, Any] | None) -> set[str]:
    """What the record raises, or holds for confirmation, and what a minute later raises."""
    analyzer = Analyzer(DetectorConfig(partitions_per_topic={"t": 2}))
    found = {f.kind for f in analyzer.feed(line(assignment, [0, 1]))}
    found |= {p.finding.kind for _, p in analyzer.pending()}
    later = {**line(None, []), "group": "other", "key": {"group": "other"}, "timestamp": 60_001}
    return found | {f.kind for f in analyzer.feed(later)}


def test_pre_sync_record_is_not_judged_on_assignment() -> None:
    assert "unassigned_partitions" not in kinds(None)


def test_an_empty_assignment_after_sync_still_is() -> None:
    empty = {"version": 3, "assigned_partitions": [], "user_data": None}
    assert "unassigned_partitions" in kinds(empty)
