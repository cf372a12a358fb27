"""Kafka's ``StickyAssignor`` / ``CooperativeStickyAssignor`` (kafka-clients 4.x), in pure Python.

The algorithm is ``AbstractStickyAssignor`` as described in the reference (§4): ownership
resolution per partition (KIP-341/KIP-792/KAFKA-14639), then the *constrained* builder when every
member has the same subscription and the *general* builder otherwise, rack awareness (KIP-881)
and, for the cooperative protocol, KIP-429's withholding of partitions that change owner.

Internally a partition is an int ``gid``: topics sorted in Java ``String`` order, partitions
numbered consecutively, so ascending ``gid`` is Kafka's (topic, partition) order.  A member is an
int ``mi``: its rank in Java ``String`` order of member ids, so ascending ``mi`` is the member
order of Kafka's ``TreeSet``/``Collections.sort``.  Where Kafka iterates a ``HashMap`` of
members, we iterate ``order`` (the emulated Java iteration order, see :mod:`javaorder`).
"""

from __future__ import annotations

import bisect
import gc
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, compress, repeat
from typing import Literal

from groupwatch.assignor.javaorder import (
    JavaHashSet,
    hashmap_order,
    java_sorted,
    string_hash,
    to_int32,
    topic_partition_hash,
)
from groupwatch.assignor.model import (
    DEFAULT_GENERATION,
    PROTOCOLS,
    AssignmentResult,
    AssignorInputError,
    KafkaAssignorFailure,
    MemberSubscription,
    Protocol,
    TopicPartition,
)

PartitionRacks = Mapping[str, Sequence[Sequence[str | None]]]


# --------------------------------------------------------------------------------------------
# Input preparation
# --------------------------------------------------------------------------------------------


