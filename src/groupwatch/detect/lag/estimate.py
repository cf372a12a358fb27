"""Seconds behind: the age of the oldest unconsumed record, from the log-end history.

The oldest record a group has not consumed is the one at its committed offset ``c``; it was
written when the log end first went past ``c``. The history of the brokers' answers brackets
that moment between two observations (the last that had the end at or below ``c``, the first
above it), and the moment is interpolated linearly between them: on a steady producer the
error is below one poll interval. If the first kept observation is already past ``c``, the
record is older than the history: the answer is "at least" the history's span, never an
extrapolation (kafka-lag-exporter's extrapolation gave "3+ years" for 45 minutes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from groupwatch.detect.lag.model import EndOffset


@dataclass(frozen=True, slots=True)
class Behind:
    """Seconds behind at the time of the newest observation; ``at_least``: a lower bound."""

    seconds: float
    at_least: bool


def usable(history: Sequence[EndOffset]) -> Sequence[EndOffset]:
    """The observations since the log end last went backwards (a topic deleted and created
    again, an unclean leader election): older ones describe another log."""
    start = 0
    for i in range(1, len(history)):
        if history[i].end_offset < history[i - 1].end_offset:
            start = i
    return history[start:]


def seconds_behind(
    history: Sequence[EndOffset], committed: int, *, is_usable: bool = False
) -> Behind | None:
    """``history``: one partition's observations, oldest first. ``None`` without any.
    ``is_usable``: the caller keeps no observation from before the log end last went
    backwards (the job's keeper drops them as they come), so the scan for it is skipped."""
    kept = history if is_usable else usable(history)
    if not kept:
        return None
    newest = kept[-1]
    if newest.end_offset <= committed:
        return Behind(0.0, False)  # nothing waits: not late, however old the commit
    # The first observation past the committed offset (the ends only grow in ``kept``).
    lo, hi = 0, len(kept) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if kept[mid].end_offset > committed:
            hi = mid
        else:
            lo = mid + 1
    after = kept[lo]
    if lo == 0:
        return Behind((newest.observed_ms - after.observed_ms) / 1000.0, True)
    before = kept[lo - 1]
    # The record at ``committed`` made the end go from ``committed`` to ``committed + 1``.
    share = (committed + 1 - before.end_offset) / (after.end_offset - before.end_offset)
    written_ms = before.observed_ms + share * (after.observed_ms - before.observed_ms)
    return Behind(max(0.0, (newest.observed_ms - written_ms) / 1000.0), False)


def passing_points(newest: EndOffset, committed: int, first: tuple[int, int]) -> list[EndOffset]:
    """The points of the log end's history that the first record at or after ``committed``
    tells (``first``: its offset and timestamp, as read from the brokers): the end was at the
    record's offset, then one past it, when it was written.  When the record at ``committed``
    itself is gone (retention), only "one past that later record, then" is known: the oldest
    waiting record is older still.  Nothing when the record is not behind ``newest``'s end.

    One rule for ``analyze`` and the job: where no observation of the end brackets a committed
    offset, the record there gives the time (see docs/lag.md)."""
    offset, at = first
    if offset >= newest.end_offset:
        return []
    at = min(at, newest.observed_ms)
    t, p, start = newest.topic, newest.partition, newest.start_offset
    if offset == committed:
        return [EndOffset(t, p, start, offset, at), EndOffset(t, p, start, offset + 1, at)]
    return [EndOffset(t, p, start, offset + 1, at)]
