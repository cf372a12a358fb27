"""Partition ownership intervals of KIP-848 consumer and streams groups, in member epochs.

A partition is held from the epoch of the member's first current-assignment record that holds
it (assigned or pending revocation) to the epoch of its first record that no longer does.  A
member that disappears (its record's tombstone, or the group's) holds nothing from the epoch
after the last one it was seen at.  Share groups' partitions are shared, not owned, and have no
intervals.

The intervals kept between records are :class:`~groupwatch.tables.OwnershipInterval` values,
by member; the group's saved state holds them as JSON lists (:func:`encode`, :func:`decode`),
like :mod:`groupwatch.rows.classic_ownership`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from groupwatch.detect.modern.model import STATIC_AWAY_EPOCH, GroupType, Slot
from groupwatch.detect.modern.state import Member, ModernState
from groupwatch.rows.modern import topic_of
from groupwatch.tables import OwnershipInterval, OwnershipRow

#: member id -> "partition/slot id" -> the interval open there.
ModernIntervals = dict[str, dict[str, OwnershipInterval]]
#: As the saved state holds them: member id -> "partition/slot id" -> [topic as written,
#: client id, from epoch, from time ms, last epoch at which the member was seen holding it].
SavedModernIntervals = dict[str, dict[str, list[Any]]]


def _key(slot: Slot) -> str:
    return f"{slot[1]}/{slot[0]}"  # partition first, as classic_ownership does


def _partition(key: str) -> int:
    return int(key.split("/", 1)[0])


def _held(state: ModernState, member: Member | None) -> dict[str, Slot]:
    """What a member's current assignment holds: assigned and pending revocation (active tasks
    for streams), by interval key."""
    if member is None or member.current is None or state.group_type is GroupType.SHARE:
        return {}
    cur = member.current
    return {_key(s): s for s in (*cur.assigned, *cur.pending)}


def decode(saved: Mapping[str, Mapping[str, list[Any]]]) -> ModernIntervals:
    """The open intervals of a saved state (the list form groups' states were written in)."""
    out: ModernIntervals = {}
    for member_id, held in saved.items():
        mine: dict[str, OwnershipInterval] = {}
        for key, (topic, client_id, from_epoch, from_time_ms, last_epoch) in held.items():
            mine[key] = OwnershipInterval(
                topic=topic,
                partition=_partition(key),
                member_id=member_id,
                client_id=client_id,
                from_generation=from_epoch,
                from_time_ms=from_time_ms,
                last_epoch=last_epoch,
            )
        out[member_id] = mine
    return out


def encode(intervals: ModernIntervals) -> SavedModernIntervals:
    """The saved form of :func:`decode`'s value: the same lists, so saved states stay as they
    were written and older ones still load."""
    return {
        member_id: {
            key: [i.topic, i.client_id, i.from_generation, i.from_time_ms, i.last_epoch]
            for key, i in held.items()
        }
        for member_id, held in intervals.items()
    }


def _last_epoch(interval: OwnershipInterval) -> int:
    # Every interval opened here has one; only a classic group's lack it.
    if interval.last_epoch is None:
        raise ValueError(f"a modern ownership interval without a last epoch: {interval}")
    return interval.last_epoch


def _after_last(interval: OwnershipInterval) -> int:
    """The epoch after the last one the member was seen holding the partition at."""
    return _last_epoch(interval) + 1


def advance_member(
    group: str,
    intervals: ModernIntervals,
    state: ModernState,
    member_id: str,
    time_ms: int,
    names: Mapping[str, str],
) -> tuple[ModernIntervals, list[OwnershipRow]]:
    """The member's intervals after its current-assignment record (``state`` after it).

    Returns the new intervals and the rows to upsert: closed ones and newly opened ones.
    """
    member = state.members.get(member_id)
    held = _held(state, member)
    epoch = None if member is None or member.current is None else member.current.member_epoch
    # A static member away (-2) keeps its partitions at the epoch it had: no epoch of its own.
    counted = epoch is not None and epoch != STATIC_AWAY_EPOCH and epoch >= 0
    mine = dict(intervals.get(member_id) or {})
    kind = state.group_type.value
    rows: list[OwnershipRow] = []
    for key in sorted(mine):
        interval = mine[key]
        if key in held:
            if counted and epoch is not None and epoch > _last_epoch(interval):
                mine[key] = replace(interval, last_epoch=epoch)
            continue
        to = epoch if counted and epoch is not None else _after_last(interval)
        rows.append(interval.row(group, kind, to, time_ms))
        del mine[key]
    client_id = member.meta.client_id if member is not None and member.meta else None
    for key in sorted(set(held) - set(mine)):
        slot = held[key]
        start = epoch if epoch is not None else -1
        mine[key] = OwnershipInterval(
            topic=topic_of(state, slot[0], names),
            partition=_partition(key),
            member_id=member_id,
            client_id=client_id,
            from_generation=start,
            from_time_ms=time_ms,
            last_epoch=start,
        )
        rows.append(mine[key].row(group, kind, None, None))
    out = dict(intervals)
    if mine:
        out[member_id] = mine
    else:
        out.pop(member_id, None)
    return out, rows


def close_all(
    group: str, intervals: ModernIntervals, group_type: str, time_ms: int
) -> list[OwnershipRow]:
    """Close every open interval (the group was deleted or converted to a classic group)."""
    return [
        interval.row(group, group_type, _after_last(interval), time_ms)
        for _, held in sorted(intervals.items())
        for _, interval in sorted(held.items())
    ]
