"""Table rows of KIP-848 consumer, streams and share groups, from the engine's view of them.

A classic group's snapshot is one record; a modern group's is spread over one record per key
(``groupwatch.detect.modern``).  The job applies each record to the group's
:class:`~groupwatch.detect.modern.ModernState` first and then asks this module for the rows the
record stands for, read off the state as it is after the record:

- a group-epoch record (3, 11, 17) -> one ``group_snapshots`` row;
- a current-assignment record (8, 14, 22) -> one ``member_assignments`` row (a tombstone, a
  member gone, has none) and the ``partition_ownership`` intervals it opens and closes.

Ownership intervals of modern groups are counted in *member* epochs: a partition is held from
the epoch of the member's first record that holds it (assigned or pending revocation) to the
epoch of its first record that no longer does.  A member that disappears (its record's
tombstone, or the group's) holds nothing from the epoch after the last one it was seen at.
Share groups' partitions are shared, not owned, and have no intervals.

Everything here is pure; the intervals kept between records are
:class:`~groupwatch.tables.OwnershipInterval` values, saved as JSON lists (:func:`encode`,
:func:`decode`) like :mod:`groupwatch.ownership`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from groupwatch.detect.findings import tp_list
from groupwatch.detect.modern.adapt import ROLES
from groupwatch.detect.modern.model import (
    CONSUMER_STATES,
    STATIC_AWAY_EPOCH,
    STREAMS_STATES,
    Current,
    GroupType,
    RecordRole,
    Slot,
)
from groupwatch.detect.modern.state import Member, ModernState
from groupwatch.tables import MemberRow, OwnershipInterval, OwnershipRow, SnapshotRow, TPList

#: member id -> "partition/slot id" -> the interval open there.
ModernIntervals = dict[str, dict[str, OwnershipInterval]]
#: As the saved state holds them: member id -> "partition/slot id" -> [topic as written,
#: client id, from epoch, from time ms, last epoch at which the member was seen holding it].
SavedModernIntervals = dict[str, dict[str, list[Any]]]

#: record type id -> what it stands for here.
GROUP_EPOCH_TYPES = frozenset(t for t, (_, role) in ROLES.items() if role is RecordRole.GROUP_EPOCH)
CURRENT_TYPES = frozenset(t for t, (_, role) in ROLES.items() if role is RecordRole.CURRENT)


def topic_of(state: ModernState, slot_id: str, names: Mapping[str, str]) -> str:
    """The name of a topic id when one is known, else the id; a streams subtopology as is."""
    if state.group_type is GroupType.STREAMS:
        return slot_id
    return state.name_of(slot_id, names) or slot_id


def _tps(state: ModernState, slots: Iterable[Slot], names: Mapping[str, str]) -> TPList:
    return tp_list((topic_of(state, t, names), p) for t, p in slots)


def member_state_name(state: ModernState, current: Current) -> str:
    """``STABLE``, ``UNREVOKED``, ``UNRELEASED`` or ``UNKNOWN(n)``, by the group type's bytes."""
    states = STREAMS_STATES if state.group_type is GroupType.STREAMS else CONSUMER_STATES
    return states.name(current.state)


def server_assignor(state: ModernState) -> str | None:
    """The assignor the members ask the brokers for: one name, several comma-separated, or none."""
    names = sorted(
        {
            m.meta.server_assignor
            for m in state.members.values()
            if m.meta and m.meta.server_assignor
        }
    )
    return ",".join(names) or None


def snapshot_row(
    group: str,
    state: ModernState,
    tombstone: bool,
    record_version: int | None,
    source: Mapping[str, Any],
) -> SnapshotRow:
    """The ``group_snapshots`` row of a group-epoch record, ``state`` being the state after it;
    ``source``: the record's source columns."""
    return SnapshotRow(
        group=group,
        group_type=state.group_type.value,
        generation=None if tombstone else state.group_epoch,
        assignment_epoch=None if tombstone else state.assignment_epoch,
        # The protocol type a ListGroups answer gives for the group type.
        protocol_type=state.group_type.value,
        protocol=None if tombstone else server_assignor(state),
        member_count=None
        if tombstone
        else sum(1 for m in state.members.values() if m.current is not None),
        record_version=record_version,
        tombstone=tombstone,
        **source,
    )


def member_row(
    group: str,
    state: ModernState,
    member_id: str,
    names: Mapping[str, str],
    source: Mapping[str, Any],
) -> MemberRow:
    """The ``member_assignments`` row of a current-assignment record.

    A tombstone (the member left, or was fenced) gives a row without a member epoch or state:
    readers of the table see the member end there instead of lingering until the group goes.
    """
    member = state.members.get(member_id)
    meta = None if member is None else member.meta  # a leave tombstones it after the 8
    who: dict[str, Any] = {
        "group": group,
        "group_type": state.group_type.value,
        "generation": state.group_epoch,
        "member_id": member_id,
        "client_id": None if meta is None else meta.client_id,
        "client_host": None if meta is None else meta.client_host,
        "group_instance_id": None if meta is None else meta.instance_id,
        "rebalance_timeout": None if meta is None else meta.rebalance_timeout_ms,
        **source,
    }
    if member is None or member.current is None:
        return MemberRow(assignment=[], pending_revocation=[], **who)
    current = member.current
    return MemberRow(
        member_epoch=current.member_epoch,
        member_state=member_state_name(state, current),
        assignment=_tps(state, current.assigned, names),
        pending_revocation=_tps(state, current.pending, names),
        target=None if member.target is None else _tps(state, member.target.slots, names),
        topics=None if meta is None else sorted(state.subscribed(meta)),
        **who,
    )


# -- ownership intervals ----------------------------------------------------------------------
def _key(slot: Slot) -> str:
    return f"{slot[1]}/{slot[0]}"  # partition first, as groupwatch.ownership does


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
