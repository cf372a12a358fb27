"""One record's rows, built from what the engine applied, and the ownership carried to the next.

The engine takes each record first (:meth:`groupwatch.detect.Analyzer.apply`); :func:`record_rows`
then builds the record's rows from the engine's report, classic and modern side by side:

- a group-metadata record (type 2): its snapshot row, one member row per member (the members
  the engine converted and judged), quarantine rows for members whose bytes did not decode,
  and the classic ownership intervals it opens and closes;
- a modern record the engine applied: the rows read off the group's state after it (a
  group-epoch record's snapshot, a current-assignment record's member row and intervals);
- any record that did not decode: its quarantine row.

A modern record that broke the engine's contract was not applied: the engine reports it as a
finding, and it has no rows here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from groupwatch.detect import Applied, AppliedModern, MemberState
from groupwatch.detect.modern.model import RecordRole
from groupwatch.protocol import DecodedRecord
from groupwatch.rows import classic, classic_ownership, modern, modern_ownership
from groupwatch.rows.classic_ownership import OpenIntervals
from groupwatch.rows.modern_ownership import ModernIntervals
from groupwatch.rows.source import SourceRecord, quarantine_row, source_columns
from groupwatch.tables import MemberRow, OwnershipRow, QuarantineRow, SnapshotRow


@dataclass(frozen=True)
class OpenOwnership:
    """The ownership a group carries from one record to the next (and, in its saved state, from
    one batch to the next)."""

    #: A classic group's open intervals, by "partition/topic".
    classic: OpenIntervals = field(default_factory=dict)
    #: A modern group's open intervals: member id -> "partition/slot id" ->.
    modern: ModernIntervals = field(default_factory=dict)
    #: The last classic generation seen; ``None`` before the first and after a tombstone (a
    #: deletion closes the intervals at the generation after it).
    last_generation: int | None = None


@dataclass(frozen=True)
class RecordRows:
    """One record's rows, table by table, and the ownership open after it."""

    open: OpenOwnership
    snapshots: Sequence[SnapshotRow] = ()
    members: Sequence[MemberRow] = ()
    ownership: Sequence[OwnershipRow] = ()
    quarantine: Sequence[QuarantineRow] = ()
    #: Whether the group is gone after the record (a group-metadata or group-epoch record says
    #: so, by being a tombstone or not); ``None``: the record does not say.
    deleted: bool | None = None


def record_rows(
    group: str,
    record: SourceRecord,
    rec: DecodedRecord,
    applied: Applied,
    open_: OpenOwnership,
    names: Mapping[str, str],
    detected_at: dt.datetime,
) -> RecordRows:
    """The rows of ``record`` (decoded as ``rec``, taken by the engine as ``applied``), with
    ``open_`` the ownership open before it; ``names``: topic id -> name, for modern groups."""
    quarantined: list[QuarantineRow] = []
    if rec.error is not None:
        quarantined.append(quarantine_row(record, rec.error, group, detected_at))
    if rec.record_type == "group_metadata":
        return _classic(group, record, rec, applied.members, open_, quarantined, detected_at)
    if applied.modern is not None:
        return _modern(group, record, rec, applied.modern, open_, names)
    return RecordRows(open_, quarantine=quarantined)


def _classic(
    group: str,
    record: SourceRecord,
    rec: DecodedRecord,
    converted: Sequence[MemberState] | None,
    open_: OpenOwnership,
    quarantined: list[QuarantineRow],
    detected_at: dt.datetime,
) -> RecordRows:
    source = source_columns(record)
    decoded = classic.decoded_members(rec)
    members = classic.engine_members(rec, decoded, converted)
    snapshot = classic.snapshot_row(group, rec, len(decoded), source)
    member_rows = classic.member_rows(snapshot, decoded, members, source)
    for member in decoded:
        for error in (member.subscription_error, member.assignment_error):
            if error is not None:
                quarantined.append(
                    quarantine_row(record, error, group, detected_at, member.member_id)
                )
    ownership: list[OwnershipRow] = []
    generation = snapshot.generation
    if rec.tombstone:
        last = open_.last_generation
        after = (-1 if last is None else last) + 1
        ownership = classic_ownership.close_all(group, open_.classic, after, record.timestamp_ms)
        # The classic group is gone; a modern group's intervals (an upgrade) live on.
        open_ = replace(open_, classic={}, last_generation=None)
    elif generation is not None and rec.error is None:
        intervals, ownership = classic_ownership.advance(
            group,
            open_.classic,
            generation,
            record.timestamp_ms,
            classic_ownership.assignment_owners(members),
        )
        open_ = replace(open_, classic=intervals, last_generation=generation)
    return RecordRows(
        open_,
        snapshots=(snapshot,),
        members=member_rows,
        ownership=ownership,
        quarantine=quarantined,
        deleted=rec.tombstone,
    )


def _modern(
    group: str,
    record: SourceRecord,
    rec: DecodedRecord,
    applied: AppliedModern,
    open_: OpenOwnership,
    names: Mapping[str, str],
) -> RecordRows:
    taken, state = applied.record, applied.state
    source: dict[str, Any] = source_columns(record)
    if taken.role is RecordRole.GROUP_EPOCH:
        tombstone = taken.value is None
        version = None if tombstone else rec.value_version
        snapshot = modern.snapshot_row(group, state, tombstone, version, source)
        if not tombstone:
            return RecordRows(open_, snapshots=(snapshot,), deleted=False)
        # The group is gone (deleted, or converted to a classic group): nobody holds anything
        # any more.
        closed = modern_ownership.close_all(
            group, open_.modern, state.group_type.value, record.timestamp_ms
        )
        return RecordRows(
            replace(open_, modern={}), snapshots=(snapshot,), ownership=closed, deleted=True
        )
    member_id = taken.subkey
    if taken.role is not RecordRole.CURRENT or member_id is None:
        return RecordRows(open_)
    member = modern.member_row(group, state, member_id, names, source)
    intervals, ownership = modern_ownership.advance_member(
        group, open_.modern, state, member_id, record.timestamp_ms, names
    )
    return RecordRows(replace(open_, modern=intervals), members=(member,), ownership=ownership)
