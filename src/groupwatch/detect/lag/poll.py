"""The job's lag between polls: each partition's end-offset history, its judgement's memory
and the commit it saw last, judged again at every poll of the brokers (plain Python; the
Spark shell reads the tables and asks the brokers, :mod:`groupwatch.spark.lag_poller`)."""

from __future__ import annotations

import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import Any

from groupwatch.detect.findings import Finding
from groupwatch.detect.lag.book import Key, advance
from groupwatch.detect.lag.estimate import passing_points
from groupwatch.detect.lag.judge import LagRules, Track, judge
from groupwatch.detect.lag.model import (
    RANK,
    WORST_FIRST,
    Commit,
    EndOffset,
    Owner,
    PartitionLag,
    Status,
)

TP = tuple[str, int]
#: Observations kept per partition in memory (flat runs compressed): past it, the older half
#: is thinned to every other point, so a consumer days behind keeps an estimate (exact on a
#: steady producer, whose log end is a straight line), not an "at least".
MAX_POINTS = 2048
#: A partition whose log end does not move still gets an ``end_offsets`` row this often, so
#: that the table trimmed to ``lag.history_hours`` keeps where a long flat run began to
#: within this (a restart then reads "at least" that much, as the memory it replaces knew).
HEARTBEAT_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class TopicLag:
    """One ``lag_history`` row: a (group, topic) at one poll."""

    group: str
    topic: str
    observed_ms: int | None
    partitions: int
    lag_records: int
    lag_seconds: float | None
    status: Status


@dataclass(frozen=True, slots=True)
class PollResult:
    rows: list[PartitionLag]
    topics: list[TopicLag]
    opened: list[Finding]
    #: (finding id, kind) of findings whose state ended.
    resolved: list[tuple[str, str]]
    #: Every row as columns (``partition_lag``'s names, times as epoch milliseconds), from
    #: :class:`~groupwatch.detect.lag.fleet.FleetKeeper`, whose ``rows`` are then only the
    #: rows that alert; None from :class:`LagKeeper`, whose ``rows`` are all of them.
    table: Any = None


def _owner_mark(owner: Owner | None) -> int | None:
    """A number that changes when the partition changes hands (who, and since when): the
    job's stand-in for "the same generation" when it judges a move backwards between polls."""
    if owner is None:
        return None
    return mark_of(f"{owner.member}\0{owner.generation}")


def mark_of(text: str) -> int:
    """An owner's mark from its text, ``member NUL generation`` (``None`` when unknown)."""
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


class _Slot:
    """What the keeper holds of one (group, topic, partition): one dictionary lookup a
    partition at every poll, not one per kind of memory."""

    __slots__ = ("commit", "owner", "poll", "read", "track")

    def __init__(self, commit: Commit) -> None:
        #: The commit as advanced (its rewind and move times).
        self.commit = commit
        #: The commit as read and its owner, of the last poll (``compact``: the next poll
        #: reading the same does not advance it again).
        self.read: Commit | None = None
        self.owner: Owner | None = None
        self.track: Track | None = None
        #: The last poll that read the partition's commit.
        self.poll = 0


class _TopicSum:
    """A (group, topic)'s partitions summed as they are judged: a ``lag_history`` row."""

    __slots__ = ("observed", "partitions", "rank", "records", "seconds")

    def __init__(self) -> None:
        self.partitions = 0
        self.records = 0
        self.seconds: float | None = None
        self.observed: int | None = None
        self.rank = len(WORST_FIRST) - 1

    def add(self, row: PartitionLag) -> None:
        self.partitions += 1
        self.records += row.lag_records or 0
        s, o = row.lag_seconds, row.observed_ms
        if s is not None and (self.seconds is None or s > self.seconds):
            self.seconds = s
        if o is not None and (self.observed is None or o > self.observed):
            self.observed = o
        rank = RANK[row.status]
        if rank < self.rank:
            self.rank = rank


