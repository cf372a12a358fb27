"""The JSON form of the assignor's input and output (the ``groupwatch assign`` contract).

Input::

    {"protocol": "sticky" | "cooperative-sticky",
     "partitions_per_topic": {"t0": 2, "t1": 3},
     "members": [{"member_id": "C0", "topics": ["t0", "t1"],
                  "owned_partitions": [{"topic": "t0", "partitions": [0]}],
                  "generation": 5 | null, "rack_id": null}, ...],
     "partition_racks": {"t0": [["a", "b"], ["b", "c"]]}}   # optional: replica racks

Members are listed in the order the leader saw them.  Output::

    {"assignment": {"C0": [{"topic": "t0", "partitions": [0]}], ...},
     "withheld": [{"topic": ..., "partitions": [...]}]}

with topic-partition lists sorted by topic, partitions ascending.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.assignor.model import (
    PROTOCOLS,
    AssignmentResult,
    AssignorInputError,
    MemberSubscription,
    TopicPartition,
)
from groupwatch.assignor.sticky import PartitionRacks


@dataclass(frozen=True, slots=True)
class AssignInput:
    protocol: str
    partitions_per_topic: dict[str, int]
    members: tuple[MemberSubscription, ...]
    partition_racks: PartitionRacks | None = None


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise AssignorInputError(message)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_input(doc: Any) -> AssignInput:
    """Validate the decoded JSON document and turn it into the assignor's input."""
    _require(isinstance(doc, dict), "input must be a JSON object")
    protocol = doc.get("protocol")
    _require(
        protocol in PROTOCOLS, f"'protocol' must be one of {list(PROTOCOLS)}, got {protocol!r}"
    )
    ppt = doc.get("partitions_per_topic")
    _require(isinstance(ppt, dict), "'partitions_per_topic' must be an object of topic -> count")
    for topic, count in ppt.items():
        _require(_is_int(count), f"partition count of topic {topic!r} must be an integer")
        _require(count >= 0, f"topic {topic!r} has a negative partition count {count}")
    raw_members = doc.get("members")
    _require(isinstance(raw_members, list), "'members' must be a list")
    members = []
    for i, m in enumerate(raw_members):
        where = f"members[{i}]"
        _require(isinstance(m, dict), f"{where} must be an object")
        mid = m.get("member_id")
        _require(isinstance(mid, str), f"{where}.member_id must be a string")
        topics = m.get("topics", [])
        _require(
            isinstance(topics, list) and all(isinstance(t, str) for t in topics),
            f"{where}.topics must be a list of strings",
        )
        owned: list[TopicPartition] = []
        for j, entry in enumerate(m.get("owned_partitions") or []):
            at = f"{where}.owned_partitions[{j}]"
            _require(isinstance(entry, dict), f"{at} must be an object")
            topic = entry.get("topic")
            parts = entry.get("partitions")
            _require(isinstance(topic, str), f"{at}.topic must be a string")
            _require(
                isinstance(parts, list) and all(_is_int(p) for p in parts),
                f"{at}.partitions must be a list of integers",
            )
            owned.extend(TopicPartition(topic, p) for p in parts)
        gen = m.get("generation")
        _require(gen is None or _is_int(gen), f"{where}.generation must be an integer or null")
        rack = m.get("rack_id")
        _require(rack is None or isinstance(rack, str), f"{where}.rack_id must be a string or null")
        members.append(MemberSubscription(mid, tuple(topics), tuple(owned), gen, rack))
    racks = doc.get("partition_racks")
    if racks is not None:
        _require(isinstance(racks, dict), "'partition_racks' must be an object of topic -> lists")
        for topic, rows in racks.items():
            _require(
                isinstance(rows, list)
                and all(
                    isinstance(r, list) and all(x is None or isinstance(x, str) for x in r)
                    for r in rows
                ),
                f"partition_racks[{topic!r}] must be a list (per partition) of lists of racks",
            )
    return AssignInput(protocol, dict(ppt), tuple(members), racks)


def group_partitions(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """``[{"topic": t, "partitions": [...]}, ...]`` sorted by topic, partitions ascending."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in tps:
        by_topic.setdefault(topic, []).append(p)
    return [{"topic": t, "partitions": sorted(by_topic[t])} for t in sorted(by_topic)]


def result_to_json(result: AssignmentResult) -> dict[str, Any]:
    assignment: Mapping[str, Any] = {
        m: group_partitions(tps) for m, tps in result.assignment.items()
    }
    return {"assignment": dict(assignment), "withheld": group_partitions(result.withheld)}
