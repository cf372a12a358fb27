"""One group's records -> rows for every table: the pure heart of the streaming job.

The Spark job hands each group's records of a micro-batch, in offset order, together with the
group's state from the previous batch (:class:`~groupwatch.group_state.SavedGroupState`), to
:func:`process_group`; it gets back the new state and the rows to write, one
:mod:`groupwatch.tables` row type per table.  Nothing here knows about
Spark, so replaying a backlog, watching live and the unit tests all run the same code: records
are decoded to the decoder's typed records, fed to the same :class:`~groupwatch.detect.Analyzer`
``groupwatch analyze`` runs, and the findings are a function of the record sequence alone.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupwatch import modern_rows, ownership
from groupwatch.detect import Analyzer, DetectorConfig, Finding
from groupwatch.detect.events import member_from_record
from groupwatch.detect.findings import tp_list
from groupwatch.detect.model import BrokerView, MemberState
from groupwatch.detect.modern import ModernState
from groupwatch.detect.modern.adapt import ROLES as MODERN_TYPES
from groupwatch.group_state import SavedGroupState
from groupwatch.protocol import DecodedRecord, DecodeError, GroupMember, GroupMetadataValue
from groupwatch.protocol import decode_record as _decode_record
from groupwatch.protocol.records import member_has
from groupwatch.tables import (
    FINDINGS,
    GROUP_SNAPSHOTS,
    MEMBER_ASSIGNMENTS,
    PARTITION_OWNERSHIP,
    QUARANTINE,
    FindingRow,
    MemberRow,
    QuarantineRow,
    Row,
    SnapshotRow,
    Table,
    timestamp,
)


@dataclass(frozen=True)
class SourceRecord:
    """A record as Spark's Kafka source delivers it."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp_ms: int


def decode(record: SourceRecord) -> DecodedRecord:
    """The decoder's typed record of a source record, with its position and time."""
    return _decode_record(
        record.key,
        record.value,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp=record.timestamp_ms,
    )


@dataclass
class GroupResult:
    """The group's next state and the rows per table (by table name)."""

    state: SavedGroupState = field(default_factory=SavedGroupState)
    rows: dict[str, list[Row]] = field(default_factory=dict)
    #: The group's newest group-metadata record is a tombstone: the group was deleted.
    deleted: bool = False
    #: (deadline ms, partition) of the earliest finding awaiting confirmation by time.
    pending_until: tuple[int, int | None] | None = None

    def add(self, table: Table, rows: Iterable[Row]) -> None:
        rows = list(rows)
        if rows:
            self.rows.setdefault(table.name, []).extend(rows)


def _source(record: SourceRecord) -> dict[str, Any]:
    """The source columns of a row (and its partition date)."""
    when = timestamp(record.timestamp_ms)
    return {
        "source_topic": record.topic,
        "source_partition": record.partition,
        "source_offset": record.offset,
        "source_timestamp": when,
        "snapshot_date": when.date() if when else None,
    }


def _quarantine(
    record: SourceRecord,
    error: DecodeError,
    group: str | None,
    when: dt.datetime,
    member_id: str | None = None,
) -> QuarantineRow:
    return QuarantineRow(
        quarantined_at=when,
        stage="decode",
        error_kind=error.kind,
        field_path=error.field_path,
        byte_offset=error.byte_offset,
        message=error.message,
        group=group,
        member_id=member_id,
        key=record.key,
        value=record.value,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
        source_timestamp=timestamp(record.timestamp_ms),
    )


def finding_row(finding: Finding, detected_at: dt.datetime) -> FindingRow:
    """A finding as the ``findings`` table holds it (fields as ``groupwatch analyze`` prints)."""
    return FindingRow(
        finding_id=finding.finding_id,
        kind=finding.kind,
        severity=finding.severity,
        group=finding.group,
        generation=finding.generation,
        topic=finding.topic,
        partition=finding.partition,
        member=finding.member,
        members=list(finding.members),
        partitions=None if finding.partitions is None else tp_list(finding.partitions),
        detail=finding.detail,
        evidence=json.dumps(dict(finding.evidence), sort_keys=True, default=str),
        source=finding.source.to_dict(),
        detected_at=detected_at,
    )


