"""One group's records -> rows for every table: the pure heart of the streaming job.

The Spark job hands each group's records of a micro-batch, in offset order, together with the
group's state from the previous batch, to :func:`process_group`; it gets back the new state and
the rows to write.  Nothing here knows about Spark, so replaying a backlog, watching live and
the unit tests all run the same code: findings are a function of the record sequence alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from groupwatch import ownership
from groupwatch.detect.decoded import member_from_contract
from groupwatch.detect.findings import tp_list
from groupwatch.detect.model import MemberState

Row = dict[str, Any]
#: What identifies a partition_ownership row (the table's merge key).
OWNERSHIP_KEY = ("group", "topic", "partition", "from_generation", "member_id")
#: decoded record in the shape `groupwatch decode` prints
DecodedLine = dict[str, Any]


@dataclass(frozen=True)
class SourceRecord:
    """A record as Spark's Kafka source delivers it."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp_ms: int


@dataclass
class GroupResult:
    """The group's next state and the rows per table."""

    state: dict[str, Any]
    rows: dict[str, list[Row]] = field(default_factory=dict)
    #: The group's newest group-metadata record is a tombstone: the group was deleted.
    deleted: bool = False
    #: (deadline ms, partition) of the earliest finding awaiting confirmation by time.
    pending_until: tuple[int, int | None] | None = None

    def add(self, table: str, rows: Iterable[Row]) -> None:
        self.rows.setdefault(table, []).extend(rows)


class Analysis(Protocol):
    """The findings engine as the job drives it; its state round-trips through JSON."""

    def load(self, doc: Any) -> Any:
        """The engine's state from its JSON form (``None``: a group never seen)."""

    def feed(
        self, state: Any, line: DecodedLine, members: Sequence[Any] | None = None
    ) -> tuple[Any, list[dict[str, Any]]]:
        """One decoded record -> new state and findings as `groupwatch analyze` prints them.

        ``members``: a group-metadata record's members as ``member_from_contract`` gives them,
        when the caller already converted them (an optimisation; ``None`` converts again).
        """

    def hint(self, state: Any, group: str, topic: str, max_partition: int) -> Any:
        """The group committed offsets up to ``max_partition`` of ``topic``."""

    def tick(self, state: Any, clocks: Mapping[int, int]) -> tuple[Any, list[dict[str, Any]]]:
        """Stream time reached ``clocks[p]`` on partition ``p``: findings whose time is up."""

    def pending_until(self, state: Any) -> tuple[int, int | None] | None:
        """(deadline ms, partition) of the earliest finding awaiting confirmation by time."""

    def dump(self, state: Any) -> Any:
        """The state as JSON-able data."""


def _ts(ms: int | None) -> dt.datetime | None:
    if ms is None or ms < 0:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _source(record: SourceRecord) -> Row:
    when = _ts(record.timestamp_ms)
    return {
        "source_topic": record.topic,
        "source_partition": record.partition,
        "source_offset": record.offset,
        "source_timestamp": when,
        "snapshot_date": when.date() if when else None,
    }


def _quarantine(
    record: SourceRecord,
    err: Mapping[str, Any],
    group: str | None,
    when: dt.datetime,
    member_id: str | None = None,
) -> Row:
    return {
        "quarantined_at": when,
        "stage": "decode",
        "error_kind": err.get("kind"),
        "field_path": err.get("field_path"),
        "byte_offset": err.get("byte_offset"),
        "message": err.get("message"),
        "group": group,
        "member_id": member_id,
        "key": record.key,
        "value": record.value,
        **{k: v for k, v in _source(record).items() if k != "snapshot_date"},
    }


def _finding_row(finding: Mapping[str, Any], detected_at: dt.datetime) -> Row:
    import json

    row = {
        k: finding.get(k)
        for k in (
            "finding_id",
            "kind",
            "severity",
            "group",
            "generation",
            "topic",
            "partition",
            "member",
            "members",
            "partitions",
            "detail",
            "source",
        )
    }
    row["evidence"] = json.dumps(finding.get("evidence") or {}, sort_keys=True, default=str)
    row["detected_at"] = detected_at
    return row


def _snapshot_rows(
    line: DecodedLine, record: SourceRecord, group: str
) -> tuple[Row, list[Row], list[MemberState]]:
    value = line.get("value")
    err = line.get("error")
    members = (value or {}).get("members") or []
    protocol = (value or {}).get("protocol")
    snapshot = {
        "group": group,
        "group_type": "classic",
        "generation": (value or {}).get("generation"),
        "protocol_type": (value or {}).get("protocol_type"),
        "protocol": protocol,
        "leader": (value or {}).get("leader"),
        "current_state_timestamp": _ts((value or {}).get("current_state_timestamp")),
        "member_count": len(members) if value is not None else None,
        "record_version": (value or {}).get("version"),
        "tombstone": bool(line.get("tombstone")),
        "decode_error": (err or {}).get("kind"),
        **_source(record),
    }
    rows = []
    states = []
    for member in members:
        # The engine's adapter defines claim and claim generation; one definition for both,
        # and the engine gets the converted members instead of converting them again.
        state = member_from_contract(member, protocol)
        states.append(state)
        rows.append(
            {
                "group": group,
                "group_type": "classic",
                "generation": snapshot["generation"],
                "member_id": state.member_id,
                "group_instance_id": state.group_instance_id,
                "client_id": state.client_id,
                "client_host": state.client_host,
                "rebalance_timeout": member.get("rebalance_timeout"),
                "session_timeout": member.get("session_timeout"),
                "subscription_version": state.subscription_version,
                "topics": list(state.topics),
                "claim": tp_list(state.claim),
                "claim_generation": state.claim_generation,
                "assignment": tp_list(state.assigned),
                "user_data_kind": state.user_data_kind,
                "subscription_error": state.subscription_error,
                "assignment_error": state.assignment_error,
                **_source(record),
            }
        )
    return snapshot, rows, states


