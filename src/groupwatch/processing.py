"""One group's records -> rows for every table: the pure heart of the streaming job.

The Spark job hands each group's records of a micro-batch, in offset order, together with the
group's state from the previous batch (:class:`~groupwatch.group_state.SavedGroupState`), to
:func:`process_group`; it gets back the new state and the rows to write, one
:mod:`groupwatch.tables` row type per table.  Nothing here knows about
Spark, so replaying a backlog, watching live and the unit tests all run the same code: records
are decoded to the decoder's typed records, fed to the same :class:`~groupwatch.detect.Analyzer`
``groupwatch analyze`` runs, and the findings are a function of the record sequence alone.

Each record goes the same way whatever its group's kind: decoded (:func:`decode`), applied by
the engine (:meth:`~groupwatch.detect.Analyzer.apply`, which reports its findings and what it
took the record as), then its rows built from that report
(:func:`groupwatch.rows.step.record_rows`), which also carries the open ownership intervals
to the next record.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupwatch.detect import Analyzer, DetectorConfig, Finding
from groupwatch.detect.model import BrokerView
from groupwatch.detect.share.state import SharePartitionKey, SharePartitionState
from groupwatch.group_state import SavedGroupState
from groupwatch.protocol import DecodedRecord
from groupwatch.protocol import decode_record as _decode_record
from groupwatch.rows import share as share_rows
from groupwatch.rows.findings import finding_row
from groupwatch.rows.source import SourceRecord, newer_version_row
from groupwatch.rows.step import OpenOwnership, record_rows
from groupwatch.tables import (
    FINDINGS,
    GROUP_SNAPSHOTS,
    MEMBER_ASSIGNMENTS,
    PARTITION_OWNERSHIP,
    QUARANTINE,
    SHARE_PARTITION_HISTORY,
    SHARE_PARTITION_STATE,
    Row,
    Table,
)

__all__ = ["GroupResult", "SourceRecord", "decode", "process_group"]


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
    open_ = OpenOwnership(saved.ownership, saved.modern_ownership, saved.last_generation)
    last_event_ms = saved.last_event_ms
    analyzer = Analyzer(detector, None if saved.detect is None else {group: saved.detect})
    if saved.share is not None:
        analyzer.restore_share(saved.share)
    #: Each share partition the batch's records touched: its newest state and record.
    share_now: dict[SharePartitionKey, tuple[SharePartitionState | None, SourceRecord]] = {}
    for topic, max_partition, *when in commits:
        analyzer.hint(group, topic, max_partition, when[0] if when else None)
    result = GroupResult()

    def found(findings: Iterable[Finding]) -> None:
        result.add(FINDINGS, [finding_row(f, detected_at) for f in findings])

    for record in records:
        rec = decode(record)
        applied = analyzer.apply(rec, group)
        found(applied.findings)
        if rec.newer is not None and any(
            f.kind == "newer_record_version" for f in applied.findings
        ):
            # The raw bytes of a newer Kafka's record, kept once for each of the findings
            # (group, record type, version): a newer broker writes every record that way.
            result.add(QUARANTINE, [newer_version_row(record, rec, group, detected_at)])
        if rec.record_type == "offset_commit" and rec.error is None:
            # A commit hint in its place: it informs counts and time, and has no rows here
            # (group_offsets aggregates commits in the JVM).
            continue
        last_event_ms = max(record.timestamp_ms, -1 if last_event_ms is None else last_event_ms)
        if applied.share is not None:
            key = applied.share.key
            share_now[key] = (applied.share.state, record)
            result.add(
                SHARE_PARTITION_HISTORY,
                [
                    share_rows.history_row(
                        key,
                        applied.share.state,
                        record,
                        rec.record_type == "share_snapshot",
                        analyzer.share_topic_names(group),
                    )
                ],
            )
        rows = record_rows(group, record, rec, applied, open_, detector.topic_names, detected_at)
        open_ = rows.open
        result.add(QUARANTINE, rows.quarantine)
        result.add(GROUP_SNAPSHOTS, rows.snapshots)
        result.add(MEMBER_ASSIGNMENTS, rows.members)
        result.add(PARTITION_OWNERSHIP, rows.ownership)
        if rows.deleted is not None:
            result.deleted = rows.deleted
    if clocks:
        found(analyzer.reach(clocks, quiescent))
    if clocks and quiescent:
        # Where everything available was read, share partitions are judged for a stall on
        # the stream's clock, as analyze does at its input's end.
        found(analyzer.share_reach(group, max(clocks.values())))
    if view is not None:
        found(analyzer.observe(view))
    names = analyzer.share_topic_names(group)
    result.add(
        SHARE_PARTITION_STATE,
        [
            share_rows.state_row(s, record, names)
            if s is not None
            else share_rows.removal_row(key, record, names)
            for key, (s, record) in sorted(share_now.items())
        ],
    )
    result.pending_until = analyzer.pending_until(group)
    share_due = analyzer.share_due(group)
    if share_due is not None and (
        result.pending_until is None or share_due < result.pending_until[0]
    ):
        # Any partition's clock (None): share state records tell none of their own.
        result.pending_until = (share_due, None)
    result.state = SavedGroupState(
        detect=analyzer.states.get(group),
        ownership=open_.classic,
        modern_ownership=open_.modern,
        last_generation=open_.last_generation,
        last_event_ms=last_event_ms,
        share=analyzer.share_saved(group),
    )
    held = result.rows.get(PARTITION_OWNERSHIP.name)
    if held:
        # An interval opened and closed within the same batch is one row: keep its last form.
        last: dict[tuple[Any, ...], Row] = {}
        for row in held:
            last[tuple(getattr(row, k) for k in PARTITION_OWNERSHIP.key)] = row
        result.rows[PARTITION_OWNERSHIP.name] = list(last.values())
    return result