def _classic_rows(
    rec: DecodedRecord, record: SourceRecord, group: str
) -> tuple[SnapshotRow, list[MemberRow], list[MemberState], tuple[GroupMember, ...]]:
    """A group-metadata record's snapshot row, member rows, members as the engine sees them
    (converted once, for both), and the decoded members."""
    value = rec.value if isinstance(rec.value, GroupMetadataValue) else None
    source = _source(record)
    decoded: tuple[GroupMember, ...] = ()
    if value is not None:
        decoded = rec.members or tuple(GroupMember(m) for m in value.members)
    version = rec.value_version if value is not None else None
    snapshot = SnapshotRow(
        group=group,
        group_type="classic",
        generation=None if value is None else value.generation,
        protocol_type=None if value is None else value.protocol_type,
        protocol=None if value is None else value.protocol,
        leader=None if value is None else value.leader,
        current_state_timestamp=None if value is None else timestamp(value.current_state_timestamp),
        member_count=None if value is None else len(decoded),
        record_version=version,
        tombstone=rec.tombstone,
        decode_error=None if rec.error is None else rec.error.kind,
        **source,
    )
    rows: list[MemberRow] = []
    states: list[MemberState] = []
    protocol = None if value is None else value.protocol
    with_rebalance_timeout = version is not None and member_has("rebalance_timeout", version)
    for member in decoded:
        # The engine's adapter defines claim and claim generation; one definition for both,
        # and the engine gets the converted members instead of converting them again.
        state = member_from_record(member, protocol)
        states.append(state)
        meta = member.metadata
        rows.append(
            MemberRow(
                group=group,
                group_type="classic",
                generation=snapshot.generation,
                member_id=state.member_id,
                group_instance_id=state.group_instance_id,
                client_id=state.client_id,
                client_host=state.client_host,
                rebalance_timeout=meta.rebalance_timeout if with_rebalance_timeout else None,
                session_timeout=meta.session_timeout,
                subscription_version=state.subscription_version,
                topics=sorted(state.topics),
                claim=tp_list(state.claim),
                claim_generation=state.claim_generation,
                assignment=tp_list(state.assigned),
                user_data_kind=state.user_data_kind,
                subscription_error=state.subscription_error,
                assignment_error=state.assignment_error,
                **source,
            )
        )
    return snapshot, rows, states, decoded


def _assignment_owners(members: Sequence[MemberState]) -> dict[tuple[str, int], ownership.Owner]:
    pairs: list[tuple[tuple[str, int], ownership.Owner]] = []
    for member in members:
        owner = ownership.Owner(member.member_id, member.client_id)
        pairs.extend((tp, owner) for tp in member.assigned)
    return ownership.first_owner(pairs)


def _applied(modern: ModernState | None, record: SourceRecord) -> bool:
    """Whether the engine applied ``record`` to the group's modern state (it did not if the
    record broke the engine's contract: then it has no rows)."""
    return (
        modern is not None
        and modern.source.partition == record.partition
        and modern.source.offset == record.offset
    )


def _member_key(rec: DecodedRecord) -> str | None:
    key = rec.key
    member_id = (
        key.get("member_id") if isinstance(key, Mapping) else getattr(key, "member_id", None)
    )
    return member_id if isinstance(member_id, str) else None


def _modern_rows(
    result: GroupResult,
    group: str,
    rec: DecodedRecord,
    record: SourceRecord,
    modern: ModernState,
    intervals: modern_rows.ModernIntervals,
    names: Mapping[str, str],
) -> modern_rows.ModernIntervals:
    """The rows of one modern record, read off the group's state after it; returns the open
    ownership intervals after it."""
    type_id = rec.record_type_id
    source = _source(record)
    if type_id in modern_rows.GROUP_EPOCH_TYPES:
        tombstone = rec.tombstone or rec.value is None
        version = None if tombstone else rec.value_version
        result.add(
            GROUP_SNAPSHOTS, [modern_rows.snapshot_row(group, modern, tombstone, version, source)]
        )
        result.deleted = tombstone
        if tombstone:
            # The group is gone (deleted, or converted to a classic group): nobody holds
            # anything any more.
            closed = modern_rows.close_all(
                group, intervals, modern.group_type.value, record.timestamp_ms
            )
            result.add(PARTITION_OWNERSHIP, closed)
            return {}
        return intervals
    member_id = _member_key(rec)
    if type_id not in modern_rows.CURRENT_TYPES or member_id is None:
        return intervals
    result.add(
        MEMBER_ASSIGNMENTS, [modern_rows.member_row(group, modern, member_id, names, source)]
    )
    intervals, rows = modern_rows.advance_member(
        group, intervals, modern, member_id, record.timestamp_ms, names
    )
    result.add(PARTITION_OWNERSHIP, rows)
    return intervals


