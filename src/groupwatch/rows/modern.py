"""``group_snapshots`` and ``member_assignments`` rows of KIP-848 consumer, streams and share
groups, read off the engine's state of the group after a record.

A classic group's snapshot is one record; a modern group's is spread over one record per key
(``groupwatch.detect.modern``).  The engine applies each record to the group's
:class:`~groupwatch.detect.modern.ModernState` and reports it (:class:`~groupwatch.detect.Applied`);
the rows the record stands for are read off the state as it is after the record
(:mod:`groupwatch.rows.step` says which record gives which row):

- a group-epoch record (3, 11, 17) -> one ``group_snapshots`` row;
- a current-assignment record (8, 14, 22) -> one ``member_assignments`` row (a tombstone, a
  member gone, has none) and the ``partition_ownership`` intervals it opens and closes
  (:mod:`groupwatch.rows.modern_ownership`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from groupwatch.detect.findings import tp_list
from groupwatch.detect.modern.model import (
    CONSUMER_STATES,
    STREAMS_STATES,
    Current,
    GroupType,
    Slot,
)
from groupwatch.detect.modern.state import ModernState
from groupwatch.tables import MemberRow, SnapshotRow, TPList


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
