"""One assignment's input, validated and numbered the way both of Kafka's builders need it.

A partition is an int: topics sorted in Java ``String`` order, their partitions numbered
consecutively, so ascending partition numbers are Kafka's (topic, partition) order.  A member is
an int too: its rank in Java ``String`` order of member ids, so ascending member numbers are the
order of Kafka's ``TreeSet``/``Collections.sort`` of member ids.  Where Kafka iterates a
``HashMap`` of members, the builders iterate :attr:`IndexedGroup.java_map_order` (the emulated
Java iteration order, see :mod:`groupwatch.assignor.javaorder`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, repeat

from groupwatch.assignor.javaorder import hashmap_order, java_sorted
from groupwatch.assignor.model import (
    DEFAULT_GENERATION,
    AssignorInputError,
    MemberSubscription,
    TopicPartition,
)
from groupwatch.assignor.racks import PartitionRacks, RackInfo


class IndexedGroup:
    """The validated, integer-numbered view of one assignment's input (see the module docstring).

    Per member number: ``member_ids``, ``subscription_names`` (the subscribed topic names,
    deduplicated, including topics without metadata), ``subscribed_topics`` (topic numbers of
    existing topics: ``consumer2AllPotentialTopics``), ``generations`` and ``claimed`` (the
    partitions its user data or ``ownedPartitions`` lists, in the order Kafka decodes them).
    Per topic number: ``topics``, ``partition_counts`` and ``topic_offsets`` (its first
    partition number; one extra entry holds ``partition_count``).
    """

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Sequence[MemberSubscription],
        partition_racks: PartitionRacks | None,
        protocol: str = "sticky",
    ) -> None:
        """Validate the input and build every index; ``protocol`` fixes the claims' order."""
        _check_input(partitions_per_topic, members)
        by_rank = self._number_members(members)
        self._number_topics(partitions_per_topic)
        self._topic_of: list[int] | None = None
        self._name_of: list[str] | None = None
        self._number_of: list[int] = []
        # consumer2AllPotentialTopics: subscriptions restricted to existing topics
        self.subscribed_topics: list[list[int]] = [
            [self.topic_index[t] for t in names if t in self.topic_index]
            for names in self.subscription_names
        ]
        self.claimed: list[list[int]] = self._number_claims(by_rank, protocol)
        self.racks = RackInfo(
            self.topics,
            self.partition_counts,
            [m.rack_id or None for m in by_rank],
            partition_racks,
        )

    def _number_members(self, members: Sequence[MemberSubscription]) -> list[MemberSubscription]:
        """Number the members; return them by member number."""
        ids = [m.member_id for m in members]
        self.member_ids = java_sorted(ids)
        rank = {member_id: i for i, member_id in enumerate(self.member_ids)}
        count = len(ids)
        self.member_count = count
        # member numbers in the leader's (JoinGroup response) order, and in Java HashMap order
        self.leader_order = [rank[member_id] for member_id in ids]
        self.java_map_order = [self.leader_order[i] for i in hashmap_order(ids)]

        by_rank: list[MemberSubscription] = [members[0]] * count if count else []
        for m in members:
            by_rank[rank[m.member_id]] = m
        self.subscription_names: list[tuple[str, ...]] = [
            tuple(dict.fromkeys(m.topics)) for m in by_rank
        ]
        self.generations: list[int] = [
            DEFAULT_GENERATION if m.generation is None else int(m.generation) for m in by_rank
        ]
        self.rival_generations: list[int] = [
            generation if m.rival_generation is None else int(m.rival_generation)
            for generation, m in zip(self.generations, by_rank, strict=True)
        ]
        self.max_generation = max([DEFAULT_GENERATION, *self.generations])
        return by_rank

    def _number_topics(self, partitions_per_topic: Mapping[str, int]) -> None:
        """Number the topics and their partitions.

        Only subscribed topics with metadata and at least one partition count, as in the
        ``partitionsPerTopic`` that ``AbstractPartitionAssignor`` builds.
        """
        subscribed = {t for names in self.subscription_names for t in names}
        existing = [t for t in subscribed if partitions_per_topic.get(t, 0) > 0]
        self.topics = java_sorted(existing)
        self.topic_count = len(self.topics)
        self.topic_index = {t: i for i, t in enumerate(self.topics)}
        self.partition_counts = [partitions_per_topic[t] for t in self.topics]
        self.topic_offsets = [0] * (self.topic_count + 1)
        for i, count in enumerate(self.partition_counts):
            self.topic_offsets[i + 1] = self.topic_offsets[i] + count
        self.partition_count = self.topic_offsets[self.topic_count]

    def _number_claims(self, by_rank: list[MemberSubscription], protocol: str) -> list[list[int]]:
        """Each member's claimed partitions as numbers, in the order Kafka reads them.

        Claims on topics outside ``topics`` are dropped (Kafka drops them too); out-of-range
        partition numbers are dropped as well (see docs/assignor.md).
        """
        first_and_count = {
            t: (self.topic_offsets[i], self.partition_counts[i]) for i, t in enumerate(self.topics)
        }
        claimed: list[list[int]] = []
        for m in by_rank:
            partitions: list[int] = []
            append = partitions.append
            for topic, p in m.owned_partitions:
                entry = first_and_count.get(topic)
                if entry is not None and 0 <= p < entry[1]:
                    append(entry[0] + p)
            if protocol != "sticky":
                # ConsumerProtocol writes ownedPartitions sorted by topic, then partition
                partitions.sort()
            elif len(partitions) > 1:
                # StickyAssignor user data lists the previous assignment grouped by topic, in
                # the order each topic first appears (dropped claims included: they were listed)
                topic_of = self.topic_of
                seen: dict[str, int] = {}
                for topic, _ in m.owned_partitions:
                    seen.setdefault(topic, len(seen))
                first_seen = {i: seen[t] for i, t in enumerate(self.topics) if t in seen}
                partitions.sort(key=lambda x: first_seen[topic_of[x]])
            claimed.append(partitions)
        return claimed

    @property
    def topic_of(self) -> list[int]:
        """Topic number of every partition number (built on first use: it is P entries long)."""
        if self._topic_of is None:
            self._topic_of = list(
                chain.from_iterable(repeat(t, c) for t, c in enumerate(self.partition_counts))
            )
        return self._topic_of

    def topic_partition(self, partition: int) -> TopicPartition:
        """The ``TopicPartition`` a partition number stands for."""
        t = self.topic_of[partition]
        return TopicPartition(self.topics[t], partition - self.topic_offsets[t])

    def topic_partitions(self, partitions: Sequence[int]) -> tuple[TopicPartition, ...]:
        """``TopicPartition``s for many partition numbers at C speed (1M is the benchmark size)."""
        if self._name_of is None:
            self._name_of = list(
                chain.from_iterable(
                    repeat(t, c) for t, c in zip(self.topics, self.partition_counts, strict=True)
                )
            )
            self._number_of = list(chain.from_iterable(range(c) for c in self.partition_counts))
        names = map(self._name_of.__getitem__, partitions)
        numbers = map(self._number_of.__getitem__, partitions)
        return tuple(map(tuple.__new__, repeat(TopicPartition), zip(names, numbers, strict=True)))


def _check_input(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> None:
    """Raise :class:`AssignorInputError` on malformed topic counts or duplicate member ids."""
    for topic, count in partitions_per_topic.items():
        if not isinstance(topic, str):
            raise AssignorInputError(f"topic name {topic!r} is not a string")
        if isinstance(count, bool) or not isinstance(count, int):
            raise AssignorInputError(f"partition count of topic {topic!r} is not an integer")
        if count < 0:
            raise AssignorInputError(f"topic {topic!r} has a negative partition count {count}")
    ids = [m.member_id for m in members]
    if len(set(ids)) != len(ids):
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        raise AssignorInputError(f"duplicate member ids: {duplicates}")
