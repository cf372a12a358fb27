"""Partition ownership history: who owned each partition of a group, from when to when.

Kept as a small JSON-able value per group (the open intervals only), advanced one snapshot at a
time.  Each step returns the :class:`~groupwatch.tables.OwnershipRow` to upsert into
``partition_ownership``: a closed interval
(``to_generation`` set) for every partition that changed hands or vanished, and an open one for
every new owner.  Rows are keyed by (group, topic, partition, from_generation, member_id), so
writing the same step twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.tables import OwnershipRow, timestamp

#: "topic/partition" -> [member_id, client_id, from_generation, from_time_ms]
OpenIntervals = dict[str, list[Any]]


@dataclass(frozen=True)
class Owner:
    member_id: str
    client_id: str | None


def _tp_key(topic: str, partition: int) -> str:
    return f"{partition}/{topic}"  # partition first: topic names may contain '/', ints may not


def _split(key: str) -> tuple[str, int]:
    partition, topic = key.split("/", 1)
    return topic, int(partition)


def _row(
    group: str, key: str, interval: list[Any], to_generation: int | None, to_time: int | None
) -> OwnershipRow:
    topic, partition = _split(key)
    member_id, client_id, from_generation, from_time = interval
    return OwnershipRow(
        group=group,
        group_type="classic",
        topic=topic,
        partition=partition,
        member_id=member_id,
        client_id=client_id,
        from_generation=from_generation,
        from_time=timestamp(from_time),
        to_generation=to_generation,
        to_time=timestamp(to_time),
    )


def advance(
    group: str,
    open_intervals: OpenIntervals,
    generation: int,
    time_ms: int,
    assignment: Mapping[tuple[str, int], Owner],
) -> tuple[OpenIntervals, list[OwnershipRow]]:
    """Move the history to a snapshot whose assignment is ``assignment`` (partition -> owner).

    A partition assigned to two members (an overlap) is recorded under the first one given;
    the overlap itself is a finding, not history.
    """
    now: OpenIntervals = {}
    rows: list[OwnershipRow] = []
    wanted = {_tp_key(t, p): owner for (t, p), owner in assignment.items()}
    for key, interval in open_intervals.items():
        owner = wanted.get(key)
        if owner is not None and owner.member_id == interval[0]:
            now[key] = interval  # unchanged: stays open
        else:
            rows.append(_row(group, key, interval, generation, time_ms))
    for key, owner in wanted.items():
        if key not in now:
            now[key] = [owner.member_id, owner.client_id, generation, time_ms]
            rows.append(_row(group, key, now[key], None, None))
    return now, rows


def close_all(
    group: str, open_intervals: OpenIntervals, generation: int, time_ms: int
) -> list[OwnershipRow]:
    """Close every open interval at ``generation`` (the group was deleted or expired).

    A deletion has no generation of its own; callers pass the one after the last seen.
    """
    return [_row(group, k, v, generation, time_ms) for k, v in open_intervals.items()]


def first_owner(pairs: Iterable[tuple[tuple[str, int], Owner]]) -> dict[tuple[str, int], Owner]:
    """Partition -> owner, keeping the first owner listed for a partition given twice."""
    out: dict[tuple[str, int], Owner] = {}
    for tp, owner in pairs:
        out.setdefault(tp, owner)
    return out