class _Group:
    """The validated, integer-indexed view of one assignment's input."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Sequence[MemberSubscription],
        partition_racks: PartitionRacks | None,
        protocol: str = "sticky",
    ) -> None:
        for topic, count in partitions_per_topic.items():
            if not isinstance(topic, str):
                raise AssignorInputError(f"topic name {topic!r} is not a string")
            if isinstance(count, bool) or not isinstance(count, int):
                raise AssignorInputError(f"partition count of topic {topic!r} is not an integer")
            if count < 0:
                raise AssignorInputError(f"topic {topic!r} has a negative partition count {count}")
        ids = [m.member_id for m in members]
        if len(set(ids)) != len(ids):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise AssignorInputError(f"duplicate member ids: {dupes}")
        self.ids_sorted = java_sorted(ids)
        rank = {mid: i for i, mid in enumerate(self.ids_sorted)}
        n = len(ids)
        self.n = n
        # mi in the leader's (JoinGroup response) order, and in Java HashMap iteration order
        self.input_order = [rank[mid] for mid in ids]
        self.order = [self.input_order[i] for i in hashmap_order(ids)]

        by_rank: list[MemberSubscription] = [members[0]] * n if n else []
        for m in members:
            by_rank[rank[m.member_id]] = m
        self.raw_topics: list[tuple[str, ...]] = [tuple(dict.fromkeys(m.topics)) for m in by_rank]
        self.gen: list[int] = [
            DEFAULT_GENERATION if m.generation is None else int(m.generation) for m in by_rank
        ]
        self.max_generation = max([DEFAULT_GENERATION, *self.gen])

        # partitionsPerTopic as AbstractPartitionAssignor builds it: subscribed topics with metadata
        # and at least one partition.
        subscribed = {t for ts in self.raw_topics for t in ts}
        existing = [t for t in subscribed if partitions_per_topic.get(t, 0) > 0]
        self.topics = java_sorted(existing)
        self.T = len(self.topics)
        self.trank = {t: i for i, t in enumerate(self.topics)}
        self.counts = [partitions_per_topic[t] for t in self.topics]
        self.offsets = [0] * (self.T + 1)
        for i, c in enumerate(self.counts):
            self.offsets[i + 1] = self.offsets[i] + c
        self.P = self.offsets[self.T]
        self._gid_topic: list[int] | None = None
        self._gid_name: list[str] | None = None
        self._gid_part: list[int] = []

        # subscriptions restricted to existing topics (consumer2AllPotentialTopics)
        self.sub_topics: list[list[int]] = [
            [self.trank[t] for t in ts if t in self.trank] for ts in self.raw_topics
        ]
        # memberData partitions: only those of existing topics matter (others are dropped by
        # Kafka too); out-of-range partition numbers are dropped as well (see docs/assignor.md)
        self.owned: list[list[int]] = []
        base = {t: (self.offsets[i], self.counts[i]) for i, t in enumerate(self.topics)}
        for m in by_rank:
            lst: list[int] = []
            append = lst.append
            for topic, p in m.owned_partitions:
                entry = base.get(topic)
                if entry is not None and 0 <= p < entry[1]:
                    append(entry[0] + p)
            if protocol == "sticky":
                # StickyAssignor user data lists the previous assignment grouped by topic
                first_seen = {
                    t: i for i, t in reversed(list(enumerate(self.gid_topic[x] for x in lst)))
                }
                lst.sort(key=lambda x: first_seen[self.gid_topic[x]])
            else:
                # ConsumerProtocol writes ownedPartitions sorted by topic, then partition
                lst.sort()
            self.owned.append(lst)

        self._init_racks(by_rank, partition_racks)

    @property
    def gid_topic(self) -> list[int]:
        if self._gid_topic is None:
            self._gid_topic = list(
                chain.from_iterable(repeat(t, c) for t, c in enumerate(self.counts))
            )
        return self._gid_topic

    def tp(self, gid: int) -> TopicPartition:
        t = self.gid_topic[gid]
        return TopicPartition(self.topics[t], gid - self.offsets[t])

    def tps(self, gids: Sequence[int]) -> tuple[TopicPartition, ...]:
        """``TopicPartition``s for many gids at C speed (1M partitions is the benchmark size)."""
        if self._gid_name is None:
            self._gid_name = list(
                chain.from_iterable(
                    repeat(t, c) for t, c in zip(self.topics, self.counts, strict=True)
                )
            )
            self._gid_part = list(chain.from_iterable(range(c) for c in self.counts))
        names = map(self._gid_name.__getitem__, gids)
        parts = map(self._gid_part.__getitem__, gids)
        return tuple(map(tuple.__new__, repeat(TopicPartition), zip(names, parts, strict=True)))

    def _init_racks(self, by_rank: list[MemberSubscription], racks: PartitionRacks | None) -> None:
        self.consumer_rack: list[str | None] = [m.rack_id or None for m in by_rank]
        per_rack: dict[str, int] = {}
        for r in self.consumer_rack:
            if r is not None:
                per_rack[r] = per_rack.get(r, 0) + 1
        # RackInfo: nothing at all unless some member has a rack
        self.num_consumers: list[int] | None = None
        self.use_racks = False
        self.prack: list[frozenset[str]] = []
        if not per_rack:
            return
        racks = racks or {}
        empty: frozenset[str] = frozenset()
        prack: list[frozenset[str]] = []
        for t, topic in enumerate(self.topics):
            rows = racks.get(topic) or ()
            for p in range(self.counts[t]):
                if p < len(rows) and rows[p]:
                    prack.append(frozenset(r for r in rows[p] if r is not None))
                else:
                    prack.append(empty)
        all_racks: set[str] = set().union(*prack) if prack else set()
        self.num_consumers = [sum(per_rack.get(r, 0) for r in rs) for rs in prack]
        # AbstractPartitionAssignor.useRackAwareAssignment (preferRackAwareLogic = false)
        if not per_rack.keys() & all_racks:
            return
        if all(rs == all_racks for rs in prack):
            return
        self.use_racks = True
        self.prack = prack

    def mismatch(self, mi: int, gid: int) -> bool:
        """``RackInfo.racksMismatch``."""
        if not self.use_racks:
            return False
        r = self.consumer_rack[mi]
        return r is not None and r not in self.prack[gid]


# --------------------------------------------------------------------------------------------
# Ownership resolution and path choice (AbstractStickyAssignor.allSubscriptionsEqual)
# --------------------------------------------------------------------------------------------


def _resolve_ownership(g: _Group) -> tuple[bool, dict[int, dict[int, None]], set[int]]:
    equal = True
    subscribed: set[str] = set()
    previous_owner: dict[int, int] = {}
    owned: dict[int, dict[int, None]] = {}
    multiple: set[int] = set()
    gen = g.gen
    for mi in g.order:
        topics = g.raw_topics[mi]
        if not subscribed:
            subscribed.update(topics)
        elif equal and not (len(topics) == len(subscribed) and subscribed.issuperset(topics)):
            equal = False
        mine: dict[int, None] = {}
        owned[mi] = mine
        my_gen = gen[mi]
        for gid in g.owned[mi]:
            other = previous_owner.get(gid)
            if other is None:
                mine[gid] = None
                previous_owner[gid] = mi
                continue
            other_gen = gen[other]
            if my_gen == other_gen:
                multiple.add(gid)
                owned[other].pop(gid, None)
                previous_owner[gid] = mi
            elif my_gen > other_gen:
                mine[gid] = None
                owned[other].pop(gid, None)
                previous_owner[gid] = mi
    return equal, owned, multiple


# --------------------------------------------------------------------------------------------
# Constrained path (ConstrainedAssignmentBuilder)
# --------------------------------------------------------------------------------------------


def _constrained(
    g: _Group, owned: dict[int, dict[int, None]], multiple: set[int]
) -> tuple[dict[int, list[int]], dict[int, int]]:
    n = g.n
    total = g.P
    min_q = total // n
    max_q = -(-total // n)
    expected = total % n
    current = 0
    assignment: dict[int, list[int]] = {mi: [] for mi in g.order}
    maybe_revoked: dict[int, int] = {}
    transferring: dict[int, int] = {}
    under: list[int] = []
    exact: list[int] = []
    unassigned_mask = bytearray(b"\x01") * total
    T = g.T
    offsets = g.offsets
    gid_topic = g.gid_topic if any(owned.values()) else None

    for mi in g.order:
        mine = owned[mi]
        if mine:
            assert gid_topic is not None
            lst = list(mine)
            if g.use_racks:
                keep = []
                for gid in lst:
                    if g.mismatch(mi, gid):
                        maybe_revoked[gid] = mi
                    else:
                        keep.append(gid)
                lst = keep
            if len(lst) > 1:
                lst.sort(key=lambda x: (x - offsets[gid_topic[x]]) * T + gid_topic[x])
            if multiple:
                lst = [x for x in lst if x not in multiple]
        else:
            lst = []
        size = len(lst)
        if size < min_q:
            kept = lst
            under.append(mi)
        elif size >= max_q and current < expected:
            current += 1
            if current == expected:
                exact.clear()
            kept = lst[:max_q]
            for gid in lst[max_q:]:
                maybe_revoked[gid] = mi
        else:
            kept = lst[:min_q]
            for gid in lst[min_q:]:
                maybe_revoked[gid] = mi
            if current < expected:
                exact.append(mi)
        if kept:
            assignment[mi] = kept
            for gid in kept:
                unassigned_mask[gid] = 0

    unassigned = list(compress(range(total), unassigned_mask))
    under.sort()
    exact.sort()
    if g.num_consumers is not None:
        unassigned.sort(key=g.num_consumers.__getitem__)

    def assign_new(gid: int, mi: int) -> int:
        lst = assignment[mi]
        lst.append(gid)
        prev = maybe_revoked.get(gid)
        if (prev is not None and prev != mi) or gid in multiple:
            transferring[gid] = mi
        return len(lst)

    exact_q = deque(exact)
    if g.use_racks and unassigned:
        crack = g.consumer_rack
        prack = g.prack

        def next_rack_consumer(gid: int, members: Sequence[int], first: int) -> int:
            racks = prack[gid]
            if not racks:
                return -1
            size = len(members)
            for i in range(size):
                index = (first + i) % size
                r = crack[members[index]]
                if r is not None and r in racks:
                    return index
            return -1

        next_index = 0
        remaining: list[int] = []
        for gid in unassigned:
            chosen = -1
            idx = next_rack_consumer(gid, under, next_index)
            if idx >= 0:
                chosen = under[idx]
                count = len(assignment[chosen]) + 1
                if count >= min_q:
                    del under[idx]
                    if count < max_q and current < expected:
                        exact_q.append(chosen)
                else:
                    idx += 1
                next_index = idx % len(under) if under else 0
            elif exact_q:
                first = next_rack_consumer(gid, exact_q, 0)
                if first >= 0:
                    chosen = exact_q[first]
                    if len(assignment[chosen]) + 1 == max_q:
                        del exact_q[first]
                        current += 1
                        if current == expected:
                            exact_q.clear()
            if chosen >= 0:
                assign_new(gid, chosen)
            else:
                remaining.append(gid)
        unassigned = remaining

    # assignRoundRobin: an iterator over the under-min list, restarted when exhausted
    pos = 0
    exhausted_once = False
    fresh_lap = True
    i = 0
    m = len(unassigned)
    while i < m:
        if not exhausted_once and pos < len(under):
            # bulk: every member left in `under` from `pos` on takes one partition per lap
            # until the first of them reaches min_q; a lap is the plain round robin.
            if fresh_lap and pos == 0:
                fresh_lap = False
                need = min(min_q - len(assignment[c]) for c in under) - 1
                laps = min(need, (m - i) // len(under))
                if laps > 0:
                    width = len(under)
                    for k, c in enumerate(under):
                        assignment[c].extend(unassigned[i + k : i + laps * width : width])
                    if maybe_revoked or multiple:
                        for k in range(i, i + laps * width):
                            gid = unassigned[k]
                            c = under[(k - i) % width]
                            prev = maybe_revoked.get(gid)
                            if (prev is not None and prev != c) or gid in multiple:
                                transferring[gid] = c
                    i += laps * width
                    continue
            chosen = under[pos]
            pos += 1
            from_iter = True
        else:
            if not under and not exact_q:
                raise KafkaAssignorFailure("No more unfilled consumers to be assigned.")
            if not under:
                chosen = exact_q.popleft()
                exhausted_once = True
                from_iter = False
            else:
                # restart the iterator over the under-min list (Java: a new iterator)
                pos = 0
                exhausted_once = False
                fresh_lap = True
                continue
        count = assign_new(unassigned[i], chosen)
        i += 1
        if count == min_q:
            if not from_iter:
                raise KafkaAssignorFailure("IllegalStateException from the under-min iterator")
            pos -= 1
            del under[pos]
            exact_q.append(chosen)
        elif count == max_q:
            current += 1

    if under:
        if current != expected:
            raise KafkaAssignorFailure(
                "We haven't reached the expected number of members with more than the minQuota "
                "partitions, but no more partitions to be assigned"
            )
        for mi in under:
            if len(assignment[mi]) != min_q:
                raise KafkaAssignorFailure(
                    f"Consumer: [{g.ids_sorted[mi]}] doesn't reach minQuota partitions, "
                    "and no more partitions to be assigned"
                )
    return assignment, transferring


# --------------------------------------------------------------------------------------------
# General path (GeneralAssignmentBuilder)
# --------------------------------------------------------------------------------------------


class _SizeOrdered:
    """Kafka's ``TreeSet<String>`` ordered by (assignment size, member id)."""

    __slots__ = ("_buckets", "_sizes", "_key")

    def __init__(self) -> None:
        self._buckets: dict[int, list[int]] = {}
        self._sizes: list[int] = []
        self._key: dict[int, int] = {}

    def add(self, mi: int, size: int) -> None:
        if mi in self._key:
            return
        self._key[mi] = size
        bucket = self._buckets.get(size)
        if bucket is None:
            self._buckets[size] = [mi]
            bisect.insort(self._sizes, size)
        else:
            bisect.insort(bucket, mi)

    def remove(self, mi: int) -> None:
        size = self._key.pop(mi, None)
        if size is None:
            return
        bucket = self._buckets[size]
        del bucket[bisect.bisect_left(bucket, mi)]
        if not bucket:
            del self._buckets[size]
            del self._sizes[bisect.bisect_left(self._sizes, size)]

    def first(self) -> int:
        return self._buckets[self._sizes[0]][0]

    def last(self) -> int:
        return self._buckets[self._sizes[-1]][-1]

    def __iter__(self) -> Iterator[int]:
        buckets = self._buckets
        for size in self._sizes:
            yield from buckets[size]

    def __len__(self) -> int:
        return len(self._key)


