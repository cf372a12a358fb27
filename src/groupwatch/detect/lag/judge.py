"""The status of a partition's lag, and the findings it opens and resolves (``docs/lag.md``).

Everything is judged at the time of the brokers' newest answer (when the end offset was
observed) and against the commits' own times, never on ``__consumer_offsets`` stream time
alone: a quiet coordinator partition must not freeze the verdict, and a replayed backlog must
not age it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from groupwatch.detect.findings import Finding, Source
from groupwatch.detect.lag.estimate import seconds_behind
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, PartitionLag, Status


@dataclass(frozen=True, slots=True)
class LagRules:
    """The thresholds of the rules (``[lag]`` of the configuration, in milliseconds)."""

    poll_ms: int = 15_000
    #: ``lagging``: seconds behind above this for a whole window, not shrinking.
    warn_ms: int = 120_000
    #: ``stopped``/``stalled``: no commit / no move for this long while records wait this long.
    stop_ms: int = 300_000
    #: How long ``lagging`` must hold (and the lag not shrink) before it is the status.
    window_ms: int = 300_000
    #: An empty group (nobody owns the partition) without a commit this long is retired.
    retire_ms: int = 24 * 3_600_000


#: The finding each alarming status opens.
FINDING_OF: dict[Status, str] = {
    "stopped": "consumer_stopped",
    "stalled": "consumer_stalled",
    "rewound": "offset_rewound",
    "lagging": "consumer_lagging",
}


@dataclass(frozen=True, slots=True)
class Track:
    """What a partition's judgement remembers until the next one."""

    #: (observed ms, seconds behind) of the judgements within the last window, oldest first.
    recent: tuple[tuple[int, float | None], ...] = ()
    #: The open finding: its kind and id.
    open_kind: str | None = None
    open_id: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    row: PartitionLag
    track: Track
    #: A finding opened by this judgement.
    opened: Finding | None = None
    #: The id (and kind) of a finding this judgement ended.
    resolved: tuple[str, str] | None = None


def judge(
    commit: Commit,
    history: Sequence[EndOffset],
    owner: Owner | None,
    rules: LagRules,
    track: Track | None = None,
    *,
    stale: bool = False,
    known_ms: int | None = None,
    compact: bool = False,
) -> Verdict:
    """One partition's lag row from its committed offset and the history of its log end
    (oldest first; empty if never observed), and what it opens or resolves.

    ``known_ms``: the time up to which the group's commits are known (the job reads them a
    batch behind the brokers' answer); None: up to the answer itself.  A commit made after
    it is not yet seen, so "no commit for so long" is measured up to it, never up to the
    answer, and the time it is behind is not counted as lag: else a slow batch would make
    every healthy group look stopped.

    ``compact`` (the job's keeper, which judges every partition at every poll): ``history``
    holds no observation from before the log end last went backwards, and a judgement that
    cannot be part of a lagging window (at or below ``warn``, or unknown) drops the track's
    older ones, since it alone decides every window it is in or anchors (see :func:`_lagging`);
    only the judgements since the previous low one stay beside it, for a judgement of the same
    answer that replaces it (:func:`_after_low`): the same verdicts, without a window of points
    per partition in memory."""
    track = track or Track()
    newest = history[-1] if history else None
    if newest is None:
        row = PartitionLag(
            commit.group, commit.topic, commit.partition, commit.offset, commit.commit_ms,
            None, None, None, False, "idle", owner, None, stale,
        )  # fmt: skip
        return _close(row, track)
    at = newest.observed_ms
    upto = at if known_ms is None else min(at, known_ms)
    unseen_s = (at - upto) / 1000.0
    lag = max(0, newest.end_offset - commit.offset)
    behind = seconds_behind(history, commit.offset, is_usable=compact)
    seconds = None if behind is None else behind.seconds
    at_least = behind is not None and behind.at_least
    waited_ms = 0.0 if seconds is None else seconds * 1000.0
    retired = owner is None and upto - commit.commit_ms >= rules.retire_ms
    # A consumer may have moved on since ``upto``: lag over the window, minus that, for
    # lagging (never negative).
    lagging_s = None if seconds is None else max(0.0, seconds - unseen_s)
    point = lagging_s if lag else 0.0
    if compact and (point is None or point * 1000.0 <= rules.warn_ms):
        recent: tuple[tuple[int, float | None], ...] = _after_low(
            track.recent, at, rules.warn_ms
        ) + ((at, point),)
    else:
        recent = _window(track.recent, at, point, rules.window_ms)
    status: Status
    if lag == 0:
        status = "idle"  # nothing to consume, however old the commit: an idle topic is not late
    elif retired:
        status = "idle"
    elif upto - commit.commit_ms >= rules.stop_ms and waited_ms >= rules.stop_ms:
        status = "stopped"
    elif upto - commit.since_ms >= rules.stop_ms and waited_ms >= rules.stop_ms:
        status = "stalled"
    elif commit.rewound_from is not None and commit.offset < commit.rewound_from:
        status = "rewound"
    elif _lagging(recent, at, rules):
        status = "lagging"
    else:
        status = "ok"
    row = PartitionLag(
        commit.group, commit.topic, commit.partition, commit.offset, commit.commit_ms,
        newest.end_offset, lag, seconds, at_least, status, owner, at, stale, retired,
    )  # fmt: skip
    # Built, not ``replace``d: this runs for every partition at every poll, and
    # ``dataclasses.replace`` cost a sixth of a judgement.
    return _close(row, Track(recent, track.open_kind, track.open_id), commit)


