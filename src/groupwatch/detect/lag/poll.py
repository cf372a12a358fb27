"""The job's lag between polls: each partition's end-offset history, its judgement's memory
and the commit it saw last, judged again at every poll of the brokers (plain Python; the
Spark shell reads the tables and asks the brokers, :mod:`groupwatch.spark.lag`)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from groupwatch.detect.findings import Finding
from groupwatch.detect.lag.book import Key, advance
from groupwatch.detect.lag.judge import LagRules, Track, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, PartitionLag, Status, worst

TP = tuple[str, int]
#: Observations kept per partition in memory (flat runs compressed); the table keeps all.
MAX_POINTS = 2048


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


def _owner_mark(owner: Owner | None) -> int | None:
    """A number that changes when the partition changes hands (who, and since when): the
    job's stand-in for "the same generation" when it judges a move backwards between polls."""
    if owner is None:
        return None
    return zlib.crc32(f"{owner.member}\0{owner.generation}".encode()) & 0x7FFFFFFF


class LagKeeper:
    """What the job remembers between polls (rebuilt from ``end_offsets`` at a restart).

    ``compact`` (the default) keeps what the verdicts need and no more: a partition's history
    from the last time its log end went backwards (older points describe another log), a
    track's window only while it can still become ``lagging`` (see ``judge``'s ``compact``),
    and a commit unchanged since the last poll, with the same owner, is not advanced again.
    ``compact=False`` keeps everything: the reference the tests hold it to."""

    def __init__(self, rules: LagRules, *, compact: bool = True) -> None:
        self.rules = rules
        self.compact = compact
        self.history: dict[TP, list[EndOffset]] = {}
        self.tracks: dict[Key, Track] = {}
        self.commits: dict[Key, Commit] = {}
        #: The commit as read and its owner, of the last poll (``compact``).
        self.read: dict[Key, tuple[Commit, Owner | None]] = {}
        self.last_ok_ms: int | None = None

    def observe(self, ends: Iterable[EndOffset]) -> None:
        """The brokers' answers of one poll (or the history read back at a restart)."""
        for e in ends:
            points = self.history.setdefault((e.topic, e.partition), [])
            if points and e.observed_ms <= points[-1].observed_ms:
                continue
            # A flat run keeps its first and last point: the end passed nothing in between.
            if len(points) >= 2 and points[-1].end_offset == points[-2].end_offset == e.end_offset:
                points[-1] = e
            elif self.compact and points and e.end_offset < points[-1].end_offset:
                points[:] = [e]  # a new log: the points before describe another one
            else:
                points.append(e)
            if len(points) > MAX_POINTS:
                del points[: len(points) - MAX_POINTS]
            self.last_ok_ms = max(self.last_ok_ms or 0, e.observed_ms)

    def forget_older(self, cutoff_ms: int) -> None:
        """History older than ``lag.history_hours`` goes (one point before it stays)."""
        for tp, points in list(self.history.items()):
            keep = [i for i, p in enumerate(points) if p.observed_ms >= cutoff_ms]
            if not keep:
                del self.history[tp]
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
        known up to ``known_ms`` (see :func:`~groupwatch.detect.lag.judge.judge`)."""
        rows: list[PartitionLag] = []
        opened: list[Finding] = []
        resolved: list[tuple[str, str]] = []
        seen: set[Key] = set()
        for new in commits:
            key = (new.group, new.topic, new.partition)
            seen.add(key)
            tp = (new.topic, new.partition)
            owner = owners.get(new.group, {}).get(tp)
            previous = self.commits.get(key)
            last = self.read.get(key) if self.compact else None
            if previous is not None and last is not None and last == (new, owner):
                # What was read is what the last poll read: advancing it again gives the
                # same commit (same offset, same owner mark), so it is not redone.
                commit = previous
            else:
                commit = advance(
                    previous,
                    replace(new, generation=_owner_mark(owner)),
                    members=0 if owner is None else None,
                )
                if commit.moved_ms is not None and new.moved_ms is not None:
                    # The table knows when the offset last moved better than two polls do.
                    if previous is None or commit.offset == previous.offset:
                        commit = replace(commit, moved_ms=new.moved_ms)
                self.commits[key] = commit
                if self.compact:
                    self.read[key] = (new, owner)
            v = judge(
                commit,
                self.history.get(tp, []),
                owner,
                self.rules,
                self.tracks.get(key),
                stale=stale,
                known_ms=known_ms,
                compact=self.compact,
            )
            self.tracks[key] = v.track
            rows.append(v.row)
            if v.opened is not None:
                opened.append(v.opened)
            if v.resolved is not None:
                resolved.append(v.resolved)
        for key in [k for k in self.commits if k not in seen]:
            # The offset was deleted: its open finding ends with it.
            track = self.tracks.pop(key, None)
            if track is not None and track.open_id is not None and track.open_kind is not None:
                resolved.append((track.open_id, track.open_kind))
            del self.commits[key]
            self.read.pop(key, None)
        return PollResult(rows, topic_lag(rows), opened, resolved)


def topic_lag(rows: Iterable[PartitionLag]) -> list[TopicLag]:
    """Partition rows summed per (group, topic): ``lag_history`` and the metrics."""
    by: dict[tuple[str, str], list[PartitionLag]] = {}
    for r in rows:
        by.setdefault((r.group, r.topic), []).append(r)
    out = []
    for (group, topic), rs in sorted(by.items()):
        seconds = [r.lag_seconds for r in rs if r.lag_seconds is not None]
        observed = [r.observed_ms for r in rs if r.observed_ms is not None]
        out.append(
            TopicLag(
                group,
                topic,
                max(observed) if observed else None,
                len(rs),
                sum(r.lag_records or 0 for r in rs),
                max(seconds) if seconds else None,
                worst(r.status for r in rs),
            )
        )
    return out