def process_group(
    group: str,
    state: SavedGroupState | None,
    records: Sequence[SourceRecord],
    *,
    detector: DetectorConfig,
    detected_at: dt.datetime,
    commits: Iterable[tuple[str, int] | tuple[str, int, int | None]] = (),
    clocks: Mapping[int, int] | None = None,
    quiescent: bool = False,
    view: BrokerView | None = None,
) -> GroupResult:
    """Advance one group over its records (already in offset order), as ``groupwatch analyze``
    would over the same records.

    ``commits`` lists (topic, highest partition[, last commit time ms]) of the group's offset
    commits before this batch; they inform partition-count inference and when the group last
    committed before the records run.  The batch's own
    commits that tell something new come among ``records``, in their place.  ``clocks``:
    stream time per source partition at the end of the batch, which confirms what has waited
    long enough even when the group itself was silent.  ``quiescent``: the batch read
    everything available, so a modern group's state is judged at its end (``analyze`` does
    so at the end of its input).  ``view``: what the brokers said of the group at the driver's
    last look, applied after the records (``analyze --bootstrap-server`` applies its looks
    after its input too).
    """
    saved = state or SavedGroupState()
    open_intervals = dict(saved.ownership)
    modern_intervals = dict(saved.modern_ownership)
    last_generation = saved.last_generation
    last_event_ms = saved.last_event_ms
    analyzer = Analyzer(detector, None if saved.detect is None else {group: saved.detect})
    for topic, max_partition, *when in commits:
        analyzer.hint(group, topic, max_partition, when[0] if when else None)
    result = GroupResult()

    def found(findings: Iterable[Finding]) -> None:
        result.add(FINDINGS, [finding_row(f, detected_at) for f in findings])

    for record in records:
        rec = decode(record)
        if rec.record_type == "offset_commit" and rec.error is None:
            # A commit hint in its place: it informs counts and time, and has no rows here
            # (group_offsets aggregates commits in the JVM).
            found(analyzer.feed_record(rec, group))
            continue
        last_event_ms = max(record.timestamp_ms, -1 if last_event_ms is None else last_event_ms)
        if rec.error is not None:
            result.add(QUARANTINE, [_quarantine(record, rec.error, group, detected_at)])
        converted: list[MemberState] | None = None
        if rec.record_type == "group_metadata":
            snapshot, members, converted, decoded = _classic_rows(rec, record, group)
            result.add(GROUP_SNAPSHOTS, [snapshot])
            result.add(MEMBER_ASSIGNMENTS, members)
            for member in decoded:
                for error in (member.subscription_error, member.assignment_error):
                    if error is not None:
                        bad = _quarantine(record, error, group, detected_at, member.member_id)
                        result.add(QUARANTINE, [bad])
            generation = snapshot.generation
            result.deleted = rec.tombstone
            if rec.tombstone:
                after = (-1 if last_generation is None else last_generation) + 1
                result.add(
                    PARTITION_OWNERSHIP,
                    ownership.close_all(group, open_intervals, after, record.timestamp_ms),
                )
                open_intervals = {}
                last_generation = None
            elif generation is not None and rec.error is None:
                open_intervals, rows = ownership.advance(
                    group,
                    open_intervals,
                    generation,
                    record.timestamp_ms,
                    _assignment_owners(converted),
                )
                result.add(PARTITION_OWNERSHIP, rows)
                last_generation = generation
        found(analyzer.feed_record(rec, group, converted))
        if rec.record_type_id in MODERN_TYPES and rec.error is None:
            modern = analyzer.modern(group)
            if modern is not None and _applied(modern, record):
                modern_intervals = _modern_rows(
                    result, group, rec, record, modern, modern_intervals, detector.topic_names
                )
    if clocks:
        found(analyzer.reach(clocks, quiescent))
    if view is not None:
        found(analyzer.observe(view))
    result.pending_until = analyzer.pending_until(group)
    result.state = SavedGroupState(
        detect=analyzer.states.get(group),
        ownership=open_intervals,
        modern_ownership=modern_intervals,
        last_generation=last_generation,
        last_event_ms=last_event_ms,
    )
    held = result.rows.get(PARTITION_OWNERSHIP.name)
    if held:
        # An interval opened and closed within the same batch is one row: keep its last form.
        last: dict[tuple[Any, ...], Row] = {}
        for row in held:
            last[tuple(getattr(row, k) for k in PARTITION_OWNERSHIP.key)] = row
        result.rows[PARTITION_OWNERSHIP.name] = list(last.values())
    return result