class _General:
    def __init__(self, g: _Group, owned: dict[int, dict[int, None]]) -> None:
        self.g = g
        n_topics = g.T
        self.t2c: list[list[int]] = [[] for _ in range(n_topics)]
        for mi in g.order:
            for t in g.sub_topics[mi]:
                self.t2c[t].append(mi)
        self.sub_set: list[frozenset[int]] = [frozenset(ts) for ts in g.sub_topics]
        self.max_size: list[int] = [sum(g.counts[t] for t in ts) for ts in g.sub_topics]
        self.current: dict[int, list[int]] = {mi: list(owned[mi]) for mi in g.order}
        self.owner: dict[int, int] = {}
        for mi, lst in self.current.items():
            for gid in lst:
                self.owner[gid] = mi
        topic_order = sorted(range(n_topics), key=lambda t: (len(self.t2c[t]), t))
        self.sorted_all: list[int] = list(
            chain.from_iterable(range(g.offsets[t], g.offsets[t + 1]) for t in topic_order)
        )
        self.tree = _SizeOrdered()
        self.revocation_required = False
        self.topic_hash = [string_hash(t) for t in g.topics]
        self.moves: dict[int, tuple[int, int]] = {}
        self.moves_by_topic: dict[int, dict[tuple[int, int], JavaHashSet]] = {}
        self.topic_owners: list[dict[int, int]] = [{} for _ in range(n_topics)]
        self._balanced: bool | None = None

    # -- helpers ---------------------------------------------------------------------------

    def _size(self, mi: int) -> int:
        lst = self.current.get(mi)
        if lst is None:
            raise KafkaAssignorFailure(
                f"NullPointerException: member {self.g.ids_sorted[mi]} has no current assignment"
            )
        return len(lst)

    def _note_add(self, gid: int, mi: int) -> None:
        owners = self.topic_owners[self.g.gid_topic[gid]]
        owners[mi] = owners.get(mi, 0) + 1

    def _note_remove(self, gid: int, mi: int) -> None:
        owners = self.topic_owners[self.g.gid_topic[gid]]
        left = owners[mi] - 1
        if left:
            owners[mi] = left
        else:
            del owners[mi]

    # -- build -----------------------------------------------------------------------------

    def build(self) -> dict[int, list[int]]:
        g = self.g
        prev = self._prepopulate()
        assigned = self._assign_owned()
        if assigned:
            unassigned = [gid for gid in self.sorted_all if gid not in assigned]
        else:
            unassigned = self.sorted_all
        for mi in self.current:
            self.tree.add(mi, len(self.current[mi]))
        gid_topic = g.gid_topic
        for mi, lst in self.current.items():
            for gid in lst:
                self._note_add(gid, mi)
        self._balance(prev, unassigned, gid_topic)
        return self.current

    def _prepopulate(self) -> dict[int, tuple[int, int]]:
        g = self.g
        prev: dict[int, tuple[int, int]] = {}
        max_gen = g.max_generation
        for mi in g.order:
            gen = g.gen[mi]
            if gen < max_gen:
                for gid in g.owned[mi]:
                    entry = prev.get(gid)
                    if entry is None or gen > entry[1]:
                        prev[gid] = (mi, gen)
        return prev

    def _assign_owned(self) -> set[int]:
        g = self.g
        assigned: set[int] = set()
        gid_topic = g.gid_topic
        for mi, lst in self.current.items():
            subs = self.sub_set[mi]
            keep: list[int] = []
            for gid in lst:
                if gid_topic[gid] not in subs or g.mismatch(mi, gid):
                    self.revocation_required = True
                else:
                    keep.append(gid)
                    assigned.add(gid)
            if len(keep) != len(lst):
                self.current[mi] = keep
        return assigned

    def _is_balanced(self) -> bool:
        if self._balanced is None:
            self._balanced = self._compute_balanced()
        return self._balanced

    def _compute_balanced(self) -> bool:
        tree = self.tree
        current = self.current
        low = len(current[tree.first()])
        high = len(current[tree.last()])
        if low >= high - 1:
            return True
        top: dict[int, int] = {}
        for mi in tree:
            size = len(current[mi])
            if size == self.max_size[mi]:
                continue
            for t in self.g.sub_topics[mi]:
                best = top.get(t)
                if best is None:
                    owners = self.topic_owners[t]
                    best = max((self._size(o) for o in owners), default=0)
                    top[t] = best
                if size + 1 < best:
                    return False
        return True

    def _first_subscriber(self, t: int, racked_gid: int = -1) -> int:
        subs = self.sub_set
        for mi in self.tree:
            if t in subs[mi] and (racked_gid < 0 or not self.g.mismatch(mi, racked_gid)):
                return mi
        return -1

    def _give(self, gid: int, mi: int) -> None:
        self.tree.remove(mi)
        self.current[mi].append(gid)
        self.owner[gid] = mi
        self._note_add(gid, mi)
        self.tree.add(mi, len(self.current[mi]))
        self._balanced = None

    def _balance(
        self, prev: dict[int, tuple[int, int]], unassigned: list[int], gid_topic: list[int]
    ) -> None:
        g = self.g
        current = self.current
        initializing = len(current[self.tree.last()]) == 0

        to_assign = unassigned
        if g.use_racks:
            left: list[int] = []
            for gid in unassigned:
                t = gid_topic[gid]
                if not self.t2c[t]:
                    left.append(gid)
                    continue
                mi = self._first_subscriber(t, gid)
                if mi >= 0:
                    self._give(gid, mi)
                else:
                    left.append(gid)
            to_assign = left
        for gid in to_assign:
            t = gid_topic[gid]
            if not self.t2c[t]:
                continue
            mi = self._first_subscriber(t)
            if mi >= 0:
                self._give(gid, mi)

        fixed_topics = {t for t in range(g.T) if len(self.t2c[t]) < 2}
        if fixed_topics:
            self.sorted_all = [x for x in self.sorted_all if gid_topic[x] not in fixed_topics]
            unassigned = [x for x in unassigned if gid_topic[x] not in fixed_topics]

        fixed: dict[int, list[int]] = {}
        for mi in g.order:
            if not self._can_participate(mi, fixed_topics):
                self.tree.remove(mi)
                fixed[mi] = current.pop(mi)
        self._balanced = None

        pre_balance = {mi: list(lst) for mi, lst in current.items()}
        pre_owner = dict(self.owner)

        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all, prev)

        if (
            not initializing
            and performed
            and _balance_score(current) >= _balance_score(pre_balance)
        ):
            current.clear()
            current.update(pre_balance)
            self.owner = pre_owner

        current.update(fixed)

    def _can_participate(self, mi: int, fixed_topics: set[int]) -> bool:
        lst = self.current[mi]
        if len(lst) < self.max_size[mi]:
            return True
        gid_topic = self.g.gid_topic
        return any(gid_topic[gid] not in fixed_topics for gid in lst)

    def _perform_reassignments(
        self, partitions: list[int], prev: dict[int, tuple[int, int]]
    ) -> bool:
        g = self.g
        gid_topic = g.gid_topic
        performed = False
        while True:
            modified = False
            for gid in partitions:
                if self._is_balanced():
                    break
                t = gid_topic[gid]
                consumer = self.owner.get(gid)
                if consumer is None:
                    raise KafkaAssignorFailure(f"partition {g.tp(gid)} has no current consumer")
                size = self._size(consumer)
                p = prev.get(gid)
                if p is not None and size > self._size(p[0]) + 1:
                    self._reassign(gid, p[0])
                    performed = modified = True
                    continue
                found = False
                if g.use_racks:
                    crack = g.consumer_rack[consumer]
                    pracks = g.prack[gid]
                    if crack is not None and pracks and crack in pracks:
                        for other in self.t2c[t]:
                            orack = g.consumer_rack[other]
                            if orack is None or orack not in pracks:
                                continue
                            if size > self._size(other) + 1:
                                self._reassign(gid, self._first_subscriber(t))
                                performed = modified = found = True
                                break
                if not found:
                    for other in self.t2c[t]:
                        if size > self._size(other) + 1:
                            self._reassign(gid, self._first_subscriber(t))
                            performed = modified = True
                            break
            if not modified:
                return performed

    def _reassign(self, gid: int, new: int) -> None:
        consumer = self.owner[gid]
        actual = self._actual_partition_to_move(gid, consumer, new)
        self._process_movement(actual, new)

    def _process_movement(self, gid: int, new: int) -> None:
        old = self.owner[gid]
        tree = self.tree
        tree.remove(old)
        tree.remove(new)
        self._move_record(gid, old, new)
        old_list = self.current.get(old)
        new_list = self.current.get(new)
        if old_list is None or new_list is None:
            raise KafkaAssignorFailure("NullPointerException while moving a partition")
        old_list.remove(gid)
        self._note_remove(gid, old)
        new_list.append(gid)
        self._note_add(gid, new)
        self.owner[gid] = new
        tree.add(new, len(new_list))
        tree.add(old, len(old_list))
        self._balanced = None

    # -- PartitionMovements ----------------------------------------------------------------

    def _tp_hash(self, gid: int) -> int:
        t = self.g.gid_topic[gid]
        return topic_partition_hash(self.topic_hash[t], gid - self.g.offsets[t])

    def _remove_record(self, gid: int) -> tuple[int, int]:
        pair = self.moves.pop(gid)
        t = self.g.gid_topic[gid]
        for_topic = self.moves_by_topic[t]
        s = for_topic[pair]
        s.remove(gid)
        if not len(s):
            del for_topic[pair]
        if not for_topic:
            del self.moves_by_topic[t]
        return pair

    def _add_record(self, gid: int, pair: tuple[int, int]) -> None:
        self.moves[gid] = pair
        t = self.g.gid_topic[gid]
        for_topic = self.moves_by_topic.setdefault(t, {})
        s = for_topic.get(pair)
        if s is None:
            s = for_topic[pair] = JavaHashSet()
        s.add(gid, self._tp_hash(gid))

    def _move_record(self, gid: int, old: int, new: int) -> None:
        if gid in self.moves:
            existing = self._remove_record(gid)
            if existing[0] != new:
                self._add_record(gid, (existing[0], new))
        else:
            self._add_record(gid, (old, new))

    def _actual_partition_to_move(self, gid: int, old: int, new: int) -> int:
        t = self.g.gid_topic[gid]
        for_topic = self.moves_by_topic.get(t)
        if for_topic is None:
            return gid
        moved = self.moves.get(gid)
        if moved is not None:
            old = moved[0]
        reverse = for_topic.get((new, old))
        if reverse is None:
            return gid
        return reverse.first()


