"""Who owns each partition now, from the group state the engine already keeps: a classic
group's newest completed snapshot, a KIP-848 consumer group's members' current assignments."""

from __future__ import annotations

from collections.abc import Mapping

from groupwatch.detect.lag.model import Owner
from groupwatch.detect.model import GroupSnapshot
from groupwatch.detect.modern import ModernState
from groupwatch.detect.modern.model import GroupType

TP = tuple[str, int]


def classic_owners(snapshot: GroupSnapshot) -> dict[TP, Owner]:
    """Each assigned partition's member in a classic group's snapshot (its generation)."""
    out: dict[TP, Owner] = {}
    for m in snapshot.members:
        for tp in m.assigned:
            out.setdefault(
                (tp.topic, tp.partition),
                Owner(m.member_id, m.client_id, m.client_host, snapshot.generation),
            )
    return out


def modern_owners(state: ModernState, names: Mapping[str, str]) -> dict[TP, Owner]:
    """Each partition in a KIP-848 consumer group member's current assignment (its member
    epoch); streams groups hold tasks, not partitions, and share groups commit no offsets."""
    out: dict[TP, Owner] = {}
    if state.group_type is not GroupType.CONSUMER:
        return out
    for member_id, member in sorted(state.members.items()):
        current = member.current
        if current is None:
            continue
        meta = member.meta
        for topic_id, partition in current.assigned:
            topic = state.name_of(topic_id, names)
            if topic is None:
                continue
            out.setdefault(
                (topic, partition),
                Owner(
                    member_id,
                    None if meta is None else meta.client_id,
                    None if meta is None else meta.client_host,
                    current.member_epoch,
                ),
            )
    return out


def modern_members(state: ModernState) -> int:
    """How many members a KIP-848 group has (with a current assignment or metadata)."""
    return len(state.members)
