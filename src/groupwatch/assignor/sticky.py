"""Kafka's ``StickyAssignor`` / ``CooperativeStickyAssignor`` (kafka-clients 4.x), in pure Python.

The algorithm is ``AbstractStickyAssignor`` as described in the reference (§4), in the same
pieces as Kafka's class:

* :mod:`~groupwatch.assignor.group`: the input, validated and numbered (partitions and
  members are ints; see that module for the orders they follow);
* :mod:`~groupwatch.assignor.racks`: ``RackInfo`` (KIP-881);
* :mod:`~groupwatch.assignor.claims`: ``allSubscriptionsEqual``, which also reads every
  member's claims (KIP-341/KIP-792/KAFKA-14639): the one definition of a valid claim;
* :mod:`~groupwatch.assignor.constrained`: ``ConstrainedAssignmentBuilder``, taken when every
  member has the same subscription;
* :mod:`~groupwatch.assignor.general`: ``GeneralAssignmentBuilder`` otherwise, with
  :mod:`~groupwatch.assignor.movements` (``PartitionMovements``) and
  :mod:`~groupwatch.assignor.sizeorder` (``sortedCurrentSubscriptions``).

This module is the entry point and, for the cooperative protocol, KIP-429's withholding of
partitions that change owner.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from typing import Literal

from groupwatch.assignor.claims import read_group_claims
from groupwatch.assignor.constrained import ConstrainedAssignmentBuilder
from groupwatch.assignor.general import GeneralAssignmentBuilder
from groupwatch.assignor.group import IndexedGroup
from groupwatch.assignor.model import (
    PROTOCOLS,
    AssignmentResult,
    AssignorInputError,
    MemberSubscription,
    Protocol,
)
from groupwatch.assignor.racks import PartitionRacks

__all__ = ["PartitionRacks", "assign"]


def assign(
    protocol: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    partition_racks: PartitionRacks | None = None,
) -> AssignmentResult:
    """Compute what Kafka's sticky (or cooperative-sticky) assignor returns for this group.

    ``members`` must be in the order the leader saw them (the JoinGroup response order):
    Kafka's result depends on it through Java ``HashMap`` iteration order.  ``partition_racks``
    maps a topic to, per partition, the racks of its replicas (``None`` entries allowed).
    """
    if protocol not in PROTOCOLS:
        raise AssignorInputError(f"unknown protocol {protocol!r}; expected one of {PROTOCOLS}")
    # Nothing here creates reference cycles, and with a million partitions the cyclic collector
    # would otherwise spend most of the run scanning the caller's (and our) young objects.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _assign(protocol, partitions_per_topic, members, partition_racks)
    finally:
        if collecting:
            gc.enable()


def _assign(
    protocol: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    partition_racks: PartitionRacks | None,
) -> AssignmentResult:
    """:func:`assign` without the garbage-collector handling."""
    proto: Protocol = "sticky" if protocol == "sticky" else "cooperative-sticky"
    group = IndexedGroup(partitions_per_topic, members, partition_racks, proto)
    counts = {t: group.partition_counts[i] for i, t in enumerate(group.topics)}
    if group.member_count == 0:
        return AssignmentResult(proto, {}, (), "empty", counts)

    ownership = read_group_claims(group)
    transferring: dict[int, int] | None
    path: Literal["constrained", "general"]
    if ownership.all_subscriptions_equal:
        built = ConstrainedAssignmentBuilder(group, ownership).build()
        result, transferring = built.assignment, built.transferring
        path = "constrained"
    else:
        result = GeneralAssignmentBuilder(group, ownership.owned).build()
        transferring = None
        path = "general"

    withheld: list[int] = []
    if proto == "cooperative-sticky":
        if transferring is None:
            transferring = _partitions_transferring_ownership(group, result)
        for partition, member in transferring.items():
            result[member].remove(partition)
        withheld = sorted(transferring)

    assignment = {
        group.member_ids[member]: group.topic_partitions(result[member])
        for member in group.leader_order
    }
    return AssignmentResult(proto, assignment, group.topic_partitions(withheld), path, counts)


def _partitions_transferring_ownership(
    group: IndexedGroup, result: Mapping[int, list[int]]
) -> dict[int, int]:
    """``CooperativeStickyAssignor.computePartitionsTransferringOwnership``.

    A partition transfers when one member gains it and another member's claim loses it.
    """
    added: dict[int, int] = {}
    revoked: set[int] = set()
    for member, partitions in result.items():
        claimed = set(group.claimed[member])
        for partition in partitions:
            if partition not in claimed:
                added[partition] = member
        now = set(partitions)
        for partition in group.claimed[member]:
            if partition not in now:
                revoked.add(partition)
    return {p: member for p, member in added.items() if p in revoked}