def commit_floors(commits: Iterable[Commit]) -> dict[TP, int]:
    """Each partition's smallest committed offset: where its history must reach back to
    (``LagKeeper``'s ``trim``, which takes the same in its judging loop)."""
    floors: dict[TP, int] = {}
    for c in commits:
        tp = (c.topic, c.partition)
        floor = floors.get(tp)
        if floor is None or c.offset < floor:
            floors[tp] = c.offset
    return floors


class LagKeeper:
    """What the job remembers between polls (rebuilt from ``end_offsets`` at a restart).

    ``compact`` (the default) keeps what the verdicts need and no more: a partition's history
    from the last time its log end went backwards (older points describe another log), a
    track's window only while it can still become ``lagging`` (see ``judge``'s ``compact``),
    and a commit unchanged since the last poll, with the same owner, is not advanced again.
    ``compact=False`` keeps everything: the reference the tests hold it to.

    ``trim`` (the default with ``compact``): after each judgement a partition's history starts
    at its last point at or below the smallest offset any group has committed on it (the
    oldest point a seconds-behind estimate can still use: one group far behind keeps the
    history it needs, a fleet that keeps up keeps two points a partition), and a partition no
    group commits to any more has none.  It changes a verdict only when a commit moves below
    that point (a group seeks back, or a new group starts behind the others): the answer is
    then "at least" the history kept, never a guess.

    ``row_ms``: a moving log end's ``end_offsets`` rows at most this far apart (:meth:`observe`;
    0: every answer that changed)."""

    def __init__(
        self,
        rules: LagRules,
        *,
        compact: bool = True,
        trim: bool | None = None,
        row_ms: int = 0,
    ) -> None:
        self.rules = rules
        self.compact = compact
        self.trim = compact if trim is None else trim
        self.history: dict[TP, list[EndOffset]] = {}
        #: Each partition's newest ``end_offsets`` row.
        self.written: dict[TP, EndOffset] = {}
        self.row_ms = row_ms
        self.slots: dict[Key, _Slot] = {}
        self.last_ok_ms: int | None = None
        self._polls = 0
        #: Committed offsets whose record was asked for (:meth:`learn`): asked once each.
        self.asked: dict[TP, set[int]] = {}

    @property
    def tracks(self) -> dict[Key, Track]:
        """Each partition's judgement memory (for tests and inspection)."""
        return {k: s.track for k, s in self.slots.items() if s.track is not None}

    def observe(self, ends: Iterable[EndOffset]) -> list[EndOffset]:
        """The brokers' answers of one poll; returns the ones to append to ``end_offsets``.

        Not every answer is a row.  The table holds each flat run's first and last answer
        (the points that bound when the end moved) and a row :data:`HEARTBEAT_MS` after the
        last one within it; a partition whose end keeps moving gets a row at most every
        ``row_ms`` (between two rows a restart's estimate draws a straight line, exact on a
        steady producer).  So an idle partition of a fleet writes a row an hour, not 240,
        and a busy one a row a minute at the shipped ``lag.history_row_seconds``.  A flat
        run's last answer is known to be one only when the next answer differs: meanwhile
        the newest answer of every partition is in ``partition_lag``, which a restart reads
        back (:meth:`restore`)."""
        rows: list[EndOffset] = []
        history, written, row_ms = self.history, self.written, self.row_ms
        for e in ends:
            tp = (e.topic, e.partition)
            points = history.setdefault(tp, [])
            p = points[-1] if points else None
            if p is not None and e.observed_ms <= p.observed_ms:
                continue
            last = written.get(tp)
            new: tuple[EndOffset, ...] = ()
            if p is None or last is None:
                new = (e,)
            else:
                unwritten = last.observed_ms != p.observed_ms
                p_as_last = (p.end_offset, p.start_offset) == (last.end_offset, last.start_offset)
                if (p.end_offset, p.start_offset) == (e.end_offset, e.start_offset):
                    if unwritten and not p_as_last:
                        new = (p,)  # a moving run ended at ``p``: a flat run begins
                    elif e.observed_ms - last.observed_ms >= HEARTBEAT_MS:
                        new = (e,)
                elif unwritten and p_as_last:
                    new = (p, e)  # a flat run ended at ``p``, the end moved at ``e``
                elif e.observed_ms - last.observed_ms >= row_ms or e.end_offset < p.end_offset:
                    # (A log end that went backwards is a new log: its first answer is a row.)
                    new = (e,)
            if new:
                rows += new
                written[tp] = new[-1]
            self._add(points, e)
        return rows

    def restore(self, ends: Iterable[EndOffset], *, written: bool = True) -> None:
        """History read back at a restart, oldest first: ``end_offsets`` rows (``written``),
        or the newest answers ``partition_lag`` holds (not necessarily rows yet)."""
        for e in ends:
            tp = (e.topic, e.partition)
            points = self.history.setdefault(tp, [])
            if points and e.observed_ms <= points[-1].observed_ms:
                continue
            self._add(points, e)
            if written:
                self.written[tp] = e

    def _add(self, points: list[EndOffset], e: EndOffset) -> None:
        # A flat run keeps its first and last point: the end passed nothing in between.
        if len(points) >= 2 and points[-1].end_offset == points[-2].end_offset == e.end_offset:
            points[-1] = e
        elif self.compact and points and e.end_offset < points[-1].end_offset:
            points[:] = [e]  # a new log: the points before describe another one
        else:
            points.append(e)
        if len(points) > MAX_POINTS:
            half = len(points) // 2
            points[:half] = points[0:half:2]
        self.last_ok_ms = max(self.last_ok_ms or 0, e.observed_ms)

    def learn(self, points: Iterable[EndOffset]) -> None:
        """Points of a partition's history told by the records at committed offsets
        (:func:`~groupwatch.detect.lag.estimate.passing_points`), older than what the polls
        observed: each put where its end belongs, its time kept between its neighbours' (a
        producer's clock is not the brokers')."""
        for e in points:
            history = self.history.get((e.topic, e.partition))
            if not history:
                continue
            i = bisect_left(history, e.end_offset, key=_end)
            lo = history[i - 1].observed_ms if i > 0 else e.observed_ms
            hi = history[i].observed_ms if i < len(history) else e.observed_ms
            at = min(max(e.observed_ms, lo), hi)
            history.insert(i, replace(e, observed_ms=at))

    def told(
        self,
        asked: Mapping[TP, Iterable[int]],
        found: Mapping[tuple[TP, int], tuple[int, int]],
        ends: Iterable[EndOffset],
    ) -> None:
        """The brokers' records at the committed offsets ``asked`` (``found``: (offset,
        timestamp) of the first record at or after each), learnt as history against the
        newest answer ``ends``; each offset is asked once."""
        newest = {(e.topic, e.partition): e for e in ends}
        for tp, offsets in asked.items():
            e = newest.get(tp)
            for c in offsets:
                self.asked.setdefault(tp, set()).add(c)
                first = found.get((tp, c))
                if e is not None and first is not None:
                    self.learn(passing_points(e, c, first))

    def forget_older(self, cutoff_ms: int) -> None:
        """History older than ``lag.history_hours`` goes (one point before it stays)."""
        for tp, points in list(self.history.items()):
            # A partition's points are in time order: where the second (or an only one) is
            # recent, nothing goes (nearly every partition, every poll).
            if points and points[min(1, len(points) - 1)].observed_ms >= cutoff_ms:
                continue
            keep = [i for i, p in enumerate(points) if p.observed_ms >= cutoff_ms]
            if not keep:
                del self.history[tp]
                self.written.pop(tp, None)
            elif keep[0] > 1:
                del points[: keep[0] - 1]

    def judge(
        self,
        commits: Iterable[Commit],
        owners: Mapping[str, Mapping[TP, Owner]],
        *,
        stale: bool = False,
        known_ms: int | None = None,
    ) -> PollResult:
        """Every committed partition judged against the history as it stands, its commits
        known up to ``known_ms`` (see :func:`~groupwatch.detect.lag.judge.judge`).

        This runs for every partition of a fleet at every poll (1.2 million in the cluster
        model): the loop holds one lookup per kind of input and sums the topics' rows as it
        goes."""
        rows: list[PartitionLag] = []
        opened: list[Finding] = []
        resolved: list[tuple[str, str]] = []
        self._polls += 1
        poll = self._polls
        compact, rules, slots, history = self.compact, self.rules, self.slots, self.history
        none: Mapping[TP, Owner] = {}
        no_points: list[EndOffset] = []
        sums: dict[tuple[str, str], _TopicSum] = {}
        last_gt: tuple[str, str] | None = None
        total = _TopicSum()
        #: Each partition's smallest committed offset this poll (``trim``): ``commit_floors``,
        #: taken in this loop rather than in a second pass over a fleet's commits.
        floors: dict[TP, int] = {}
        trim = self.trim
        for new in commits:
            group, topic, partition = new.group, new.topic, new.partition
            key = (group, topic, partition)
            tp = (topic, partition)
            if trim:
                floor = floors.get(tp)
                if floor is None or new.offset < floor:
                    floors[tp] = new.offset
            owner = owners.get(group, none).get(tp)
            slot = slots.get(key)
            if (
                slot is not None
                and slot.read is not None
                and (slot.owner is owner or slot.owner == owner)
                and slot.read == new
            ):
                # What was read is what the last poll read: advancing it again gives the
                # same commit (same offset, same owner mark), so it is not redone.
                commit = slot.commit
            else:
                previous = None if slot is None else slot.commit
                commit = advance(
                    previous,
                    replace(new, generation=_owner_mark(owner)),
                    members=0 if owner is None else None,
                )
                if commit.moved_ms is not None and new.moved_ms is not None:
                    # The table knows when the offset last moved better than two polls do.
                    if previous is None or commit.offset == previous.offset:
                        commit = replace(commit, moved_ms=new.moved_ms)
                if slot is None:
                    slot = slots[key] = _Slot(commit)
                else:
                    slot.commit = commit
                if compact:
                    slot.read, slot.owner = new, owner
            slot.poll = poll
            v = judge(
                commit,
                history.get(tp, no_points),
                owner,
                rules,
                slot.track,
                stale=stale,
                known_ms=known_ms,
                compact=compact,
            )
            slot.track = v.track
            row = v.row
            rows.append(row)
            if v.opened is not None:
                opened.append(v.opened)
            if v.resolved is not None:
                resolved.append(v.resolved)
            gt = (group, topic)
            if gt != last_gt:
                # Rows come topic by topic as the table is read: one lookup per run of them.
                found = sums.get(gt)
                if found is None:
                    found = sums[gt] = _TopicSum()
                total, last_gt = found, gt
            total.add(row)
        for key in [k for k, s in slots.items() if s.poll != poll]:
            # The offset was deleted: its open finding ends with it.
            track = slots.pop(key).track
            if track is not None and track.open_id is not None and track.open_kind is not None:
                resolved.append((track.open_id, track.open_kind))
        if trim:
            self._trim(floors)
        topics = [
            TopicLag(g, t, s.observed, s.partitions, s.records, s.seconds, WORST_FIRST[s.rank])
            for (g, t), s in sorted(sums.items())
        ]
        return PollResult(rows, topics, opened, resolved)

    def _trim(self, floors: Mapping[TP, int]) -> None:
        """Each partition's history from its last point at or below ``floors`` on (its ends
        only grow: ``compact`` drops what came before a new log)."""
        history = self.history
        for tp in [tp for tp in history if tp not in floors]:
            del history[tp]
            self.written.pop(tp, None)
        for tp, floor in floors.items():
            points = history.get(tp)
            if points is None or len(points) < 2 or points[1].end_offset > floor:
                continue  # the usual case: nothing before the point the estimate starts at
            cut(points, floor)


def cut(points: list[EndOffset], floor: int) -> None:
    """A history (its ends only grow) from its last point at or below ``floor`` on."""
    last = bisect_right(points, floor, key=_end) - 1
    if last > 0:
        del points[:last]


#: A point's log end (``bisect``'s key, in C).
_end = attrgetter("end_offset")
