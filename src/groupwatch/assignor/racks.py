"""Kafka's ``AbstractStickyAssignor.RackInfo`` (KIP-881): member racks against replica racks.

Partitions and members are the integers of :mod:`groupwatch.assignor.group`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: Per topic, per partition, the racks of its replicas (``None`` entries allowed).
PartitionRacks = Mapping[str, Sequence[Sequence[str | None]]]


class RackInfo:
    """Which rack each member is in, which racks hold each partition, and whether that matters.

    ``rack_aware`` is ``AbstractPartitionAssignor.useRackAwareAssignment`` with
    ``preferRackAwareLogic`` off: some member rack holds a replica, and not every partition is
    on every rack.  ``consumers_per_partition`` (``numConsumersByPartition``) is ``None``
    unless some member has a rack, as Kafka builds nothing in that case.
    """

    __slots__ = ("member_racks", "consumers_per_partition", "rack_aware", "partition_racks")

    def __init__(
        self,
        topics: Sequence[str],
        partition_counts: Sequence[int],
        member_racks: list[str | None],
        replica_racks: PartitionRacks | None,
    ) -> None:
        """Index ``replica_racks`` by partition number; ``member_racks`` is by member number."""
        self.member_racks = member_racks
        members_per_rack: dict[str, int] = {}
        for rack in member_racks:
            if rack is not None:
                members_per_rack[rack] = members_per_rack.get(rack, 0) + 1
        self.consumers_per_partition: list[int] | None = None
        self.rack_aware = False
        self.partition_racks: list[frozenset[str]] = []
        if not members_per_rack:
            return
        racks_of = _racks_per_partition(topics, partition_counts, replica_racks or {})
        all_racks: set[str] = set().union(*racks_of) if racks_of else set()
        self.consumers_per_partition = [
            sum(members_per_rack.get(rack, 0) for rack in racks) for racks in racks_of
        ]
        if not members_per_rack.keys() & all_racks:
            return  # no member shares a rack with any replica
        if all(racks == all_racks for racks in racks_of):
            return  # every partition is on every rack: racks cannot make a difference
        self.rack_aware = True
        self.partition_racks = racks_of

    def racks_mismatch(self, member: int, partition: int) -> bool:
        """``racksMismatch``: the member has a rack and no replica of the partition is there."""
        if not self.rack_aware:
            return False
        rack = self.member_racks[member]
        return rack is not None and rack not in self.partition_racks[partition]

    def sort_by_rack_consumers(self, partitions: list[int]) -> None:
        """``sortPartitionsByRackConsumers``: fewest members on the replicas' racks first.

        Stable, so partitions with equal counts keep their order; a no-op without member racks.
        """
        if self.consumers_per_partition is not None:
            partitions.sort(key=self.consumers_per_partition.__getitem__)

    def next_rack_member(self, partition: int, members: Sequence[int], first: int) -> int:
        """``nextRackConsumer``: the index in ``members``, searching circularly from ``first``,
        of the first member on a rack holding ``partition``; -1 if there is none.
        """
        racks = self.partition_racks[partition]
        if not racks:
            return -1
        member_racks = self.member_racks
        size = len(members)
        for i in range(size):
            index = (first + i) % size
            rack = member_racks[members[index]]
            if rack is not None and rack in racks:
                return index
        return -1


def _racks_per_partition(
    topics: Sequence[str], partition_counts: Sequence[int], replica_racks: PartitionRacks
) -> list[frozenset[str]]:
    """The replica racks of every partition, by partition number (empty when unknown)."""
    empty: frozenset[str] = frozenset()
    racks_of: list[frozenset[str]] = []
    for topic, count in zip(topics, partition_counts, strict=True):
        rows = replica_racks.get(topic) or ()
        for p in range(count):
            if p < len(rows) and rows[p]:
                racks_of.append(frozenset(r for r in rows[p] if r is not None))
            else:
                racks_of.append(empty)
    return racks_of
