"""Kafka's ``AbstractStickyAssignor.ConstrainedAssignmentBuilder``: every member subscribes alike.

Each member ends with ``minQuota`` or ``maxQuota`` partitions (at most ``expected_over_min``
members at ``maxQuota``).  The steps, as Kafka runs them: members keep what they validly own up
to their quota (``assignOwnedPartitions``); with racks, the unassigned partitions go first to
members on a replica's rack (``assignRackAwareRoundRobin``); the rest go round robin
(``assignRoundRobin``); finally every member must have reached ``minQuota``
(``verifyUnfilledMembers``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import compress

from groupwatch.assignor.claims import ClaimReading
from groupwatch.assignor.group import IndexedGroup
from groupwatch.assignor.model import KafkaAssignorFailure


@dataclass(frozen=True, slots=True)
class ConstrainedAssignment:
    """The builder's result.

    ``assignment`` maps every member (Java map order) to its partitions in Kafka's list order;
    ``transferring`` (``partitionsTransferringOwnership``) maps each partition that changes
    owner, or that several members claimed, to its new owner.
    """

    assignment: dict[int, list[int]]
    transferring: dict[int, int]


class ConstrainedAssignmentBuilder:
    """One run of the constrained algorithm over an :class:`IndexedGroup` (see the module)."""

    def __init__(self, group: IndexedGroup, ownership: ClaimReading) -> None:
        """Compute the quotas; nothing is assigned until :meth:`build`."""
        self.group = group
        self.owned = ownership.owned
        self.claimed_by_several = ownership.claimed_by_several
        total = group.partition_count
        members = group.member_count
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_over_min = total % members
        self.current_over_min = 0
        self.assignment: dict[int, list[int]] = {m: [] for m in group.java_map_order}
        # partition -> the member that owned it and had to give it up
        self.maybe_revoked: dict[int, int] = {}
        self.transferring: dict[int, int] = {}
        # members below minQuota, and members at exactly minQuota that may still take one more
        self.under_min: list[int] = []
        self.exactly_min: deque[int] = deque()
        self._unassigned_mask = bytearray(b"\x01") * total

    def build(self) -> ConstrainedAssignment:
        """Run Kafka's steps in order and return the assignment."""
        self._assign_owned_partitions()
        unassigned = self._unassigned_partitions()
        if self.group.racks.rack_aware and unassigned:
            unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled_members()
        return ConstrainedAssignment(self.assignment, self.transferring)

    # -- assignOwnedPartitions ---------------------------------------------------------------

    def _assign_owned_partitions(self) -> None:
        """Let every member keep its valid owned partitions up to its quota.

        At most ``expected_over_min`` members keep ``maxQuota``; the others keep ``minQuota``
        and the rest of what they owned becomes "maybe revoked".  Fills ``under_min`` and
        ``exactly_min`` (both sorted by member id).
        """
        min_quota = self.min_quota
        max_quota = self.max_quota
        expected = self.expected_over_min
        maybe_revoked = self.maybe_revoked
        unassigned_mask = self._unassigned_mask
        exactly_min: list[int] = []
        for member in self.group.java_map_order:
            partitions = self._owned_in_kafka_order(member)
            size = len(partitions)
            if size < min_quota:
                kept = partitions
                self.under_min.append(member)
            elif size >= max_quota and self.current_over_min < expected:
                self.current_over_min += 1
                if self.current_over_min == expected:
                    exactly_min.clear()
                kept = partitions[:max_quota]
                for partition in partitions[max_quota:]:
                    maybe_revoked[partition] = member
            else:
                kept = partitions[:min_quota]
                for partition in partitions[min_quota:]:
                    maybe_revoked[partition] = member
                if self.current_over_min < expected:
                    exactly_min.append(member)
            if kept:
                self.assignment[member] = kept
                for partition in kept:
                    unassigned_mask[partition] = 0
        self.under_min.sort()
        exactly_min.sort()
        self.exactly_min = deque(exactly_min)

    def _owned_in_kafka_order(self, member: int) -> list[int]:
        """The member's owned partitions it may keep, in the order Kafka considers them.

        With racks, partitions with no replica on the member's rack are set aside as maybe
        revoked.  Kafka sorts by partition number, then topic, and skips partitions several
        members claimed.
        """
        mine = self.owned[member]
        if not mine:
            return []
        group = self.group
        partitions = list(mine)
        if group.racks.rack_aware:
            keep = []
            for partition in partitions:
                if group.racks.racks_mismatch(member, partition):
                    self.maybe_revoked[partition] = member
                else:
                    keep.append(partition)
            partitions = keep
        if len(partitions) > 1:
            topic_of = group.topic_of
            offsets = group.topic_offsets
            topics = group.topic_count
            partitions.sort(key=lambda x: (x - offsets[topic_of[x]]) * topics + topic_of[x])
        if self.claimed_by_several:
            several = self.claimed_by_several
            partitions = [x for x in partitions if x not in several]
        return partitions

    def _unassigned_partitions(self) -> list[int]:
        """``getUnassignedPartitions``: ascending, then stably by members on the replicas' racks."""
        unassigned = list(compress(range(self.group.partition_count), self._unassigned_mask))
        self.group.racks.sort_by_rack_consumers(unassigned)
        return unassigned

    def _assign_new_partition(self, partition: int, member: int) -> int:
        """``assignNewPartition``: append, note a change of owner, return the member's new size."""
        partitions = self.assignment[member]
        partitions.append(partition)
        previous = self.maybe_revoked.get(partition)
        if (previous is not None and previous != member) or partition in self.claimed_by_several:
            self.transferring[partition] = member
        return len(partitions)

    # -- assignRackAwareRoundRobin -----------------------------------------------------------

    def _assign_rack_aware_round_robin(self, unassigned: list[int]) -> list[int]:
        """Give each partition to a member on one of its replicas' racks; return the rest.

        Under-min members are tried circularly from just after the previous pick, then the
        members at exactly ``minQuota`` while more may reach ``maxQuota``.
        """
        racks = self.group.racks
        assignment = self.assignment
        under = self.under_min
        exactly_min = self.exactly_min
        min_quota = self.min_quota
        max_quota = self.max_quota
        next_index = 0
        remaining: list[int] = []
        for partition in unassigned:
            chosen = -1
            index = racks.next_rack_member(partition, under, next_index)
            if index >= 0:
                chosen = under[index]
                count = len(assignment[chosen]) + 1
                if count >= min_quota:
                    del under[index]
                    if count < max_quota and self.current_over_min < self.expected_over_min:
                        exactly_min.append(chosen)
                else:
                    index += 1
                next_index = index % len(under) if under else 0
            elif exactly_min:
                first = racks.next_rack_member(partition, exactly_min, 0)
                if first >= 0:
                    chosen = exactly_min[first]
                    if len(assignment[chosen]) + 1 == max_quota:
                        del exactly_min[first]
                        self.current_over_min += 1
                        if self.current_over_min == self.expected_over_min:
                            exactly_min.clear()
            if chosen >= 0:
                self._assign_new_partition(partition, chosen)
            else:
                remaining.append(partition)
        return remaining

    # -- assignRoundRobin --------------------------------------------------------------------

    def _assign_round_robin(self, unassigned: list[int]) -> None:
        """Deal the partitions out over an iterator of the under-min members.

        Kafka restarts the iterator when it runs out while under-min members remain; once
        none remain, members at exactly ``minQuota`` take one more each.  A member reaching
        ``minQuota`` leaves the under-min list for the exactly-min queue.
        """
        assign_new = self._assign_new_partition
        under = self.under_min
        exactly_min = self.exactly_min
        min_quota = self.min_quota
        max_quota = self.max_quota
        position = 0  # the iterator's cursor into `under`
        exhausted = False  # the iterator has handed out an exactly-min member and stays spent
        fresh_lap = True
        i = 0
        total = len(unassigned)
        while i < total:
            if not exhausted and position < len(under):
                if fresh_lap and position == 0:
                    fresh_lap = False
                    taken = self._assign_full_laps(unassigned, i)
                    if taken:
                        i += taken
                        continue
                chosen = under[position]
                position += 1
                from_iterator = True
            else:
                if not under and not exactly_min:
                    raise KafkaAssignorFailure("No more unfilled consumers to be assigned.")
                if not under:
                    chosen = exactly_min.popleft()
                    exhausted = True
                    from_iterator = False
                else:
                    # Java: a new iterator over the under-min list
                    position = 0
                    exhausted = False
                    fresh_lap = True
                    continue
            count = assign_new(unassigned[i], chosen)
            i += 1
            if count == min_quota:
                if not from_iterator:
                    raise KafkaAssignorFailure("IllegalStateException from the under-min iterator")
                position -= 1
                del under[position]
                exactly_min.append(chosen)
            elif count == max_quota:
                self.current_over_min += 1

    def _assign_full_laps(self, unassigned: list[int], start: int) -> int:
        """Do in bulk the laps of the round robin in which no member reaches ``minQuota``.

        Every under-min member takes one partition per lap, from ``unassigned[start]`` on, so
        each takes a strided slice: the same result as Kafka's one-by-one iterator.  Returns
        how many partitions were assigned (0 when not even one full lap fits).
        """
        assignment = self.assignment
        under = self.under_min
        width = len(under)
        need = min(self.min_quota - len(assignment[m]) for m in under) - 1
        laps = min(need, (len(unassigned) - start) // width)
        if laps <= 0:
            return 0
        end = start + laps * width
        for k, member in enumerate(under):
            assignment[member].extend(unassigned[start + k : end : width])
        if self.maybe_revoked or self.claimed_by_several:
            # what _assign_new_partition notes, partition by partition
            maybe_revoked = self.maybe_revoked
            several = self.claimed_by_several
            for k in range(start, end):
                partition = unassigned[k]
                member = under[(k - start) % width]
                previous = maybe_revoked.get(partition)
                if (previous is not None and previous != member) or partition in several:
                    self.transferring[partition] = member
        return laps * width

    # -- verifyUnfilledMembers ---------------------------------------------------------------

    def _verify_unfilled_members(self) -> None:
        """Fail as Kafka does when a member is left below ``minQuota`` or too few reach max."""
        if not self.under_min:
            return
        if self.current_over_min != self.expected_over_min:
            raise KafkaAssignorFailure(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for member in self.under_min:
            if len(self.assignment[member]) != self.min_quota:
                raise KafkaAssignorFailure(
                    f"Consumer: [{self.group.member_ids[member]}] doesn't reach minQuota "
                    "partitions, and no more partitions to be assigned"
                )
