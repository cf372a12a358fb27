"""The brokers' answers for ``groupwatch analyze``'s lag, as the judgement takes them: a
partition's log start and end offsets (``listOffsets`` earliest and latest) and the time of the
oldest record a group has not consumed, made into the partition's end-offset history.  Asking
the brokers is :mod:`groupwatch.broker_client`'s (the engine does no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupwatch.detect.lag.estimate import passing_points
from groupwatch.detect.lag.model import EndOffset

TP = tuple[str, int]


def histories(
    ends: Iterable[EndOffset], committed: Mapping[TP, int], times: Mapping[TP, tuple[int, int]]
) -> dict[TP, list[EndOffset]]:
    """One answer per partition as an end-offset history: with the time the oldest waiting
    record was written, the log end's passing of the committed offset is known exactly (the
    end was at the record's offset, then one past it, at that time)."""
    out: dict[TP, list[EndOffset]] = {}
    for e in ends:
        key = (e.topic, e.partition)
        first, c = times.get(key), committed.get(key)
        before = [] if first is None or c is None else passing_points(e, c, first)
        out[key] = [*before, e]
    return out