def _balance_score(assignment: Mapping[int, list[int]]) -> int:
    """``getBalanceScore``: Σ over member pairs of |size difference|, in Java int arithmetic."""
    sizes = sorted(len(lst) for lst in assignment.values())
    n = len(sizes)
    total = 0
    for i, s in enumerate(sizes):
        total += s * (2 * i - n + 1)
    return to_int32(total)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


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
    proto: Protocol = "sticky" if protocol == "sticky" else "cooperative-sticky"
    g = _Group(partitions_per_topic, members, partition_racks, proto)
    ppt = {t: g.counts[i] for i, t in enumerate(g.topics)}
    if g.n == 0:
        return AssignmentResult(proto, {}, (), "empty", ppt)

    equal, owned, multiple = _resolve_ownership(g)
    transferring: dict[int, int] | None
    path: Literal["constrained", "general"]
    if equal:
        result, transferring = _constrained(g, owned, multiple)
        path = "constrained"
    else:
        result = _General(g, owned).build()
        transferring = None
        path = "general"

    withheld: list[int] = []
    if proto == "cooperative-sticky":
        if transferring is None:
            transferring = _transferring_general(g, result)
        for gid, mi in transferring.items():
            result[mi].remove(gid)
        withheld = sorted(transferring)

    assignment = {g.ids_sorted[mi]: g.tps(result[mi]) for mi in g.input_order}
    return AssignmentResult(proto, assignment, g.tps(withheld), path, ppt)


def _transferring_general(g: _Group, result: Mapping[int, list[int]]) -> dict[int, int]:
    """``CooperativeStickyAssignor.computePartitionsTransferringOwnership``."""
    added: dict[int, int] = {}
    revoked: set[int] = set()
    for mi, lst in result.items():
        owned = set(g.owned[mi])
        for gid in lst:
            if gid not in owned:
                added[gid] = mi
        now = set(lst)
        for gid in g.owned[mi]:
            if gid not in now:
                revoked.add(gid)
    return {gid: mi for gid, mi in added.items() if gid in revoked}