def _timed(rows: list[Row]) -> list[Row]:
    """Ownership rows carry milliseconds; the table holds timestamps."""
    for row in rows:
        row.setdefault("group_type", "classic")
        row["from_time"] = _ts(row["from_time"])
        row["to_time"] = _ts(row["to_time"])
    return rows


def _assignment_owners(line: DecodedLine) -> dict[tuple[str, int], ownership.Owner]:
    pairs: list[tuple[tuple[str, int], ownership.Owner]] = []
    for member in (line.get("value") or {}).get("members") or []:
        owner = ownership.Owner(member.get("member_id"), member.get("client_id"))
        for tps in (member.get("assignment") or {}).get("assigned_partitions") or []:
            pairs.extend(((tps["topic"], p), owner) for p in tps["partitions"])
    return ownership.first_owner(pairs)


def process_group(
    group: str,
    state: Mapping[str, Any] | None,
    records: Sequence[SourceRecord],
    *,
    decode: Callable[[SourceRecord], DecodedLine],
    analysis: Analysis,
    detected_at: dt.datetime,
    commits: Iterable[tuple[str, int]] = (),
    clocks: Mapping[int, int] | None = None,
) -> GroupResult:
    """Advance one group over its records (already in offset order), as ``groupwatch analyze``
    would over the same records.

    ``commits`` lists (topic, highest partition) of the group's offset commits before this
    batch; they inform partition-count inference before the records run.  The batch's own
    commits that tell something new come among ``records``, in their place.  ``clocks``:
    stream time per source partition at the end of the batch, which confirms what has waited
    long enough even when the group itself was silent.
    """
    current: dict[str, Any] = dict(state or {})
    open_intervals: ownership.OpenIntervals = dict(current.get("ownership") or {})
    detect_state = analysis.load(current.get("detect"))
    for topic, max_partition in commits:
        detect_state = analysis.hint(detect_state, group, topic, max_partition)
    result = GroupResult(state=current)
    for record in records:
        line = decode(record)
        if not line.get("group"):
            # A key that did not decode names no group; the record still belongs to the group
            # the job routed it to (what the JVM could read of the key), whose state it joins.
            line = {**line, "group": group}
        converted: list[MemberState] | None = None
        if line.get("record_type") == "offset_commit" and not line.get("error"):
            # A commit hint in its place: it informs counts and time, and has no rows here
            # (group_offsets aggregates commits in the JVM).
            detect_state, findings = analysis.feed(detect_state, line)
            result.add("findings", [_finding_row(f, detected_at) for f in findings])
            continue
        current["last_event_ms"] = max(record.timestamp_ms, int(current.get("last_event_ms", -1)))
        if line.get("error"):
            result.add("quarantine", [_quarantine(record, line["error"], group, detected_at)])
        if line.get("record_type") == "group_metadata":
            snapshot, members, converted = _snapshot_rows(line, record, group)
            result.add("group_snapshots", [snapshot])
            result.add("member_assignments", members)
            for member in (line.get("value") or {}).get("members") or []:
                for side in ("subscription_error", "assignment_error"):
                    if member.get(side):
                        result.add(
                            "quarantine",
                            [
                                _quarantine(
                                    record,
                                    member[side],
                                    group,
                                    detected_at,
                                    member.get("member_id"),
                                )
                            ],
                        )
            generation = snapshot["generation"]
            result.deleted = bool(line.get("tombstone"))
            if line.get("tombstone"):
                after = int(current.get("last_generation", -1)) + 1
                result.add(
                    "partition_ownership",
                    _timed(ownership.close_all(group, open_intervals, after, record.timestamp_ms)),
                )
                open_intervals = {}
                current.pop("last_generation", None)
            elif isinstance(generation, int) and not line.get("error"):
                open_intervals, rows = ownership.advance(
                    group, open_intervals, generation, record.timestamp_ms, _assignment_owners(line)
                )
                result.add("partition_ownership", _timed(rows))
                current["last_generation"] = generation
        detect_state, findings = analysis.feed(detect_state, line, converted)
        result.add("findings", [_finding_row(f, detected_at) for f in findings])
    if clocks:
        detect_state, findings = analysis.tick(detect_state, clocks)
        result.add("findings", [_finding_row(f, detected_at) for f in findings])
    result.pending_until = analysis.pending_until(detect_state)
    current["ownership"] = open_intervals
    current["detect"] = analysis.dump(detect_state)
    if "partition_ownership" in result.rows:
        # An interval opened and closed within the same batch is one row: keep its last form.
        last: dict[tuple[Any, ...], Row] = {}
        for row in result.rows["partition_ownership"]:
            last[tuple(row[k] for k in OWNERSHIP_KEY)] = row
        result.rows["partition_ownership"] = list(last.values())
    return result
