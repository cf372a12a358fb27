"""Kafka's ``AbstractStickyAssignor.GeneralAssignmentBuilder``: subscriptions differ.

Members keep the valid owned partitions of topics they still subscribe to
(``assignOwnedPartitions``); each unassigned partition goes to the least loaded subscriber,
with a rack-matching pass first (``maybeAssign``); then ``balance`` moves partitions from
heavier to lighter subscribers, preferring a partition's previous owner and undoing earlier
moves (:mod:`groupwatch.assignor.movements`), and keeps the result only if it scores better.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

from groupwatch.assignor.group import IndexedGroup
from groupwatch.assignor.javaorder import to_int32
from groupwatch.assignor.model import KafkaAssignorFailure
from groupwatch.assignor.movements import PartitionMovements
from groupwatch.assignor.sizeorder import MembersBySize

#: ``ConsumerGenerationPair`` per partition: (previous owner, its generation).
PreviousOwners = dict[int, tuple[int, int]]


class GeneralAssignmentBuilder:
    """One run of the general algorithm over an :class:`IndexedGroup` (see the module)."""

    def __init__(self, group: IndexedGroup, owned: Mapping[int, dict[int, None]]) -> None:
        """Index subscribers and sizes; ``owned`` is each member's valid owned partitions."""
        self.group = group
        topic_count = group.topic_count
        # topic2AllPotentialConsumers: each topic's subscribers in Java map order
        self.topic_subscribers: list[list[int]] = [[] for _ in range(topic_count)]
        for member in group.java_map_order:
            for topic in group.subscribed_topics[member]:
                self.topic_subscribers[topic].append(member)
        self.subscribed_topic_sets: list[frozenset[int]] = [
            frozenset(topics) for topics in group.subscribed_topics
        ]
        self.max_assignment_size: list[int] = [
            sum(group.partition_counts[t] for t in topics) for topics in group.subscribed_topics
        ]
        # currentAssignment and currentPartitionConsumer
        self.assignment: dict[int, list[int]] = {
            member: list(owned[member]) for member in group.java_map_order
        }
        self.owner_of: dict[int, int] = {}
        for member, partitions in self.assignment.items():
            for partition in partitions:
                self.owner_of[partition] = member
        # sortedAllPartitions: topics with fewer subscribers first (TopicComparator)
        topic_order = sorted(range(topic_count), key=lambda t: (len(self.topic_subscribers[t]), t))
        offsets = group.topic_offsets
        self.sorted_partitions: list[int] = list(
            chain.from_iterable(range(offsets[t], offsets[t + 1]) for t in topic_order)
        )
        self.members_by_size = MembersBySize()
        self.revocation_required = False
        self.movements = PartitionMovements(group)
        # per topic: member -> how many of the topic's partitions it has (for _is_balanced)
        self.topic_owner_counts: list[dict[int, int]] = [{} for _ in range(topic_count)]
        self._balanced: bool | None = None

    def build(self) -> dict[int, list[int]]:
        """Run Kafka's steps; return every member's partitions (Java map order, list order)."""
        previous = self._previous_owners()
        assigned = self._assign_owned_partitions()
        if assigned:
            unassigned = [p for p in self.sorted_partitions if p not in assigned]
        else:
            unassigned = self.sorted_partitions
        for member in self.assignment:
            self.members_by_size.add(member, len(self.assignment[member]))
        for member, partitions in self.assignment.items():
            for partition in partitions:
                self._count_owner_added(partition, member)
        self._balance(previous, unassigned)
        return self.assignment

    # -- bookkeeping -------------------------------------------------------------------------

    def _assignment_size(self, member: int) -> int:
        """How many partitions ``member`` has; Kafka throws if it was set aside as fixed."""
        partitions = self.assignment.get(member)
        if partitions is None:
            raise KafkaAssignorFailure(
                "NullPointerException: member "
                f"{self.group.member_ids[member]} has no current assignment"
            )
        return len(partitions)

    def _count_owner_added(self, partition: int, member: int) -> None:
        """Count ``partition`` for ``member`` in its topic's owner counts."""
        owners = self.topic_owner_counts[self.group.topic_of[partition]]
        owners[member] = owners.get(member, 0) + 1

    def _count_owner_removed(self, partition: int, member: int) -> None:
        """Uncount ``partition`` for ``member`` in its topic's owner counts."""
        owners = self.topic_owner_counts[self.group.topic_of[partition]]
        left = owners[member] - 1
        if left:
            owners[member] = left
        else:
            del owners[member]

    # -- before balancing --------------------------------------------------------------------

    def _previous_owners(self) -> PreviousOwners:
        """``prepopulateCurrentAssignments``: each partition's owner at an older generation.

        Only members behind the group's highest generation count; the most recent of their
        claims on a partition wins, ties going to the first member in Java map order.
        """
        group = self.group
        previous: PreviousOwners = {}
        max_generation = group.max_generation
        for member in group.java_map_order:
            generation = group.generations[member]
            if generation < max_generation:
                for partition in group.claimed[member]:
                    entry = previous.get(partition)
                    if entry is None or generation > entry[1]:
                        previous[partition] = (member, generation)
        return previous

    def _assign_owned_partitions(self) -> set[int]:
        """Drop owned partitions the member no longer subscribes to or has off-rack.

        Any drop means a revocation is required.  Returns the partitions still assigned.
        """
        group = self.group
        racks = group.racks
        assigned: set[int] = set()
        topic_of = group.topic_of
        for member, partitions in self.assignment.items():
            subscribed = self.subscribed_topic_sets[member]
            keep: list[int] = []
            for partition in partitions:
                if topic_of[partition] not in subscribed or racks.racks_mismatch(member, partition):
                    self.revocation_required = True
                else:
                    keep.append(partition)
                    assigned.add(partition)
            if len(keep) != len(partitions):
                self.assignment[member] = keep
        return assigned

    # -- isBalanced ---------------------------------------------------------------------------

    def _is_balanced(self) -> bool:
        """``isBalanced``, cached until the next change of any assignment."""
        if self._balanced is None:
            self._balanced = self._compute_balanced()
        return self._balanced

    def _compute_balanced(self) -> bool:
        """``isBalanced``: no member could take a partition from a subscriber 2+ heavier.

        Kafka scans each topic's partitions for their owners; the largest owner per topic
        (from the owner counts) answers the same question.
        """
        members = self.members_by_size
        assignment = self.assignment
        low = len(assignment[members.first()])
        high = len(assignment[members.last()])
        if low >= high - 1:
            return True
        heaviest_owner: dict[int, int] = {}
        for member in members:
            size = len(assignment[member])
            if size == self.max_assignment_size[member]:
                continue
            for topic in self.group.subscribed_topics[member]:
                heaviest = heaviest_owner.get(topic)
                if heaviest is None:
                    owners = self.topic_owner_counts[topic]
                    heaviest = max((self._assignment_size(o) for o in owners), default=0)
                    heaviest_owner[topic] = heaviest
                if size + 1 < heaviest:
                    return False
        return True

    # -- maybeAssign and balance ---------------------------------------------------------------

    def _least_loaded_subscriber(self, topic: int, rack_partition: int = -1) -> int:
        """The lightest member subscribed to ``topic`` (on a rack of ``rack_partition`` if
        that is given); -1 if there is none.
        """
        subscribed = self.subscribed_topic_sets
        for member in self.members_by_size:
            if topic in subscribed[member] and (
                rack_partition < 0 or not self.group.racks.racks_mismatch(member, rack_partition)
            ):
                return member
        return -1

    def _give(self, partition: int, member: int) -> None:
        """Assign an unassigned ``partition`` to ``member``."""
        self.members_by_size.remove(member)
        self.assignment[member].append(partition)
        self.owner_of[partition] = member
        self._count_owner_added(partition, member)
        self.members_by_size.add(member, len(self.assignment[member]))
        self._balanced = None

    def _maybe_assign(self, unassigned: list[int]) -> None:
        """``maybeAssign``: each unassigned partition to its least loaded subscriber.

        With racks, a first pass only considers subscribers on a replica's rack.
        """
        topic_of = self.group.topic_of
        subscribers = self.topic_subscribers
        to_assign = unassigned
        if self.group.racks.rack_aware:
            left: list[int] = []
            for partition in unassigned:
                topic = topic_of[partition]
                if not subscribers[topic]:
                    left.append(partition)
                    continue
                member = self._least_loaded_subscriber(topic, partition)
                if member >= 0:
                    self._give(partition, member)
                else:
                    left.append(partition)
            to_assign = left
        for partition in to_assign:
            topic = topic_of[partition]
            if not subscribers[topic]:
                continue
            member = self._least_loaded_subscriber(topic)
            if member >= 0:
                self._give(partition, member)

    def _balance(self, previous: PreviousOwners, unassigned: list[int]) -> None:
        """``balance``: assign what is unassigned, then move partitions while it helps.

        Topics with fewer than two subscribers and members that cannot take or give are set
        aside first.  Unless the group was empty, the moves are kept only if they lower
        Kafka's balance score.
        """
        group = self.group
        assignment = self.assignment
        initializing = len(assignment[self.members_by_size.last()]) == 0
        self._maybe_assign(unassigned)

        topic_of = group.topic_of
        fixed_topics = {t for t in range(group.topic_count) if len(self.topic_subscribers[t]) < 2}
        if fixed_topics:
            self.sorted_partitions = [
                p for p in self.sorted_partitions if topic_of[p] not in fixed_topics
            ]
            unassigned = [p for p in unassigned if topic_of[p] not in fixed_topics]
        fixed_members: dict[int, list[int]] = {}
        for member in group.java_map_order:
            if not self._can_participate(member, fixed_topics):
                self.members_by_size.remove(member)
                fixed_members[member] = assignment.pop(member)
        self._balanced = None

        pre_balance = {member: list(partitions) for member, partitions in assignment.items()}
        pre_balance_owners = dict(self.owner_of)
        if not self.revocation_required:
            self._perform_reassignments(unassigned, previous)
        performed = self._perform_reassignments(self.sorted_partitions, previous)
        if (
            not initializing
            and performed
            and balance_score(assignment) >= balance_score(pre_balance)
        ):
            assignment.clear()
            assignment.update(pre_balance)
            self.owner_of = pre_balance_owners
        assignment.update(fixed_members)

    def _can_participate(self, member: int, fixed_topics: set[int]) -> bool:
        """``canConsumerParticipateInReassignment``: room to take, or something movable."""
        partitions = self.assignment[member]
        if len(partitions) < self.max_assignment_size[member]:
            return True
        topic_of = self.group.topic_of
        return any(topic_of[p] not in fixed_topics for p in partitions)

    # -- performReassignments ------------------------------------------------------------------

    def _perform_reassignments(self, partitions: list[int], previous: PreviousOwners) -> bool:
        """``performReassignments``: pass over ``partitions`` until balanced or nothing moves.

        Returns whether any partition moved.
        """
        topic_of = self.group.topic_of
        performed = False
        while True:
            modified = False
            for partition in partitions:
                if self._is_balanced():
                    break
                if self._maybe_reassign(partition, topic_of[partition], previous):
                    performed = modified = True
            if not modified:
                return performed

    def _maybe_reassign(self, partition: int, topic: int, previous: PreviousOwners) -> bool:
        """Move ``partition`` if its owner is 2+ heavier than its previous owner or than another
        subscriber (one on a replica's rack first, when the owner itself is on one).

        Returns whether it moved.
        """
        owner = self.owner_of.get(partition)
        if owner is None:
            raise KafkaAssignorFailure(
                f"partition {self.group.topic_partition(partition)} has no current consumer"
            )
        size = self._assignment_size(owner)
        previous_owner = previous.get(partition)
        if previous_owner is not None and size > self._assignment_size(previous_owner[0]) + 1:
            self._reassign(partition, previous_owner[0])
            return True
        racks = self.group.racks
        if racks.rack_aware:
            owner_rack = racks.member_racks[owner]
            replica_racks = racks.partition_racks[partition]
            if owner_rack is not None and replica_racks and owner_rack in replica_racks:
                for other in self.topic_subscribers[topic]:
                    other_rack = racks.member_racks[other]
                    if other_rack is None or other_rack not in replica_racks:
                        continue
                    if size > self._assignment_size(other) + 1:
                        self._reassign(partition, self._least_loaded_subscriber(topic))
                        return True
        for other in self.topic_subscribers[topic]:
            if size > self._assignment_size(other) + 1:
                self._reassign(partition, self._least_loaded_subscriber(topic))
                return True
        return False

    def _reassign(self, partition: int, new: int) -> None:
        """``reassignPartition``: move ``partition``, or the partition that undoes a move."""
        owner = self.owner_of[partition]
        actual = self.movements.actual_partition_to_move(partition, owner, new)
        self._process_movement(actual, new)

    def _process_movement(self, partition: int, new: int) -> None:
        """``processPartitionMovement``: record the move and update every index."""
        old = self.owner_of[partition]
        members = self.members_by_size
        members.remove(old)
        members.remove(new)
        self.movements.move_partition(partition, old, new)
        old_list = self.assignment.get(old)
        new_list = self.assignment.get(new)
        if old_list is None or new_list is None:
            raise KafkaAssignorFailure("NullPointerException while moving a partition")
        old_list.remove(partition)
        self._count_owner_removed(partition, old)
        new_list.append(partition)
        self._count_owner_added(partition, new)
        self.owner_of[partition] = new
        members.add(new, len(new_list))
        members.add(old, len(old_list))
        self._balanced = None


def balance_score(assignment: Mapping[int, list[int]]) -> int:
    """``getBalanceScore``: Σ over member pairs of |size difference|, in Java int arithmetic."""
    sizes = sorted(len(partitions) for partitions in assignment.values())
    count = len(sizes)
    total = 0
    for i, size in enumerate(sizes):
        total += size * (2 * i - count + 1)
    return to_int32(total)
