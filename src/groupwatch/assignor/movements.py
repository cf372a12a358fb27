"""Kafka's ``AbstractStickyAssignor.PartitionMovements``: the general builder's stickiness ledger.

Every partition the general builder moves is recorded with the member it originally came from
and the member it is at now (a ``ConsumerPair``), also grouped per topic and pair.  When a
partition should move from A to B while some partition of the same topic already moved from B
to A, Kafka moves that one back instead: the first element of a Java ``HashSet``, so the
choice depends on ``TopicPartition.hashCode`` and is emulated with
:class:`groupwatch.assignor.javaorder.JavaHashSet`.
"""

from __future__ import annotations

from groupwatch.assignor.group import IndexedGroup
from groupwatch.assignor.javaorder import JavaHashSet, string_hash, topic_partition_hash

#: ``ConsumerPair``: (the member a partition originally came from, the member it is at now).
MemberPair = tuple[int, int]


class PartitionMovements:
    """The movement records of one general-builder run, by partition and by topic and pair."""

    __slots__ = ("_group", "_topic_hashes", "by_partition", "by_topic")

    def __init__(self, group: IndexedGroup) -> None:
        """Start with no movements; topic name hashes are computed once."""
        self._group = group
        self._topic_hashes = [string_hash(t) for t in group.topics]
        self.by_partition: dict[int, MemberPair] = {}
        self.by_topic: dict[int, dict[MemberPair, JavaHashSet]] = {}

    def _java_hash(self, partition: int) -> int:
        """``TopicPartition.hashCode`` of a partition number."""
        topic = self._group.topic_of[partition]
        return topic_partition_hash(
            self._topic_hashes[topic], partition - self._group.topic_offsets[topic]
        )

    def _remove_record(self, partition: int) -> MemberPair:
        """``removeMovementRecordOfPartition``: forget the partition's record and return it."""
        pair = self.by_partition.pop(partition)
        topic = self._group.topic_of[partition]
        for_topic = self.by_topic[topic]
        moved = for_topic[pair]
        moved.remove(partition)
        if not len(moved):
            del for_topic[pair]
        if not for_topic:
            del self.by_topic[topic]
        return pair

    def _add_record(self, partition: int, pair: MemberPair) -> None:
        """``addPartitionMovementRecord``."""
        self.by_partition[partition] = pair
        topic = self._group.topic_of[partition]
        for_topic = self.by_topic.setdefault(topic, {})
        moved = for_topic.get(pair)
        if moved is None:
            moved = for_topic[pair] = JavaHashSet()
        moved.add(partition, self._java_hash(partition))

    def move_partition(self, partition: int, old: int, new: int) -> None:
        """``movePartition``: record a move from ``old`` to ``new``.

        A partition that moved before keeps its original source; moving it back there
        erases the record altogether.
        """
        if partition in self.by_partition:
            existing = self._remove_record(partition)
            if existing[0] != new:
                self._add_record(partition, (existing[0], new))
        else:
            self._add_record(partition, (old, new))

    def actual_partition_to_move(self, partition: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: ``partition``, or a same-topic partition to undo.

        If ``partition`` (at ``old``) has moved before, its original source stands for ``old``.
        If some partition of the topic moved from ``new`` to that member, that one (the first
        of Kafka's ``HashSet``) goes back instead.
        """
        topic = self._group.topic_of[partition]
        for_topic = self.by_topic.get(topic)
        if for_topic is None:
            return partition
        moved = self.by_partition.get(partition)
        if moved is not None:
            old = moved[0]
        reverse = for_topic.get((new, old))
        if reverse is None:
            return partition
        return reverse.first()
