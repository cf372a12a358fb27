"""The one driver of :func:`~groupwatch.detect.state.step`: records of any groups, in order.

``groupwatch analyze`` feeds it JSON lines (:meth:`Analyzer.feed`); the streaming job feeds it a
group's decoded records (:meth:`Analyzer.apply`, which reports what the engine took each record
as, for the rows built from it) and the end of each batch (:meth:`Analyzer.reach`).  Both
therefore raise the same findings at the same points.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.confirm import Pending
from groupwatch.detect.decoded import event_from_decoded, is_raw, record_from_raw, source_of
from groupwatch.detect.errors import ContractError
from groupwatch.detect.events import event_from_record
from groupwatch.detect.events import source_of as record_source
from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.model import (
    BrokerView,
    Event,
    GroupSnapshot,
    MemberState,
    OffsetCommit,
    Tick,
    UndecodableRecord,
)
from groupwatch.detect.modern.model import ModernRecord
from groupwatch.detect.newer import newer_version_finding
from groupwatch.detect.share.added import AddedPartitions
from groupwatch.detect.share.names import SHARE_STATE_RECORD_NAMES, SHARE_STATE_TOPIC
from groupwatch.detect.state import GroupState, step

if TYPE_CHECKING:
    from groupwatch.detect.modern import ModernState
    from groupwatch.detect.share.state import (
        RaisedShare,
        SavedShare,
        SharePartitionKey,
        SharePartitionState,
        ShareStateBook,
        ShareStateRecord,
    )
    from groupwatch.protocol import DecodedRecord


def _raised(f: Finding) -> RaisedShare:
    """A share finding as :class:`RaisedShare` keeps it: the offset its id names (a stall's
    start offset, a retry storm's first offset)."""
    from groupwatch.detect.share.state import RaisedShare

    ev = f.evidence
    retrying = ev.get("retrying_offsets")
    offset = retrying[0][0] if retrying else ev.get("start_offset", -1)
    return RaisedShare(f.finding_id, str(ev.get("topic_id")), f.partition or 0, int(offset))


def event_from_line(line: Mapping[str, Any]) -> Event | None:
    """A raw record or a ``groupwatch decode`` output line -> the engine's event."""
    if is_raw(line):
        return event_from_record(record_from_raw(line))
    return event_from_decoded(line)


@dataclass(frozen=True, slots=True)
class AppliedModern:
    """A KIP-848, streams or share record the engine applied, and its group's state after it."""

    record: ModernRecord
    state: ModernState


@dataclass(frozen=True, slots=True)
class Applied:
    """What the engine did with one decoded record (:meth:`Analyzer.apply`).

    The job builds the record's rows from this instead of reading the record a second time, so
    its rows and the findings rest on one reading of it.
    """

    #: What the record raised, the findings of other groups that its time made due included.
    findings: tuple[Finding, ...]
    #: A classic group-metadata record's members, as the engine converted and judged them.
    members: tuple[MemberState, ...] | None = None
    #: A modern group's record the engine applied; ``None`` for any other record, and for one
    #: that broke the engine's contract (it is a decode-error finding, not a state change).
    modern: AppliedModern | None = None
    #: A ``__share_group_state`` record the engine applied: its share partition and that
    #: partition's state after it (``None``: a tombstone removed it).
    share: AppliedShare | None = None


@dataclass(frozen=True, slots=True)
class AppliedShare:
    """A share state record's partition and the partition's state after it."""

    key: SharePartitionKey
    state: SharePartitionState | None


class Analyzer:
    """Per-group states in a dict, fed one record at a time: what ``groupwatch analyze`` runs
    over its input, and what the streaming job runs over each group's records of a batch
    (``groupwatch.processing``).

    Stream time is kept per ``__consumer_offsets`` partition (a group's records all live in
    one): every record moves its partition's clock, and a group whose pending finding's time is
    up on that clock gets a :class:`Tick` before the record is applied, so a group that stays
    silent is still judged.  ``states`` can be saved (``{g: s.to_json()}``) and handed back to a
    new analyzer: the findings are the same whatever the batching.
    """

    def __init__(
        self,
        config: DetectorConfig | None = None,
        states: Mapping[str, GroupState] | None = None,
    ) -> None:
        self.config = config or DetectorConfig()
        self.states: dict[str, GroupState] = {}
        #: group -> (deadline ms, partition) of groups with something pending by time.
        self._due: dict[str, tuple[int, int | None]] = {}
        #: Stream time per ``__consumer_offsets`` partition (``None``: records without one).
        self.clocks: dict[int | None, int] = {}
        #: Each share partition's state, from ``__share_group_state`` (made at its first record).
        self._share: ShareStateBook | None = None
        #: Stream time of ``__share_group_state``: its newest record's timestamp (ms).
        self.share_clock: int | None = None
        #: Share partitions whose state shows records in flight: the ones a stall is looked for
        #: at each share state record (one with nothing in flight needs the brokers' ends).
        self._share_watch: set[SharePartitionKey] = set()
        #: Share findings raised (by id), never raised again: a stall is raised once per start
        #: offset it stands at, a retry storm once per first offset it holds.
        self._share_raised: dict[str, tuple[str, RaisedShare]] = {}
        #: Each share group's topics: which partitions were resolved, which were added
        #: (``share_new_partition_records_skipped``, KAFKA-20742).
        self._share_added = AddedPartitions()
        #: ``newer_record_version`` findings raised (by id): one per group, type and version.
        self._newer_raised: set[str] = set()
        for group, state in (states or {}).items():
            self._store(group, state)

    def _store(self, group: str, state: GroupState) -> None:
        self.states[group] = state
        # Only what stream time alone raises: modern groups wait for a quiescent point.
        until = state.confirm_until
        if until is None:
            self._due.pop(group, None)
        else:
            self._due[group] = until

    def _step(self, event: Event) -> list[Finding]:
        new, findings = step(self.states.get(event.group), event, self.config)
        self._store(event.group, new)
        return findings

    def advance(self, time_ms: int, partition: int | None) -> list[Finding]:
        """Stream time reached ``time_ms`` on ``partition``: raise what is due there."""
        out: list[Finding] = []
        ready = sorted(
            g
            for g, (deadline, p) in self._due.items()
            if deadline <= time_ms and (p is None or partition is None or p == partition)
        )
        for group in ready:
            out.extend(self._step(Tick(group, time_ms, partition)))
        return out

    def _tell_time(self, time_ms: int, partition: int | None) -> None:
        if time_ms > self.clocks.get(partition, time_ms - 1):
            self.clocks[partition] = time_ms

    def feed_event(self, event: Event) -> list[Finding]:
        out: list[Finding] = []
        if event.time_ms is not None:
            partition = event.partition if isinstance(event, Tick) else event.source.partition
            self._tell_time(event.time_ms, partition)
            if self._due:
                out.extend(self.advance(event.time_ms, partition))
        out.extend(self._step(event))
        return out

    def feed(self, line: Mapping[str, Any]) -> list[Finding]:
        """One JSON line: a raw record (decoded here) or a ``groupwatch decode`` output line."""
        if is_raw(line):
            return self.feed_record(record_from_raw(line))
        if "newer_version" in line:
            return [*self._newer_line(line), *self._feed_decoded(line)]
        return self._feed_decoded(line)

    def _feed_decoded(self, line: Mapping[str, Any]) -> list[Finding]:
        if line.get("record_type") in SHARE_STATE_RECORD_NAMES or (
            line.get("topic") == SHARE_STATE_TOPIC
        ):
            return self._share_line(line)
        event = event_from_decoded(line)
        if event is not None:
            return self.feed_event(event)
        when, partition = line.get("timestamp"), line.get("partition")
        return self._idle(
            when if isinstance(when, int) else None,
            partition if isinstance(partition, int) else None,
        )

    def feed_record(self, record: DecodedRecord, group: str | None = None) -> list[Finding]:
        """One decoded record's findings; ``group`` as
        :func:`~groupwatch.detect.events.event_from_record` takes it."""
        return list(self.apply(record, group).findings)

    def apply(self, record: DecodedRecord, group: str | None = None) -> Applied:
        """One decoded record, and what the engine took it as (``group`` as
        :func:`~groupwatch.detect.events.event_from_record` takes it)."""
        applied = self._apply(record, group)
        newer = record.newer
        if newer is None:
            return applied
        finding = newer_version_finding(
            record.group or group or "",
            record.record_type,
            record.record_type_id,
            newer.version,
            newer.read_as,
            newer.unread,
            record_source(record),
        )
        return replace(applied, findings=(*self._newer_once(finding), *applied.findings))

    def _newer_once(self, finding: Finding) -> list[Finding]:
        if finding.finding_id in self._newer_raised:
            return []
        self._newer_raised.add(finding.finding_id)
        return [finding]

    def _newer_line(self, line: Mapping[str, Any]) -> list[Finding]:
        """``newer_record_version`` of a ``groupwatch decode`` line that says it was read by
        the fields known (its ``newer_version``); nothing for any other line."""
        newer = line.get("newer_version")
        if not isinstance(newer, Mapping):
            return []
        version, read_as = newer.get("version"), newer.get("read_as")
        if not isinstance(version, int) or not isinstance(read_as, int):
            return []
        try:
            unread = base64.b64decode(str(newer.get("unread") or ""), validate=True)
        except ValueError:
            unread = b""
        type_id, group = line.get("record_type_id"), line.get("group")
        return self._newer_once(
            newer_version_finding(
                group if isinstance(group, str) else "",
                str(line.get("record_type")),
                type_id if isinstance(type_id, int) else None,
                version,
                read_as,
                unread,
                source_of(line),
            )
        )

    def _apply(self, record: DecodedRecord, group: str | None) -> Applied:
        if record.topic == SHARE_STATE_TOPIC:
            raised, key = self._share_record(record)
            if key is None:
                return Applied(tuple(raised))
            after = self.share_states.partitions.get(key)
            return Applied(tuple(raised), share=AppliedShare(key, after))
        event = event_from_record(record, group)
        if event is None:
            return Applied(tuple(self._idle(record.timestamp, record.partition)))
        findings = tuple(self.feed_event(event))
        if isinstance(event, GroupSnapshot):
            return Applied(findings, members=event.members)
        if isinstance(event, ModernRecord):
            modern = self.modern(event.group)
            # Applying a modern record always leaves the group a modern state.
            assert modern is not None
            return Applied(findings, modern=AppliedModern(event, modern))
        return Applied(findings)

    # --- __share_group_state ---------------------------------------------------------------
    # Its records tell no stream time: their partitions and clocks are another topic's.

    @property
    def share_states_seen(self) -> int:
        """How many share partitions ``__share_group_state`` records have shown (without
        making the book)."""
        return 0 if self._share is None else len(self._share.partitions)

    @property
    def share_states(self) -> ShareStateBook:
        """Every share partition's state the input's ``__share_group_state`` records left."""
        if self._share is None:
            from groupwatch.detect.share.state import ShareStateBook

            self._share = ShareStateBook()
        return self._share

    def _share_record(
        self, record: DecodedRecord
    ) -> tuple[list[Finding], SharePartitionKey | None]:
        """The record's findings, and its share partition if it was applied."""
        from groupwatch.detect.share.state import from_decoded

        rec = from_decoded(record)
        if rec is None:
            # Bad bytes: a decode-error finding like any other record's.
            event = event_from_record(record)
            return (self._step(event) if isinstance(event, UndecodableRecord) else []), None
        return self._share_apply(rec), rec.key

    def _share_line(self, line: Mapping[str, Any]) -> list[Finding]:
        from groupwatch.detect.share.state import from_line

        if line.get("error") is None:
            try:
                return self._share_apply(from_line(line))
            except ContractError as exc:
                source = source_of(line)
                key = line.get("key")
                group = key.get("group_id") if isinstance(key, Mapping) else None
                return self._step(
                    UndecodableRecord(
                        group if isinstance(group, str) else "",
                        "contract",
                        str(exc),
                        None,
                        None,
                        source,
                        source.timestamp,
                    )
                )
        event = event_from_decoded(line)
        return self._step(event) if isinstance(event, UndecodableRecord) else []

    def share_topic_names(self, group: str) -> dict[str, str]:
        """topic id -> name for the group's share partitions (the configuration's, the brokers',
        and those of the group's own records)."""
        return self._share_names(group)

    def _share_names(self, group: str) -> dict[str, str]:
        modern = self.modern(group)
        return {**self.config.topic_names, **(modern.topic_names if modern else {})}

    def _share_once(self, findings: Iterable[Finding | None]) -> list[Finding]:
        out = []
        for f in findings:
            if f is not None and f.finding_id not in self._share_raised:
                self._share_raised[f.finding_id] = (f.group, _raised(f))
                out.append(f)
        return out

    def share_saved(self, group: str) -> SavedShare | None:
        """The group's share partitions as the job saves them between batches (``None``: the
        group has none and raised nothing that could come again)."""
        from groupwatch.detect.share.state import SavedShare

        parts = tuple(self._share.of_group(group)) if self._share is not None else ()
        starts = {(s.key.topic_id, s.key.partition): s.start_offset for s in parts}
        # A raised id names an offset: once the start offset is past it, it cannot come again.
        raised = tuple(
            sorted(
                (
                    r
                    for g, r in self._share_raised.values()
                    if g == group and r.offset >= starts.get((r.topic_id, r.partition), 1 << 62)
                ),
                key=lambda r: r.finding_id,
            )
        )
        known, pending = self._share_added.saved(group)
        if not parts and not raised and not known and not pending:
            return None
        return SavedShare(group, parts, raised, self.share_clock, known, pending)

    def restore_share(self, saved: SavedShare) -> None:
        """The group's share partitions as :meth:`share_saved` gave them, handed back."""
        book = self.share_states
        for s in saved.partitions:
            book.partitions[s.key] = s
            if s.start_offset >= 0 and s.in_flight_records > 0:
                self._share_watch.add(s.key)
        for r in saved.raised:
            self._share_raised[r.finding_id] = (saved.group, r)
        self._share_added.restore(saved.group, saved.added_known, saved.added_pending)
        if saved.clock_ms is not None and (
            self.share_clock is None or saved.clock_ms > self.share_clock
        ):
            self.share_clock = saved.clock_ms

    def _share_apply(self, rec: ShareStateRecord) -> list[Finding]:
        from groupwatch.detect.share.judge import archived, retries

        book = self.share_states
        before = book.partitions.get(rec.key)
        after = book.add(rec)
        if rec.timestamp is not None and (
            self.share_clock is None or rec.timestamp > self.share_clock
        ):
            self.share_clock = rec.timestamp
        if after is not None and after.start_offset >= 0 and after.in_flight_records > 0:
            self._share_watch.add(rec.key)
        else:
            self._share_watch.discard(rec.key)
        names = self._share_names(rec.key.group)
        out = archived(before, after, rec, names)
        out += self._share_added.apply(before, after, rec, names)
        out += self._share_once([retries(after, rec, self.config, names)])
        if self.share_clock is not None:
            watched = [book.partitions[k] for k in sorted(self._share_watch)]
            out += self.share_stalls(watched, self.share_clock)
        return out

    def share_stalls(
        self,
        states: Iterable[SharePartitionState],
        now_ms: int,
        end_offsets: Mapping[tuple[str, int], int] | None = None,
    ) -> list[Finding]:
        """``share_partition_stalled`` of ``states`` at stream time ``now_ms``, the members
        assigned as the group's records say now; ``end_offsets`` (topic id, partition) -> end
        offset: the brokers' look, which tells records waiting that no consumer fetched."""
        from groupwatch.detect.share.judge import assigned_members, stalled

        found: list[Finding | None] = []
        for s in states:
            members = assigned_members(self.modern(s.key.group), s.key)
            end = (
                None if end_offsets is None else end_offsets.get((s.key.topic_id, s.key.partition))
            )
            found.append(
                stalled(s, now_ms, members, self.config, self._share_names(s.key.group), end)
            )
        return self._share_once(found)

    def share_due(self, group: str) -> int | None:
        """Stream time (ms) from which one of the group's share partitions is stalled if its
        start offset still stands then: the earliest over its partitions with records in
        flight, members assigned and no stall raised at that start offset (None: none).  The
        job wakes the group then (``group_state.pending_until``): a share group whose
        consumers stop writes nothing that would."""
        from groupwatch.detect.findings import finding_id
        from groupwatch.detect.share.judge import assigned_members

        if self._share is None:
            return None
        names = self._share_names(group)
        due: int | None = None
        for key in self._share_watch:
            s = self._share.partitions.get(key)
            if key.group != group or s is None or s.start_since_ms is None:
                continue
            if not assigned_members(self.modern(group), key):
                continue
            raised = finding_id(
                group,
                None,
                "share_partition_stalled",
                names.get(key.topic_id) or key.topic_id,
                key.partition,
                None,
                f"{key.topic_id}/{key.partition}@{s.start_offset}",
            )
            if raised in self._share_raised:
                continue
            at = s.start_since_ms + self.config.share_stall_ms
            due = at if due is None else min(due, at)
        return due

    def share_reach(self, group: str, now_ms: int) -> list[Finding]:
        """Stream time reached ``now_ms`` where everything available was read (a job batch
        that caught up): the group's share partitions judged for a stall at it (or at the
        share state's own newer time), as ``analyze`` judges them at its input's end."""
        if self._share is None:
            return []
        watched = [self._share.partitions[k] for k in sorted(self._share_watch) if k.group == group]
        clock = self.share_clock
        return self.share_stalls(watched, now_ms if clock is None else max(now_ms, clock))

    def share_look(self, end_offsets: Mapping[tuple[str, int], int], now_ms: int) -> list[Finding]:
        """The brokers' end offsets of the share partitions, asked at ``now_ms``: every share
        partition judged for a stall against them (``analyze --bootstrap-server``)."""
        if self._share is None:
            return []
        return self.share_stalls(list(self._share), now_ms, end_offsets)

    def _idle(self, when: int | None, partition: int | None) -> list[Finding]:
        # Records the engine has no use for (offset-commit tombstones, say) still tell the time.
        if when is None:
            return []
        self._tell_time(when, partition)
        return self.advance(when, partition) if self._due else []

    def hint(
        self, group: str, topic: str, max_partition: int, committed_ms: int | None = None
    ) -> None:
        """The group committed offsets up to ``max_partition`` of ``topic`` before what is fed
        next, last at ``committed_ms`` (it informs partition counts and when the group last
        committed; it tells no stream time)."""
        self._step(OffsetCommit(group, topic, max_partition, Source(), None, None, committed_ms))

    def observe(self, view: BrokerView) -> list[Finding]:
        """What the brokers said about a group when asked (see :mod:`groupwatch.detect.stuck`);
        a group no record has shown yet is left alone."""
        if view.group not in self.states:
            return []
        return self._step(view)

    def reach(self, clocks: Mapping[int, int], quiescent: bool = False) -> list[Finding]:
        """Stream time reached ``clocks[p]`` on each ``__consumer_offsets`` partition ``p``
        (the end of a job batch, which also saw other groups' records): raise what is due.

        ``quiescent``: the batch read everything available, a point where KIP-848, streams and
        share groups are judged, each at its own partition's clock.
        """
        for partition, time_ms in clocks.items():
            self._tell_time(time_ms, partition)
        latest = max(clocks.values(), default=None)
        out: list[Finding] = []
        for group, state in sorted(self.states.items()):
            modern = state.modern
            if quiescent and modern is not None:
                p = modern.partition
                clock = clocks.get(p) if p is not None else latest
                if clock is not None:
                    out.extend(self._step(Tick(group, clock, p, quiescent=True)))
                    continue
            until = state.confirm_until
            if until is None:
                continue
            deadline, p = until
            clock = clocks.get(p) if p is not None else latest
            if clock is not None and clock >= deadline:
                out.extend(self._step(Tick(group, clock, p)))
        return out

    def pending_until(self, group: str) -> tuple[int, int | None] | None:
        """(deadline ms, partition) of the group's earliest finding awaiting confirmation by
        time, or of its modern state not judged yet (due at the next batch that moves its
        partition's clock)."""
        state = self.states.get(group)
        if state is None:
            return None
        until = state.pending_until
        modern = state.modern
        if modern is not None and modern.dirty and modern.last_write_ms is not None:
            if until is None or modern.last_write_ms < until[0]:
                until = (modern.last_write_ms, modern.partition)
        return until

    def modern(self, group: str) -> ModernState | None:
        """The group's KIP-848, streams or share state, if it has one."""
        state = self.states.get(group)
        return None if state is None else state.modern

    def finish(self) -> list[Finding]:
        """The end of the input: a quiescent point, where modern groups are judged.

        Each group is judged at its own ``__consumer_offsets`` partition's stream time.
        """
        out: list[Finding] = []
        latest = max(self.clocks.values(), default=None)
        for group, state in sorted(self.states.items()):
            if state.modern is None:
                continue
            clock = self.clocks.get(state.modern.partition, latest)
            if clock is None:
                continue
            out.extend(self._step(Tick(group, clock, state.modern.partition, quiescent=True)))
        if self._share is not None:
            # Share partitions at the input's end, by the latest time either topic told.
            times = [t for t in (latest, self.share_clock) if t is not None]
            if times:
                out.extend(self.share_stalls(list(self._share), max(times)))
        return out

    def pending(self) -> list[tuple[str, Pending]]:
        """(group, pending finding) of everything still awaiting confirmation (and not yet
        raised: a confirmed finding stays pending to be confirmed again next generation)."""
        return [
            (g, p)
            for g, s in sorted(self.states.items())
            for p in s.pending
            if p.finding.finding_id not in s.emitted  # already raised: kept only to see on
        ]

    def unconfirmed(self) -> list[tuple[str, Finding, int | None]]:
        """(group, finding, from when) of modern groups' violations seen but not yet held
        long enough to be raised at the last quiescent point."""
        return [
            (g, w.finding, w.deadline_ms)
            for g, s in sorted(self.states.items())
            if s.modern is not None
            for w in s.modern.watch
            if not w.raised
        ]


def analyze_lines(
    lines: Iterable[Mapping[str, Any]], config: DetectorConfig | None = None
) -> list[Finding]:
    """All findings of a sequence of lines, in order."""
    analyzer = Analyzer(config)
    out: list[Finding] = []
    for line in lines:
        out.extend(analyzer.feed(line))
    out.extend(analyzer.finish())
    return out
