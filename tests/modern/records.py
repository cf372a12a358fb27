"""The modern groups' own records, decoded, and what the tests read from them: the records of
one group in log order, topic ids' names, the group's state after its last record, and when a
quiescent point lets every pending check of the groups be decided."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.decoded import decode_raw

#: record type ids of KIP-848 consumer groups (ConsumerGroup*): metadata, partition metadata,
#: member metadata, target assignment metadata, target member, current member assignment
CONSUMER_GROUP_TYPES = (3, 4, 5, 6, 7, 8)
COMMITS = (0, 1)
REGULAR_EXPRESSION = 16

# The modern checks' defaults (notes: modern-spec); the analyzer's own values win once it has
# them, so the clock below always covers what it would wait for.
_DEFAULTS = {
    "modern_confirm_ms": 10_000,
    "revocation_grace_ms": 30_000,
    "static_session_timeout_ms": 45_000,
}
#: Revocation deadlines are waited for only where the member's rebalance timeout is this short
#: (the fenced group's); the default five minutes would make the test wait that long.
SHORT_REBALANCE_TIMEOUT_MS = 10_000


def threshold(name: str) -> int:
    value = getattr(DetectorConfig(), name, None)
    return value if isinstance(value, int) else _DEFAULTS[name]


def data(record: Mapping[str, Any]) -> dict[str, Any]:
    """A consumer-group record's value fields (``{}`` for a tombstone)."""
    value = record.get("value") or {}
    inner = value.get("data", value)
    return dict(inner) if isinstance(inner, Mapping) else {}


def member_id(record: Mapping[str, Any]) -> str | None:
    key = record.get("key") or {}
    return key.get("member_id") if isinstance(key, Mapping) else None


def tps(entries: Iterable[Mapping[str, Any]] | None) -> set[tuple[str, int]]:
    """``[{"topic_id": .., "partitions": [..]}]`` -> {(topic id, partition)}."""
    return {(e["topic_id"], p) for e in entries or () for p in e["partitions"]}


@dataclass(frozen=True)
class Dump:
    """Every record of ``__consumer_offsets`` decoded, with the modern groups' records apart."""

    decoded: list[dict[str, Any]] = field(repr=False)

    @classmethod
    def of(cls, raw: Sequence[Mapping[str, Any]]) -> Dump:
        return cls([decode_raw(r) for r in raw])

    def group(self, group: str) -> list[dict[str, Any]]:
        """The group's records in log order (one group lives on one partition)."""
        return [d for d in self.decoded if d.get("group") == group]

    def topic_names(self) -> dict[str, str]:
        """Topic id -> name, from the OffsetCommitValue v4 records' ``topic_id``."""
        names: dict[str, str] = {}
        for d in self.decoded:
            if d["record_type_id"] in COMMITS and d.get("value"):
                tid = d["value"].get("topic_id")
                if tid:
                    names[tid] = d["key"]["topic"]
        return names


