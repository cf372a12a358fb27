"""Partition ownership intervals of classic groups: who owned each partition, from which
generation to which.

Kept per group as the open intervals only (:class:`~groupwatch.tables.OwnershipInterval`,
saved as JSON by :func:`encode` and read back by :func:`decode`), advanced one snapshot at a
time.  Each step returns the :class:`~groupwatch.tables.OwnershipRow` to upsert into
``partition_ownership``: a closed interval
(``to_generation`` set) for every partition that changed hands or vanished, and an open one for
every new owner.  Rows are keyed by (group, topic, partition, from_generation, member_id), so
writing the same step twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupwatch.detect.model import MemberState
from groupwatch.tables import OwnershipInterval, OwnershipRow

#: The ``group_type`` of this module's rows (modern groups' are in
#: :mod:`groupwatch.rows.modern_ownership`).
GROUP_TYPE = "classic"

#: "partition/topic" -> the interval open there.
OpenIntervals = dict[str, OwnershipInterval]
#: As the saved state holds them: "partition/topic" -> [member_id, client_id, from_generation,
#: from_time_ms].
SavedIntervals = dict[str, list[Any]]


@dataclass(frozen=True)
class Owner:
    member_id: str
    client_id: str | None


def _tp_key(topic: str, partition: int) -> str:
    return f"{partition}/{topic}"  # partition first: topic names may contain '/', ints may not


def _split(key: str) -> tuple[str, int]:
    partition, topic = key.split("/", 1)
    return topic, int(partition)


def decode(saved: Mapping[str, list[Any]]) -> OpenIntervals:
    """The open intervals of a saved state (the list form groups' states were written in)."""
    out: OpenIntervals = {}
    for key, (member_id, client_id, from_generation, from_time_ms) in saved.items():
        topic, partition = _split(key)
        out[key] = OwnershipInterval(
            topic=topic,
            partition=partition,
            member_id=member_id,
            client_id=client_id,
            from_generation=from_generation,
            from_time_ms=from_time_ms,
        )
    return out


def encode(intervals: OpenIntervals) -> SavedIntervals:
    """The saved form of :func:`decode`'s value: the same lists, so saved states stay as they
    were written and older ones still load."""
    return {
        key: [i.member_id, i.client_id, i.from_generation, i.from_time_ms]
        for key, i in intervals.items()
    }


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
        if owner is not None and owner.member_id == interval.member_id:
            now[key] = interval  # unchanged: stays open
        else:
            rows.append(interval.row(group, GROUP_TYPE, generation, time_ms))
    for key, owner in wanted.items():
        if key not in now:
            topic, partition = _split(key)
            now[key] = OwnershipInterval(
                topic=topic,
                partition=partition,
                member_id=owner.member_id,
                client_id=owner.client_id,
                from_generation=generation,
                from_time_ms=time_ms,
            )
            rows.append(now[key].row(group, GROUP_TYPE, None, None))
    return now, rows


def close_all(
    group: str, open_intervals: OpenIntervals, generation: int, time_ms: int
) -> list[OwnershipRow]:
    """Close every open interval at ``generation`` (the group was deleted or expired).

    A deletion has no generation of its own; callers pass the one after the last seen.
    """
    return [i.row(group, GROUP_TYPE, generation, time_ms) for i in open_intervals.values()]


def first_owner(pairs: Iterable[tuple[tuple[str, int], Owner]]) -> dict[tuple[str, int], Owner]:
    """Partition -> owner, keeping the first owner listed for a partition given twice."""
    out: dict[tuple[str, int], Owner] = {}
    for tp, owner in pairs:
        out.setdefault(tp, owner)
    return out


def assignment_owners(members: Sequence[MemberState]) -> dict[tuple[str, int], Owner]:
    """Partition -> owner of a snapshot's members' assignments (the first member listed for a
    partition assigned twice)."""
    pairs: list[tuple[tuple[str, int], Owner]] = []
    for member in members:
        owner = Owner(member.member_id, member.client_id)
        pairs.extend((tp, owner) for tp in member.assigned)
    return first_owner(pairs)