def _window(
    recent: tuple[tuple[int, float | None], ...], at: int, seconds: float | None, window_ms: int
) -> tuple[tuple[int, float | None], ...]:
    """The judgements of the last window plus the newest one older (it shows the window is
    covered); a repeated judgement of the same answer is not added twice."""
    points = [p for p in recent if p[0] < at] + [(at, seconds)]
    inside = [i for i, p in enumerate(points) if p[0] >= at - window_ms]
    first = max(0, inside[0] - 1) if inside else len(points) - 1
    return tuple(points[first:])


def _after_low(
    recent: tuple[tuple[int, float | None], ...], at: int, warn_ms: int
) -> tuple[tuple[int, float | None], ...]:
    """The judgements before ``at`` a compact track keeps beside a low one at ``at``: from the
    newest low one (at or below ``warn``, or unknown) on, or all if none is.  A low judgement
    decides every window it is in or anchors, so older ones never count again, unless this one
    is replaced: a poll that judges the same answer again (the brokers did not answer, or no
    newer answer came) replaces it, and the window it then makes needs what came before."""
    if recent:
        last = recent[-1]
        if last[0] < at and (last[1] is None or last[1] * 1000.0 <= warn_ms):
            return (last,)  # the usual case, a low judgement before this one: it alone stays
    before = [p for p in recent if p[0] < at]
    for i in range(len(before) - 1, -1, -1):
        seconds = before[i][1]
        if seconds is None or seconds * 1000.0 <= warn_ms:
            return tuple(before[i:])
    return tuple(before)


def _lagging(recent: tuple[tuple[int, float | None], ...], at: int, rules: LagRules) -> bool:
    """Above ``warn`` in every judgement of a whole window, and not shrinking over it: a
    restart or a rebalance (lag that rises for a while and is then worked off) never is."""
    if not recent or recent[0][0] > at - rules.window_ms:
        return False  # the window is not covered yet
    values = [s for _, s in recent]
    if any(s is None or s * 1000.0 <= rules.warn_ms for s in values):
        return False
    first, last = values[0], values[-1]
    return first is not None and last is not None and last >= first


def _close(row: PartitionLag, track: Track, commit: Commit | None = None) -> Verdict:
    """Open the finding of an alarming status, resolve the one whose state ended."""
    kind = FINDING_OF.get(row.status)
    if kind == track.open_kind:
        return Verdict(row, track)
    resolved = None
    if track.open_kind is not None and track.open_id is not None:
        resolved = (track.open_id, track.open_kind)
    if kind is None or commit is None:
        return Verdict(row, replace(track, open_kind=None, open_id=None), resolved=resolved)
    finding = lag_finding(kind, row, commit)
    return Verdict(
        row,
        replace(track, open_kind=kind, open_id=finding.finding_id),
        opened=finding,
        resolved=resolved,
    )


def _since(kind: str, row: PartitionLag, commit: Commit) -> int:
    """When the state began, from the data (so the job and ``analyze`` name it alike)."""
    if kind == "consumer_stopped":
        return commit.commit_ms
    if kind == "consumer_stalled":
        return commit.since_ms
    if kind == "offset_rewound" and commit.rewound_ms is not None:
        return commit.rewound_ms
    return row.observed_ms or commit.commit_ms


def duration(ms: float) -> str:
    """``6 min 12 s``, ``2 h 5 min``, ``40 s``."""
    s = int(ms // 1000)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _owned(owner: Owner | None) -> str:
    if owner is None:
        return "owned by no member"
    bits = [
        b
        for b in (owner.client and f"client {owner.client}", owner.host and f"host {owner.host}")
        if b
    ]
    text = f"owned by member {owner.member}"
    if bits:
        text += f" ({', '.join(bits)})"
    if owner.generation is not None:
        text += f" since generation {owner.generation}"
    return text


def lag_finding(kind: str, row: PartitionLag, commit: Commit) -> Finding:
    """The finding of an alarming status, with the owner in it."""
    at = row.observed_ms or commit.commit_ms
    since = _since(kind, row, commit)
    where = f"{row.topic}-{row.partition} of {row.group}"
    waiting = f"{row.lag_records or 0:,} records waiting"
    if kind == "consumer_stopped":
        what = f"has had no commit for {duration(at - commit.commit_ms)} with {waiting}"
    elif kind == "consumer_stalled":
        what = (
            f"has not moved for {duration(at - commit.since_ms)} with {waiting} "
            "(commits continue at the same offset)"
        )
    elif kind == "offset_rewound":
        what = (
            f"was moved back from offset {commit.rewound_from:,} to {commit.offset:,} by a "
            f"member, outside a rebalance ({waiting})"
        )
    else:
        what = (
            f"is {duration((row.lag_seconds or 0.0) * 1000)} behind and not catching up ({waiting})"
        )
    owner = row.owner
    return Finding(
        kind=kind,
        group=row.group,
        generation=None,
        detail=f"{where} {what}; {_owned(owner)}",
        source=Source(timestamp=at),
        topic=row.topic,
        partition=row.partition,
        member=None if owner is None else owner.member,
        evidence={
            "lag_records": row.lag_records,
            "lag_seconds": row.lag_seconds,
            "lag_seconds_at_least": row.lag_seconds_at_least,
            "committed_offset": row.committed_offset,
            "end_offset": row.end_offset,
            "commit_time": commit.commit_ms,
            "observed_at": row.observed_ms,
            "owner_client": None if owner is None else owner.client,
            "owner_host": None if owner is None else owner.host,
            "owner_generation": None if owner is None else owner.generation,
        },
        id_extra=f"lag:{since}",
    )