def type_counts(records: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Records per type, tombstones apart: ``{"8": n, "8-": m, ...}``."""
    return Counter(f"{d['record_type_id']}{'-' if d['tombstone'] else ''}" for d in records)


@dataclass
class GroupState:
    """A consumer group as its records leave it (tombstones remove their key's state)."""

    group_epoch: int | None = None
    assignment_epoch: int | None = None
    members: dict[str, dict[str, Any]] = field(default_factory=dict)  # 5
    targets: dict[str, set[tuple[str, int]]] = field(default_factory=dict)  # 7
    current: dict[str, dict[str, Any]] = field(default_factory=dict)  # 8
    regexes: dict[str, list[str]] = field(default_factory=dict)  # 16


def replay(records: Iterable[Mapping[str, Any]]) -> GroupState:
    state = GroupState()
    for d in records:
        t, gone, v = d["record_type_id"], d["tombstone"], data(d)
        mid = member_id(d) or ""
        if t == 3:
            state.group_epoch = None if gone else v["epoch"]
        elif t == 6:
            state.assignment_epoch = None if gone else v["assignment_epoch"]
        elif t == 5:
            _put(state.members, mid, None if gone else v)
        elif t == 7:
            _put(state.targets, mid, None if gone else tps(v["topic_partitions"]))
        elif t == 8:
            _put(state.current, mid, None if gone else v)
        elif t == REGULAR_EXPRESSION:
            regex = d["key"]["regular_expression"]
            _put(state.regexes, regex, None if gone else list(v["topics"]))
        elif t == 2 and gone:
            # a classic group converted: the consumer group starts from nothing
            state = GroupState()
    return state


def _put(table: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value


def steady_state_problems(
    records: Sequence[Mapping[str, Any]], names: Mapping[str, str], partitions: Mapping[str, int]
) -> list[str]:
    """Why the group's last records do not show a consumer group at rest: every member STABLE
    at the assignment epoch, which equals the group epoch, holding exactly its target, nothing
    pending, and every partition of ``partitions`` (topic name -> count) held exactly once."""
    s = replay(records)
    out: list[str] = []
    if s.group_epoch is None or s.group_epoch != s.assignment_epoch:
        out.append(f"group epoch {s.group_epoch} != assignment epoch {s.assignment_epoch}")
    if not (set(s.members) == set(s.targets) == set(s.current)):
        out.append(
            f"members {sorted(s.members)}, targets {sorted(s.targets)} and current "
            f"assignments {sorted(s.current)} differ"
        )
    held: list[tuple[str, int]] = []
    for mid, cur in sorted(s.current.items()):
        assigned = tps(cur["assigned_partitions"])
        held.extend(assigned)
        if cur["state"] != 0 or cur["member_epoch"] != s.assignment_epoch:
            out.append(
                f"{mid}: state {cur['state']} at epoch {cur['member_epoch']} "
                f"(assignment epoch {s.assignment_epoch})"
            )
        if cur["partitions_pending_revocation"]:
            out.append(f"{mid}: still revoking {cur['partitions_pending_revocation']}")
        if assigned != s.targets.get(mid):
            out.append(f"{mid}: holds {sorted(assigned)}, target {sorted(s.targets.get(mid, ()))}")
    named = sorted((names.get(tid, tid), p) for tid, p in held)
    expected = sorted((t, p) for t, n in partitions.items() for p in range(n))
    if named != expected:
        out.append(f"the members hold {named}, not each of {expected} once")
    return out


@dataclass(frozen=True)
class Deadline:
    """The stream time a group's partition must reach for every check to be decided."""

    time_ms: int
    why: str


def deadline(records: Sequence[Mapping[str, Any]]) -> Deadline:
    """The latest time at which a check that started on one of these records could still be
    undecided: the confirmation delay after the last record; the static-member deadline after
    every MemberEpoch -2 record and the revocation deadline after every UNREVOKED record of a
    member with a short rebalance timeout (states a healthy group holds for a moment only, so
    a check that missed their end would fire by then)."""
    confirm = threshold("modern_confirm_ms")
    rebalance_timeouts: dict[str, int] = {}
    best = Deadline(0, "no record")
    for d in records:
        if d["record_type_id"] in COMMITS:
            continue
        ts = d["timestamp"]
        cands = [Deadline(ts + confirm, f"confirmation after the record at offset {d['offset']}")]
        v, mid = data(d), member_id(d) or ""
        if d["record_type_id"] == 5 and v:
            rebalance_timeouts[mid] = v["rebalance_timeout_ms"]
        if d["record_type_id"] == 8 and v:
            if v["member_epoch"] == -2:
                cands.append(
                    Deadline(
                        ts + threshold("static_session_timeout_ms"),
                        f"static member away since offset {d['offset']}",
                    )
                )
            timeout = rebalance_timeouts.get(mid, SHORT_REBALANCE_TIMEOUT_MS + 1)
            if v["state"] == 1 and timeout <= SHORT_REBALANCE_TIMEOUT_MS:
                cands.append(
                    Deadline(
                        ts + timeout + threshold("revocation_grace_ms"),
                        f"revocation at offset {d['offset']}",
                    )
                )
        for c in cands:
            if c.time_ms > best.time_ms:
                best = c
    return best


def groups_by_partition(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return {d["group"]: d["partition"] for d in records if d.get("group")}


def latest_by_partition(records: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """The newest record time per ``__consumer_offsets`` partition (its stream clock)."""
    out: dict[int, int] = defaultdict(int)
    for d in records:
        out[d["partition"]] = max(out[d["partition"]], d["timestamp"])
    return dict(out)
