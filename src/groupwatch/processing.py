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

from groupwatch import modern_rows, ownership
from groupwatch.detect.decoded import member_from_contract
from groupwatch.detect.findings import tp_list
from groupwatch.detect.model import MemberState
from groupwatch.detect.modern import ModernState
from groupwatch.detect.modern.adapt import ROLES as MODERN_TYPES

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

    def tick(
        self, state: Any, clocks: Mapping[int, int], quiescent: bool = False
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Stream time reached ``clocks[p]`` on partition ``p``: findings whose time is up.

        ``quiescent``: the batch read everything available, a point where KIP-848, streams and
        share groups are judged (``groupwatch.detect.modern.judge``).
        """

    def pending_until(self, state: Any) -> tuple[int, int | None] | None:
        """(deadline ms, partition) of the earliest finding awaiting confirmation by time, or
        of a modern group's state not judged yet."""

    def modern(self, state: Any) -> ModernState | None:
        """The group's KIP-848, streams or share state, if it has one."""

    @property
    def topic_names(self) -> Mapping[str, str]:
        """Topic id -> name known beside the groups' own records (the brokers' Admin API)."""

    def with_topic_names(self, names: Mapping[str, str]) -> Analysis:
        """The same analysis knowing ``names`` beside the groups' own records."""

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


def _applied(modern: ModernState | None, record: SourceRecord) -> bool:
    """Whether the engine applied ``record`` to the group's modern state (it did not if the
    record broke the decoder's contract: then it has no rows)."""
    return (
        modern is not None
        and modern.source.partition == record.partition
        and modern.source.offset == record.offset
    )


def _modern_rows(
    result: GroupResult,
    group: str,
    line: DecodedLine,
    record: SourceRecord,
    modern: ModernState,
    intervals: modern_rows.ModernIntervals,
    names: Mapping[str, str],
) -> modern_rows.ModernIntervals:
    """The rows of one modern record, read off the group's state after it; returns the open
    ownership intervals after it."""
    type_id = line.get("record_type_id")
    source = _source(record)
    if type_id in modern_rows.GROUP_EPOCH_TYPES:
        snapshot = modern_rows.snapshot_row(group, modern, line, source)
        result.add("group_snapshots", [snapshot])
        result.deleted = snapshot["tombstone"]
        if snapshot["tombstone"]:
            # The group is gone (deleted, or converted to a classic group): nobody holds
            # anything any more.
            closed = modern_rows.close_all(
                group, intervals, modern.group_type.value, record.timestamp_ms
            )
            if closed:
                result.add("partition_ownership", _timed(closed))
            return {}
        return intervals
    key = line.get("key")
    member_id = key.get("member_id") if isinstance(key, Mapping) else None
    if type_id not in modern_rows.CURRENT_TYPES or not isinstance(member_id, str):
        return intervals
    row = modern_rows.member_row(group, modern, member_id, names, source)
    if row is not None:
        result.add("member_assignments", [row])
    intervals, rows = modern_rows.advance_member(
        group, intervals, modern, member_id, record.timestamp_ms, names
    )
    if rows:
        result.add("partition_ownership", _timed(rows))
    return intervals


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
    quiescent: bool = False,
) -> GroupResult:
    """Advance one group over its records (already in offset order), as ``groupwatch analyze``
    would over the same records.

    ``commits`` lists (topic, highest partition) of the group's offset commits before this
    batch; they inform partition-count inference before the records run.  The batch's own
    commits that tell something new come among ``records``, in their place.  ``clocks``:
    stream time per source partition at the end of the batch, which confirms what has waited
    long enough even when the group itself was silent.  ``quiescent``: the batch read
    everything available, so a modern group's state is judged at its end (``analyze`` does
    so at the end of its input).
    """
    current: dict[str, Any] = dict(state or {})
    open_intervals: ownership.OpenIntervals = dict(current.get("ownership") or {})
    modern_intervals: modern_rows.ModernIntervals = dict(current.get("modern_ownership") or {})
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
        if line.get("record_type_id") in MODERN_TYPES and not line.get("error"):
            modern = analysis.modern(detect_state)
            if modern is not None and _applied(modern, record):
                modern_intervals = _modern_rows(
                    result, group, line, record, modern, modern_intervals, analysis.topic_names
                )
    if clocks:
        detect_state, findings = analysis.tick(detect_state, clocks, quiescent)
        result.add("findings", [_finding_row(f, detected_at) for f in findings])
    result.pending_until = analysis.pending_until(detect_state)
    current["ownership"] = open_intervals
    if modern_intervals:
        current["modern_ownership"] = modern_intervals
    else:
        current.pop("modern_ownership", None)
    current["detect"] = analysis.dump(detect_state)
    if "partition_ownership" in result.rows:
        # An interval opened and closed within the same batch is one row: keep its last form.
        last: dict[tuple[Any, ...], Row] = {}
        for row in result.rows["partition_ownership"]:
            last[tuple(row[k] for k in OWNERSHIP_KEY)] = row
        result.rows["partition_ownership"] = list(last.values())
    return result
