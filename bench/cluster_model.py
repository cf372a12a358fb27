"""A cluster model for the benchmarks: ``__consumer_offsets`` of ~10,000 healthy groups.

    .venv/bin/python bench/cluster_model.py describe [--groups 10000] [--seed 1]
    .venv/bin/python bench/cluster_model.py check [--groups 200] [--live-events 1000]
        [--dump FILE.jsonl]
    .venv/bin/python bench/cluster_model.py produce --bootstrap HOST:PORT [--groups 10000]
        [--tail-generations N] [--tail-commits N] [--no-reuse]
    .venv/bin/python bench/cluster_model.py produce-commits --bootstrap HOST:PORT
        [--groups 10000] [--commits 2000000]
    .venv/bin/python bench/cluster_model.py live --manifest FILE --bootstrap HOST:PORT
        --seconds 60 --commit-rate 2000 --rebalance-rate 2 [--storm 200/60]

The model (seedable, ``--seed``): ``--groups`` groups with a skewed size mix (most 1-10 members,
about 13% 11-99, 2.7% 100-500, 0.3% 1,000-2,000), of six kinds: classic consumer groups on the
``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky`` protocols, KIP-848 consumer
groups (record types 3-8) and a few Kafka Connect groups (``protocol_type`` ``connect``). They
consume topics of 1-500 partitions from a shared pool; every member of a group subscribes to the
group's topics. Every assignment is healthy: the sticky protocols get what the project's sticky
assignor gives (``groupwatch.assignor.assign``), ``range`` and ``roundrobin`` what Kafka's
assignors of that name give, KIP-848 groups a round-robin target that every member holds, STABLE,
at the group's epoch. ``check`` runs the findings engine over the records offline.

Its ``__consumer_offsets`` history, in offset order, as a compacted log leaves it:

* each group's latest group metadata: one ``GroupMetadataValue`` v3 for a classic or Connect
  group (members claiming the previous generation's assignment); for a KIP-848 group its
  current set of records (4 partition metadata, 5 per member, 3 group epoch, 7 per member, 6
  assignment epoch, 8 per member), event times spread over two days;
* one offset commit per group, topic and partition (v3; v4 with the topic id for KIP-848
  groups), in the ten minutes before the tail;
* the uncompacted tail, the last hour: ``--tail-generations`` rebalances and ``--tail-commits``
  offset commits from the live-traffic generator.

``produce-commits`` writes a topic of offset commits only (``--commits`` of them, the live
traffic's commit mix: a random group-topic-partition weighted by partitions, v3 values and v4
for KIP-848 groups), once, reused while it holds that many records: the commits-only
benchmark's input (``bench_cluster.py --bench commits``).

Live traffic (``live``): offset commits at ``--commit-rate`` per second (a random
group-topic-partition, weighted by partitions) and rebalances at ``--rebalance-rate`` per second,
plus bursts of ``--storm-size`` rebalances every ``--storm-every`` seconds (``--storm SIZE/EVERY``
for short). A rebalance replaces
one member of a group (the oldest leaves, a new one joins; a cooperative group whose assignor
withholds partitions gets its follow-up generation in the same burst). Groups take turns in a
fixed random order, so no group rebalances more than once per ``--groups`` rebalances: rates
that would give a group more than 20 generations in 5 minutes (a ``rebalance_storm``) are
refused.

``produce`` writes the history into a 50-partition topic of a local broker once; a manifest,
``.groupwatch/bench/cluster-<hash of the parameters>.json`` (git-ignored), records the topic,
the counts and the parameters, and later runs reuse the topic (``--reuse``, the default) when its
end offsets still match. ``live`` appends to the same topic and counts what it appended in the
manifest, so a later ``live`` continues each group from its last generation.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import hashlib
import json
import math
import os
import random
import signal
import struct
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_job import MIRROR_PARTITIONS, coordinator_partition, log  # noqa: E402

from groupwatch.assignor import MemberSubscription, TopicPartition, assign  # noqa: E402
from groupwatch.protocol import (  # noqa: E402
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicIdPartitions,
    TopicMetadata,
    TopicPartitions,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)

#: Bump when the generator changes: the manifest hash then names a new topic.
MODEL_VERSION = 2
MANIFEST_DIR = ROOT / ".groupwatch" / "bench"
DEFAULT_GROUPS = 10_000
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
#: Group metadata of the compacted part: written over two days (within the job's 168 h idle
#: expiry), commits in the ten minutes before the tail, the tail in the last hour.
HISTORY_SPAN_MS = 2 * DAY_MS
COMMITS_SPAN_MS = 600_000
TAIL_SPAN_MS = HOUR_MS
#: ``rebalance_storm``'s defaults: more than 20 generations of a group within 5 minutes.
STORM_GENERATIONS = 20
STORM_WINDOW_S = 300
#: Kafka Connect's group protocol since 2.6 (incremental cooperative with session keys).
CONNECT_PROTOCOL = "sessioned"

KINDS = ("range", "roundrobin", "sticky", "cooperative-sticky", "consumer", "connect")
#: Percent of groups per kind ("consumer": KIP-848 consumer groups).
KIND_WEIGHTS = (30, 8, 10, 27, 22, 3)
STICKY = ("sticky", "cooperative-sticky")
#: Partition counts of the topic pool: value choices and their weight (percent).
PARTITION_CLASSES: tuple[tuple[tuple[int, ...], int], ...] = (
    ((1, 2, 3, 4, 6, 8), 30),
    ((10, 12, 16, 20, 24, 30, 32), 35),
    ((40, 48, 50, 60, 64, 96, 100), 22),
    ((120, 128, 150, 200, 256), 10),
    ((300, 384, 400, 500), 3),
)
#: Members 1..10 of a small group: weights.
SMALL_SIZES = (22, 20, 16, 11, 8, 7, 5, 4, 4, 3)
TOPICS_PER_SMALL_GROUP = ((1, 55), (2, 25), (3, 12), (4, 5), (5, 3))
WORDS = (
    "orders payments billing fraud inventory search shipping pricing ledger audit users "
    "sessions clicks metrics alerts catalog reviews checkout refunds notifications"
).split()
ROLES = "consumer indexer enricher sink aggregator router scorer projector archiver".split()

TP = tuple[str, int]
Record = tuple[bytes, bytes | None, int, int]  # key, value (None: tombstone), partition, ts ms


def _weighted(rng: random.Random, items: Sequence[Any], weights: Sequence[int]) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def _uuid_of(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=hashlib.blake2b(text.encode(), digest_size=16).digest(), version=4)


def _tps(tps: Sequence[TP]) -> tuple[TopicPartitions, ...]:
    by: dict[str, list[int]] = {}
    for topic, partition in tps:
        by.setdefault(topic, []).append(partition)
    return tuple(TopicPartitions(t, tuple(sorted(ps))) for t, ps in sorted(by.items()))


def _str16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def commit_key_prefix(group: str, topic: str) -> bytes:
    """``OffsetCommitKey`` bytes up to the partition (type 1, group, topic): a commit key is
    this plus the partition as int32, the same bytes ``encode_key`` writes."""
    return b"\x00\x01" + _str16(group) + _str16(topic)


# -- assignors of the non-sticky protocols -----------------------------------------------------
def range_assign(counts: dict[str, int], member_ids: Sequence[str]) -> dict[str, list[TP]]:
    """Kafka's RangeAssignor with every member on every topic: per topic, members in id order
    get consecutive ranges, the first ``partitions % members`` one more."""
    ordered = sorted(member_ids)
    out: dict[str, list[TP]] = {m: [] for m in ordered}
    for topic in sorted(counts):
        share, extra = divmod(counts[topic], len(ordered))
        start = 0
        for i, m in enumerate(ordered):
            take = share + (1 if i < extra else 0)
            out[m].extend((topic, p) for p in range(start, start + take))
            start += take
    return out


def roundrobin_assign(counts: dict[str, int], member_ids: Sequence[str]) -> dict[str, list[TP]]:
    """Kafka's RoundRobinAssignor with every member on every topic."""
    ordered = sorted(member_ids)
    out: dict[str, list[TP]] = {m: [] for m in ordered}
    i = 0
    for topic in sorted(counts):
        for p in range(counts[topic]):
            out[ordered[i % len(ordered)]].append((topic, p))
            i += 1
    return out


# -- Kafka Connect's worker protocol (opaque to the decoder: protocol_type "connect") ---------
def connect_metadata(url: str, config_offset: int) -> bytes:
    """IncrementalCooperativeConnectProtocol v2 worker state: url, config offset, no
    previous allocation."""
    return struct.pack(">h", 2) + _str16(url) + struct.pack(">qi", config_offset, -1)


def connect_assignment(
    leader: str, leader_url: str, config_offset: int, connectors: Sequence[tuple[str, int]]
) -> bytes:
    """v2 assignment: no error, leader, config offset, connectors with their task ids, nothing
    revoked, no delay."""
    out = bytearray(struct.pack(">hh", 2, 0))
    out += _str16(leader) + _str16(leader_url) + struct.pack(">qi", config_offset, len(connectors))
    for name, tasks in connectors:
        out += (
            _str16(name)
            + struct.pack(">i", tasks)
            + b"".join(struct.pack(">i", t) for t in range(tasks))
        )
    out += struct.pack(">ii", 0, 0)
    return bytes(out)


# -- groups ------------------------------------------------------------------------------------
@dataclass
class Topic:
    name: str
    partitions: int
    topic_id: uuid.UUID


@dataclass
class _Member:
    member_id: str
    host: str
    owned: tuple[TP, ...] = ()
    generation: int | None = None


@dataclass
class Group:
    """What every kind of group shares: name, kind, topics, members in join order."""

    name: str
    kind: str
    topics: tuple[Topic, ...]
    size: int
    client: str
    partition: int = 0
    joined: int = 0
    members: list[_Member] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.partition = coordinator_partition(self.name, MIRROR_PARTITIONS)
        self.counts = {t.name: t.partitions for t in self.topics}
        self.topic_names = tuple(sorted(self.counts))
        self.total_partitions = sum(self.counts.values())

    def _new_member(self) -> _Member:
        k = self.joined
        self.joined += 1
        mid = f"{self.client}-{k % 8 + 1}-{_uuid_of(f'{self.name}/{k}')}"
        host = f"/10.{self.partition + 10}.{(k // 250) % 250}.{k % 250 + 1}"
        return _Member(mid, host)

    # Subclasses: the records of the group's latest state as compaction leaves them (called
    # once, after ``init``), and one rebalance.
    def latest(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        raise NotImplementedError

    def rebalance(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        raise NotImplementedError


class ClassicGroup(Group):
    """A classic (or Connect) group: one ``GroupMetadataValue`` per generation."""

    def init(self, generation: int) -> None:
        """Generation ``generation - 1``: every member joined at once, nothing claimed.
        ``latest`` then takes the group to ``generation``."""
        self.members = [self._new_member() for _ in range(self.size)]
        self.generation = generation - 1
        assignment, _ = self._assign()
        for m in self.members:
            m.owned = tuple(assignment[m.member_id])
            m.generation = self.generation

    def latest(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        """The rebalance to the group's latest generation (one member replaced), so that its
        record shows members claiming what they held, as in a group that has been running; only
        the last record of it, as compaction leaves it."""
        return self.rebalance(ts, encode)[-1:]

    def _assign(self) -> tuple[dict[str, list[TP]], tuple[Any, ...]]:
        ids = [m.member_id for m in self.members]
        if self.kind in STICKY:
            subs = [
                MemberSubscription(
                    m.member_id,
                    self.topic_names,
                    tuple(TopicPartition(t, p) for t, p in m.owned),
                    m.generation,
                )
                for m in self.members
            ]
            result = assign(self.kind, self.counts, subs)
            got = {
                mid: [(tp.topic, tp.partition) for tp in tps]
                for mid, tps in result.assignment.items()
            }
            return got, tuple(result.withheld)
        if self.kind == "range":
            return range_assign(self.counts, ids), ()
        # roundrobin, and a Connect leader's round robin of connectors
        return roundrobin_assign(self.counts, ids), ()

    def rebalance(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        """The oldest member leaves and a new one joins; one generation, or two when the
        cooperative assignor withholds partitions another member still claims."""
        self.members.pop(0)
        self.members.append(self._new_member())
        out: list[tuple[bytes, bytes | None]] = []
        for _ in range(4):
            self.generation += 1
            assignment, withheld = self._assign()
            if encode:
                out.append((self.key(), self._value(assignment, ts)))
            for m in self.members:
                m.owned = tuple(assignment[m.member_id])
                m.generation = self.generation
            if not withheld:
                break
        else:
            raise AssertionError(f"{self.name}: partitions still withheld after 4 rounds")
        return out

    def key(self) -> bytes:
        return encode_key(GroupMetadataKey(self.name))

    def _value(self, assignment: dict[str, list[TP]], ts: int) -> bytes:
        """The record of generation ``self.generation``: members claim ``owned`` at
        ``generation`` (the previous one's), and get ``assignment``."""
        if self.kind == "connect":
            return self._connect_value(ts)
        metas = []
        for m in self.members:
            assigned = assignment[m.member_id]
            claimed, generation = m.owned, m.generation
            gen = -1 if generation is None else generation
            if self.kind == "sticky":
                user_data = (
                    encode_sticky_user_data(_tps(claimed), generation)
                    if generation is not None
                    else None
                )
                owned: tuple[TopicPartitions, ...] = ()
            elif self.kind == "cooperative-sticky":
                user_data = encode_cooperative_sticky_user_data(gen)
                owned = _tps(claimed)
            else:
                user_data, owned = None, _tps(claimed)
            sub = ConsumerProtocolSubscription(3, self.topic_names, user_data, owned, gen, None)
            asg = ConsumerProtocolAssignment(3, _tps(assigned), None)
            metas.append(
                MemberMetadata(
                    m.member_id,
                    self.client,
                    m.host,
                    45000,
                    encode_subscription(sub),
                    encode_assignment(asg),
                    None,
                    300000,
                )
            )
        value = GroupMetadataValue(
            "consumer", self.generation, self.kind, self.members[0].member_id, tuple(metas), ts
        )
        return encode_value(value, 3)

    def _connect_value(self, ts: int) -> bytes:
        leader = self.members[0]
        leader_url = f"http://{leader.host[1:]}:8083/"
        offset = 1000 + self.generation
        ids = [m.member_id for m in self.members]
        connectors = [(f"{self.name}-connector-{c}", 1 + c % 4) for c in range(self.size * 2)]
        per: dict[str, list[tuple[str, int]]] = {m: [] for m in ids}
        for i, c in enumerate(connectors):
            per[ids[i % len(ids)]].append(c)
        metas = tuple(
            MemberMetadata(
                m.member_id,
                self.client,
                m.host,
                10000,
                connect_metadata(f"http://{m.host[1:]}:8083/", offset),
                connect_assignment(leader.member_id, leader_url, offset, per[m.member_id]),
                None,
                60000,
            )
            for m in self.members
        )
        value = GroupMetadataValue(
            "connect", self.generation, CONNECT_PROTOCOL, leader.member_id, metas, ts
        )
        return encode_value(value, 3)


class ModernGroup(Group):
    """A KIP-848 consumer group: its state as records 3-8, one current record per member."""

    def init(self, epoch: int) -> None:
        self.members = [self._new_member() for _ in range(self.size)]
        self.epoch = epoch
        self.ids = {t.name: t.topic_id for t in self.topics}
        # The uniform server assignor's spread: round robin over the sorted partitions.
        got = roundrobin_assign(self.counts, [m.member_id for m in self.members])
        for m in self.members:
            m.owned = tuple(got[m.member_id])
            m.generation = epoch

    def _key(self, cls: Any, member: str | None = None) -> bytes:
        return encode_key(cls(self.name) if member is None else cls(self.name, member))

    def _id_partitions(self, tps: Sequence[TP]) -> tuple[TopicIdPartitions, ...]:
        return tuple(TopicIdPartitions(self.ids[t.topic], t.partitions, ()) for t in _tps(tps))

    def _member_value(self, m: _Member) -> bytes:
        # What a 4.x broker writes for a member on the consumer protocol, without a regex.
        return encode_value(
            ConsumerGroupMemberMetadataValue(
                None, None, self.client, m.host, self.topic_names, "", None, 300000, None
            ),
            0,
        )

    def _current(self, m: _Member, previous: int) -> tuple[bytes, bytes | None]:
        value = ConsumerGroupCurrentMemberAssignmentValue(
            self.epoch, previous, 0, self._id_partitions(m.owned), ()
        )
        key = self._key(ConsumerGroupCurrentMemberAssignmentKey, m.member_id)
        return key, encode_value(value, 0)

    def _target(self, m: _Member) -> tuple[bytes, bytes | None]:
        value = ConsumerGroupTargetAssignmentMemberValue(self._id_partitions(m.owned))
        return self._key(ConsumerGroupTargetAssignmentMemberKey, m.member_id), encode_value(
            value, 0
        )

    def _epochs(self) -> list[tuple[bytes, bytes | None]]:
        return [
            (
                self._key(ConsumerGroupMetadataKey),
                encode_value(ConsumerGroupMetadataValue(self.epoch), 0),
            )
        ]

    def _assignment_epoch(self) -> tuple[bytes, bytes | None]:
        return (
            self._key(ConsumerGroupTargetAssignmentMetadataKey),
            encode_value(ConsumerGroupTargetAssignmentMetadataValue(self.epoch), 0),
        )

    def latest(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        """4, every member's 5, 3, every 7, 6, every 8: all at the group epoch, STABLE, holding
        their target."""
        if not encode:
            return []
        topics = tuple(TopicMetadata(self.ids[t], t, self.counts[t], ()) for t in self.topic_names)
        out = [
            (
                self._key(ConsumerGroupPartitionMetadataKey),
                encode_value(ConsumerGroupPartitionMetadataValue(topics), 0),
            )
        ]
        out += [
            (self._key(ConsumerGroupMemberMetadataKey, m.member_id), self._member_value(m))
            for m in self.members
        ]
        out += self._epochs()
        out += [self._target(m) for m in self.members]
        out.append(self._assignment_epoch())
        previous = max(0, self.epoch - 1)
        out += [self._current(m, previous) for m in self.members]
        return out

    def rebalance(self, ts: int, encode: bool = True) -> list[tuple[bytes, bytes | None]]:
        """The oldest member leaves (its 8, 7, 5 tombstones), a new one joins and gets its
        partitions at the next group epoch (5, 3, its 7, 6, its 8); every other member's
        heartbeat then moves it to the new epoch with the same partitions (8 each)."""
        leaver = self.members.pop(0)
        joiner = self._new_member()
        joiner.owned = leaver.owned
        self.members.append(joiner)
        self.epoch += 1
        for m in self.members:
            m.generation = self.epoch
        if not encode:
            return []
        out: list[tuple[bytes, bytes | None]] = [
            (self._key(ConsumerGroupCurrentMemberAssignmentKey, leaver.member_id), None),
            (self._key(ConsumerGroupTargetAssignmentMemberKey, leaver.member_id), None),
            (self._key(ConsumerGroupMemberMetadataKey, leaver.member_id), None),
            (
                self._key(ConsumerGroupMemberMetadataKey, joiner.member_id),
                self._member_value(joiner),
            ),
        ]
        out += self._epochs()
        out.append(self._target(joiner))
        out.append(self._assignment_epoch())
        out.append(self._current(joiner, 0))
        out += [self._current(m, self.epoch - 1) for m in self.members[:-1]]
        return out


# -- the model ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Params:
    groups: int = DEFAULT_GROUPS
    seed: int = 1
    tail_generations: int = -1  # -1: groups // 5
    tail_commits: int = -1  # -1: 100 per group

    def resolved(self) -> Params:
        return Params(
            self.groups,
            self.seed,
            self.groups // 5 if self.tail_generations < 0 else self.tail_generations,
            100 * self.groups if self.tail_commits < 0 else self.tail_commits,
        )

    def to_dict(self) -> dict[str, int]:
        p = self.resolved()
        return {
            "groups": p.groups,
            "seed": p.seed,
            "tail_generations": p.tail_generations,
            "tail_commits": p.tail_commits,
            "model_version": MODEL_VERSION,
        }

    def digest(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _group_sizes(n: int, rng: random.Random) -> list[int]:
    huge = round(n * 0.003)
    large = round(n * 0.027)
    if n >= 50:
        huge, large = max(1, huge), max(1, large)
    mid = round(n * 0.13)
    small = max(0, n - huge - large - mid)
    sizes = [_weighted(rng, range(1, 11), SMALL_SIZES) for _ in range(small)]
    sizes += [int(math.exp(rng.uniform(math.log(11), math.log(100)))) for _ in range(mid)]
    sizes += [int(math.exp(rng.uniform(math.log(100), math.log(501)))) for _ in range(large)]
    sizes += [rng.randint(1000, 2000) for _ in range(huge)]
    rng.shuffle(sizes)
    return sizes[:n]


class ClusterModel:
    """Every group of the model in its state after the compacted history (``init``)."""

    def __init__(self, params: Params) -> None:
        self.params = params.resolved()
        rng = random.Random(self.params.seed)
        n = self.params.groups
        n_topics = max(40, n // 2)
        self.topics: list[Topic] = []
        classes = [c for c, _ in PARTITION_CLASSES]
        weights = [w for _, w in PARTITION_CLASSES]
        for i in range(n_topics):
            name = f"{WORDS[i % len(WORDS)]}-{rng.choice(('events', 'commands', 'cdc'))}-{i:05d}"
            count = rng.choice(_weighted(rng, classes, weights))
            self.topics.append(Topic(name, count, _uuid_of(f"topic/{name}")))
        big = [t for t in self.topics if t.partitions >= 100]
        self.groups: list[Group] = []
        for i, size in enumerate(_group_sizes(n, rng)):
            kind = _weighted(rng, KINDS, KIND_WEIGHTS)
            if kind == "connect" and size > 10:
                kind = "range"
            role = rng.choice(ROLES)
            app = f"{rng.choice(WORDS)}-{role}"
            name = f"connect-{app}-{i:05d}" if kind == "connect" else f"{app}-{i:05d}"
            topics = self._pick_topics(rng, size, big)
            client = f"{'connect' if kind == 'connect' else 'consumer'}-{app}"
            cls = ModernGroup if kind == "consumer" else ClassicGroup
            group = cls(name, kind, topics, size, client)
            group.init(rng.randint(2, 400))
            self.groups.append(group)
        self.settled = False

    def settle(self) -> None:
        """Every group in its latest state without encoding it (``history`` encodes it)."""
        if not self.settled:
            for g in self.groups:
                g.latest(0, encode=False)
            self.settled = True

    def _pick_topics(self, rng: random.Random, size: int, big: list[Topic]) -> tuple[Topic, ...]:
        chosen: dict[str, Topic] = {}
        if size <= 10:
            for _ in range(_weighted(rng, *zip(*TOPICS_PER_SMALL_GROUP, strict=True))):
                t = rng.choice(self.topics)
                chosen[t.name] = t
        want = size * rng.uniform(1.0, 2.0) if size > 10 else size
        pool = big if size > 10 and big else self.topics
        if size >= 1000:
            # Few, large topics: every member lists every topic in its subscription and, with
            # range, owns partitions of most of them; the group's record must stay under the
            # broker's 1 MB message limit.
            largest = [t for t in big if t.partitions >= 300]
            pool = largest if len(largest) >= 3 else pool
            want = size * rng.uniform(1.0, 1.3)
        misses = 0
        while sum(t.partitions for t in chosen.values()) < want and len(chosen) < 12:
            t = rng.choice(pool)
            if t.name not in chosen:
                chosen[t.name] = t
                misses = 0
                continue
            misses += 1
            if misses >= 1000:
                # Every topic of the pool is taken (a small model): any topic will do, and
                # when those are taken too the group makes do with what it has.
                if pool is self.topics:
                    break
                pool, misses = self.topics, 0
        return tuple(chosen.values())

    # -- counts ------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        kinds = Counter(g.kind for g in self.groups)
        buckets: Counter[str] = Counter()
        for g in self.groups:
            buckets[_bucket(g.size)] += 1
        history_gm = sum(3 * g.size + 4 if isinstance(g, ModernGroup) else 1 for g in self.groups)
        commits = sum(g.total_partitions for g in self.groups if g.kind != "connect")
        return {
            "params": self.params.to_dict(),
            "groups_by_kind": dict(sorted(kinds.items())),
            "groups_by_size": dict(sorted(buckets.items(), key=lambda kv: _bucket_order(kv[0]))),
            "members": sum(g.size for g in self.groups),
            "largest_group": max(g.size for g in self.groups),
            "topics": len(self.topics),
            "topic_partitions": sum(t.partitions for t in self.topics),
            "group_topic_partitions": commits,
            "records": {
                "history_group_metadata": history_gm,
                "history_commits": commits,
                "tail_rebalances": self.params.tail_generations,
                "tail_commits": self.params.tail_commits,
            },
        }


def _bucket(size: int) -> str:
    for limit, name in ((1, "1"), (10, "2-10"), (99, "11-99"), (500, "100-500")):
        if size <= limit:
            return name
    return "1000+"


def _bucket_order(name: str) -> int:
    return ("1", "2-10", "11-99", "100-500", "1000+").index(name)


#: The broker's default ``message.max.bytes`` (1 MB and a batch header).
MAX_RECORD_BYTES = 1_000_000


def _fits(group: Group, value: bytes | None) -> bytes | None:
    if value is not None and len(value) > MAX_RECORD_BYTES:
        raise ValueError(
            f"{group.name} ({group.size} members, {len(group.topics)} topics): a record of "
            f"{len(value):,} bytes, over the broker's limit"
        )
    return value


class Traffic:
    """Rebalances and offset commits after the compacted history, deterministic by count:
    rebalance number k always hits the same group, so a later process replays the first k
    without encoding (``fast_forward``) and continues where the topic left off."""

    def __init__(self, model: ClusterModel, seed: int) -> None:
        self.model = model
        order = list(range(len(model.groups)))
        random.Random(seed * 7919 + 1).shuffle(order)
        self.order = order
        self.rebalances = 0
        self.rng = random.Random(time.time_ns() if seed < 0 else seed * 104729 + 3)
        self.committing = [g for g in model.groups if g.kind != "connect"]
        self.cumulative: list[int] = []
        total = 0
        for g in self.committing:
            total += g.total_partitions
            self.cumulative.append(total)
        self.total_partitions = total
        self._prefix: dict[tuple[int, str], bytes] = {}
        self._v3 = [
            encode_value(OffsetCommitValue(random.Random(i).randrange(10**9), "", 0, 5), 3)
            for i in range(64)
        ]
        self._v4: dict[str, list[bytes]] = {}

    def fast_forward(self, count: int) -> None:
        for _ in range(count):
            g = self.model.groups[self.order[self.rebalances % len(self.order)]]
            g.rebalance(0, encode=False)
            self.rebalances += 1

    def rebalance(self, ts: int) -> list[Record]:
        g = self.model.groups[self.order[self.rebalances % len(self.order)]]
        self.rebalances += 1
        return [(k, _fits(g, v), g.partition, ts) for k, v in g.rebalance(ts)]

    def commit_value(self, g: Group, topic: Topic, n: int) -> bytes:
        if not isinstance(g, ModernGroup):
            return self._v3[n & 63]
        values = self._v4.get(topic.name)
        if values is None:
            values = [
                encode_value(OffsetCommitValue(1000 * (i + 1), "", 0, 5, -1, topic.topic_id), 4)
                for i in range(4)
            ]
            self._v4[topic.name] = values
        return values[n & 3]

    def commit_key(self, gi: int, g: Group, topic: str, partition: int) -> bytes:
        prefix = self._prefix.get((gi, topic))
        if prefix is None:
            prefix = commit_key_prefix(g.name, topic)
            self._prefix[(gi, topic)] = prefix
        return prefix + struct.pack(">i", partition)

    def commit(self, ts: int) -> Record:
        """One commit of a group-topic-partition drawn uniformly among all of them."""
        x = self.rng.randrange(self.total_partitions)
        gi = bisect.bisect_right(self.cumulative, x)
        g = self.committing[gi]
        x -= self.cumulative[gi] - g.total_partitions
        for topic in g.topics:
            if x < topic.partitions:
                key = self.commit_key(gi, g, topic.name, x)
                return key, self.commit_value(g, topic, x), g.partition, ts
            x -= topic.partitions
        raise AssertionError("partition index out of range")

    def max_safe_rate(self) -> float:
        """Rebalances per second (on average over 5 minutes) that keep every group at or under
        ``STORM_GENERATIONS`` generations per ``STORM_WINDOW_S`` (two per cooperative round
        counted: the follow-up generation)."""
        return STORM_GENERATIONS * len(self.order) / 2 / STORM_WINDOW_S


# -- the history -------------------------------------------------------------------------------
def history(model: ClusterModel, end_ms: int, traffic: Traffic | None = None) -> Iterator[Record]:
    """The compacted part, then the tail, in offset order. Group metadata records are encoded
    group by group as they are produced; ``traffic`` (new by default) makes the tail and can
    go on after it."""
    if model.settled:
        raise ValueError("the history is that of a model not settled yet")
    rng = random.Random(model.params.seed + 17)
    groups = list(model.groups)
    rng.shuffle(groups)
    gm_start = end_ms - TAIL_SPAN_MS - COMMITS_SPAN_MS - HISTORY_SPAN_MS
    step = HISTORY_SPAN_MS / max(1, len(groups))
    for i, g in enumerate(groups):
        ts = int(gm_start + i * step)
        for key, value in g.latest(ts):
            yield key, _fits(g, value), g.partition, ts
    model.settled = True
    traffic = traffic or Traffic(model, model.params.seed)
    commits = model.describe()["records"]["history_commits"]
    c_start = end_ms - TAIL_SPAN_MS - COMMITS_SPAN_MS
    c_step = COMMITS_SPAN_MS / max(1, commits)
    n = 0
    by_index = {id(g): i for i, g in enumerate(traffic.committing)}
    rng.shuffle(groups)
    for g in groups:
        if g.kind == "connect":
            continue
        gi = by_index[id(g)]
        for topic in g.topics:
            for p in range(topic.partitions):
                ts = int(c_start + n * c_step)
                key = traffic.commit_key(gi, g, topic.name, p)
                yield key, traffic.commit_value(g, topic, n), g.partition, ts
                n += 1
    yield from tail(traffic, end_ms)


def tail(traffic: Traffic, end_ms: int) -> Iterator[Record]:
    """``tail_generations`` rebalances among ``tail_commits`` commits, over the last hour."""
    p = traffic.model.params
    total = p.tail_generations + p.tail_commits
    start = end_ms - TAIL_SPAN_MS
    done_rebalances = 0
    for i in range(total):
        ts = int(start + i * TAIL_SPAN_MS / max(1, total))
        # Spread the rebalances evenly among the commits.
        if (i + 1) * p.tail_generations // max(1, total) > done_rebalances:
            done_rebalances += 1
            yield from traffic.rebalance(ts)
        else:
            yield traffic.commit(ts)


# -- the manifest and production ---------------------------------------------------------------
def manifest_path(params: Params) -> Path:
    return MANIFEST_DIR / f"cluster-{params.digest()}.json"


def groups_path(manifest: Path) -> Path:
    """The model's groups, one JSON line each (name, kind, members, partitions), beside the
    manifest: what the memory benchmark breaks the state down by."""
    return manifest.with_suffix(".groups.jsonl")


def write_groups(path: Path, model: ClusterModel) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for g in model.groups:
            row = {"group": g.name, "kind": g.kind, "members": g.size}
            row["partitions"] = g.total_partitions
            out.write(json.dumps(row) + "\n")


def read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
        return doc
    except (OSError, ValueError):
        return None


def write_manifest(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def topic_end_offsets(bootstrap: str, topic: str) -> dict[int, int] | None:
    """End offset per partition, or None if the topic does not exist."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTP

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, metrics_enabled=False)
    try:
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            return None
        tps = [KafkaTP(topic, p) for p in sorted(parts)]
        return {tp.partition: int(off) for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def expected_records(doc: dict[str, Any]) -> int:
    return int(doc["counts"]["records"]) + int(doc["appended"]["records"])


def ensure_model(bootstrap: str, params: Params, reuse: bool = True) -> tuple[Path, dict[str, Any]]:
    """The manifest of the model's topic on ``bootstrap``, producing it first unless a topic
    with the manifest's record count is there already."""
    from bench_job import create_mirror, produce

    path = manifest_path(params)
    doc = read_manifest(path)
    if reuse and doc is not None and doc.get("bootstrap") == bootstrap:
        ends = topic_end_offsets(bootstrap, doc["topic"])
        if ends is not None and sum(ends.values()) == expected_records(doc):
            log(f"model: reusing topic {doc['topic']} ({sum(ends.values()):,} records)")
            if not groups_path(path).exists():
                write_groups(groups_path(path), ClusterModel(params))
            return path, doc
        found = "missing" if ends is None else f"{sum(ends.values()):,} records"
        log(f"model: topic {doc['topic']} is {found}, expected {expected_records(doc):,}")
    started = time.perf_counter()
    model = ClusterModel(params)
    built = time.perf_counter() - started
    info = model.describe()
    write_groups(groups_path(path), model)
    log(
        f"model built in {built:.1f}s: {params.resolved().groups:,} groups, "
        f"{info['members']:,} members, {info['group_topic_partitions']:,} group-topic-partitions"
    )
    # A new topic name for every production: a deleted topic's name may not be free at once.
    topic = f"cluster-{params.digest()}-{int(time.time())}"
    if doc is not None and doc.get("bootstrap") == bootstrap:
        _delete_topic(bootstrap, doc["topic"])
    create_mirror(bootstrap, topic)
    end_ms = int(time.time() * 1000)
    counts: Counter[str] = Counter()

    def counted() -> Iterator[Record]:
        for rec in history(model, end_ms):
            counts["records"] += 1
            counts["bytes"] += len(rec[0]) + len(rec[1] or b"")
            yield rec

    started = time.perf_counter()
    produced = produce(bootstrap, topic, counted())
    seconds = time.perf_counter() - started
    ends = topic_end_offsets(bootstrap, topic) or {}
    assert sum(ends.values()) == produced, (sum(ends.values()), produced)
    doc = {
        "topic": topic,
        "bootstrap": bootstrap,
        "params": params.to_dict(),
        "model": info,
        "counts": {"records": produced, "bytes": counts["bytes"]},
        "model_end_ms": end_ms,
        "produced_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "produce_seconds": round(seconds, 1),
        "build_seconds": round(built, 1),
        "appended": {"records": 0, "rebalances": 0, "commits": 0},
    }
    write_manifest(path, doc)
    log(
        f"model produced to {topic}: {produced:,} records, {counts['bytes'] / 1e6:,.0f} MB, "
        f"in {seconds:.1f}s ({produced / seconds:,.0f} records/s); manifest {path}"
    )
    return path, doc


def _delete_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_topics([topic])
    except Exception as exc:  # noqa: BLE001 - an old topic left behind is only disk space
        log(f"model: could not delete old topic {topic}: {exc}")
    finally:
        admin.close()


def ensure_commits(bootstrap: str, params: Params, commits: int) -> str:
    """The name of a topic of ``commits`` offset commits of the model's groups (and nothing
    else), produced unless one with that many records is there already."""
    from bench_job import create_mirror, produce

    topic = f"cluster-commits-{params.digest()}-{commits}"
    ends = topic_end_offsets(bootstrap, topic)
    if ends is not None and sum(ends.values()) == commits:
        log(f"commits: reusing topic {topic} ({commits:,} records)")
        return topic
    if ends is not None:
        # Cut short by an interrupted production: a new name (a deleted one may not be free).
        topic = f"{topic}-{int(time.time())}"
    model = ClusterModel(params)
    traffic = Traffic(model, params.seed)
    create_mirror(bootstrap, topic)
    # Ten commits per millisecond, ending now: a commit stream's own times.
    start_ms = int(time.time() * 1000) - commits // 10
    started = time.perf_counter()
    records = (traffic.commit(start_ms + i // 10) for i in range(commits))
    produced = produce(bootstrap, topic, records)
    seconds = time.perf_counter() - started
    log(f"commits produced to {topic}: {produced:,} in {seconds:.1f}s")
    return topic


# -- live traffic ------------------------------------------------------------------------------
def live(
    manifest: Path,
    bootstrap: str,
    seconds: float,
    commit_rate: float,
    rebalance_rate: float,
    storm_size: int,
    storm_every: float,
) -> dict[str, Any]:
    """Produce live traffic; one JSON line per second on stdout (``"event": "progress"``), a
    ``ready`` line once the model is rebuilt and a ``done`` line at the end. SIGTERM stops it
    early; either way the manifest counts what was appended."""
    from kafka import KafkaProducer

    doc = read_manifest(manifest)
    if doc is None:
        raise SystemExit(f"no manifest at {manifest}")
    p = doc["params"]
    params = Params(p["groups"], p["seed"], p["tail_generations"], p["tail_commits"])
    started = time.perf_counter()
    model = ClusterModel(params)
    model.settle()
    traffic = Traffic(model, params.seed)
    traffic.rng = random.Random()
    traffic.fast_forward(params.resolved().tail_generations + int(doc["appended"]["rebalances"]))
    safe = traffic.max_safe_rate()
    storms = storm_size / storm_every if storm_size else 0.0
    if rebalance_rate + storms > safe or storm_size > len(model.groups):
        raise SystemExit(
            f"{rebalance_rate + storms:.1f} rebalances/s (storms included) would give groups more "
            f"than {STORM_GENERATIONS} generations in {STORM_WINDOW_S} s: at most {safe:.1f}/s "
            f"and {len(model.groups)} per burst with {len(model.groups)} groups"
        )
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=5,
        batch_size=256 << 10,
        max_request_size=16 << 20,
        acks=1,
        max_in_flight_requests_per_connection=1,
        enable_idempotence=False,
        metrics_enabled=False,
    )
    stop = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    topic = doc["topic"]
    emit({"event": "ready", "build_seconds": round(time.perf_counter() - started, 2)})
    t0 = time.monotonic()
    counts: Counter[str] = Counter()
    rebalances_at_start = traffic.rebalances
    next_report = 1.0
    next_storm = storm_every if storm_size else math.inf
    storm_due = 0
    behind_max = 0.0
    try:
        while not stop:
            now = time.monotonic() - t0
            if now >= seconds:
                break
            if now >= next_storm:
                storm_due += storm_size
                next_storm += storm_every
            want_commits = int(commit_rate * now)
            want_rebalances = int(rebalance_rate * now) + storm_due
            sent_any = False
            while counts["rebalances"] < want_rebalances and not stop:
                ts = int(time.time() * 1000)
                for key, value, part, _ in traffic.rebalance(ts):
                    producer.send(topic, key=key, value=value, partition=part, timestamp_ms=ts)
                    counts["records"] += 1
                    counts["gm_records"] += 1
                counts["rebalances"] += 1
                sent_any = True
                if time.monotonic() - t0 - now > 0.05:
                    break
            batch_end = min(want_commits, counts["commits"] + max(1, int(commit_rate / 10) + 1))
            ts = int(time.time() * 1000)
            while counts["commits"] < batch_end:
                key, value, part, _ = traffic.commit(ts)
                producer.send(topic, key=key, value=value, partition=part, timestamp_ms=ts)
                counts["commits"] += 1
                counts["records"] += 1
                sent_any = True
            elapsed = time.monotonic() - t0
            behind = max(
                (want_commits - counts["commits"]) / commit_rate if commit_rate else 0.0,
                (want_rebalances - counts["rebalances"]) / rebalance_rate if rebalance_rate else 0,
            )
            behind_max = max(behind_max, behind)
            if elapsed >= next_report:
                emit(
                    {
                        "event": "progress",
                        "t": round(elapsed, 2),
                        "records": counts["records"],
                        "commits": counts["commits"],
                        "rebalances": counts["rebalances"],
                        "behind_s": round(behind, 2),
                    }
                )
                next_report += 1.0
            if not sent_any:
                time.sleep(0.01)
        producer.flush()
    finally:
        producer.close()
        doc = read_manifest(manifest) or doc
        appended = doc["appended"]
        appended["records"] += counts["records"]
        appended["commits"] = appended.get("commits", 0) + counts["commits"]
        appended["rebalances"] += traffic.rebalances - rebalances_at_start
        write_manifest(manifest, doc)
    result = {
        "event": "done",
        "seconds": round(time.monotonic() - t0, 2),
        "records": counts["records"],
        "commits": counts["commits"],
        "rebalances": counts["rebalances"],
        "group_metadata_records": counts["gm_records"],
        "behind_max_s": round(behind_max, 2),
    }
    emit(result)
    return result


def storm_argument(text: str) -> tuple[int, float]:
    """``--storm SIZE[/EVERY]``: SIZE rebalances at once every EVERY seconds (default 60)."""
    size, _, every = text.partition("/")
    try:
        parsed = int(size), float(every.rstrip("s") or 60)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not SIZE[/EVERY], e.g. 200/60") from None
    if parsed[0] < 0 or parsed[1] <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: SIZE >= 0 and EVERY > 0")
    return parsed


def add_storm_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--storm-size", type=int, default=0, help="rebalances per burst (0: none)")
    ap.add_argument("--storm-every", type=float, default=60.0, help="seconds between bursts")
    ap.add_argument(
        "--storm",
        type=storm_argument,
        metavar="SIZE[/EVERY]",
        help="bursts of SIZE rebalances every EVERY s (60); sets both options above",
    )


def storm_of(args: argparse.Namespace) -> tuple[int, float]:
    return args.storm if args.storm is not None else (args.storm_size, args.storm_every)


def emit(doc: dict[str, Any]) -> None:
    print(json.dumps(doc), flush=True)


# -- the offline check -------------------------------------------------------------------------
def control_records(ts: int) -> dict[str, list[Record]]:
    """Two broken groups, so that a clean check means the engine looked: a classic group whose
    two members are both assigned ``lat-1`` (``assignment_overlap``), and a KIP-848 group whose
    two STABLE members both hold ``ctl-0`` (``partition_owned_twice``), with a commit 20 s
    later on its partition."""
    from bench_job import overlap_record

    classic, modern = "control-classic-overlap", "control-modern-owned-twice"
    key, value = overlap_record(classic, ts)
    out: dict[str, list[Record]] = {
        "assignment_overlap": [(key, value, coordinator_partition(classic), ts)]
    }
    tid = _uuid_of("topic/ctl")
    held = (TopicIdPartitions(tid, (0,), ()),)
    pairs: list[tuple[bytes, bytes | None]] = [
        (
            encode_key(ConsumerGroupPartitionMetadataKey(modern)),
            encode_value(
                ConsumerGroupPartitionMetadataValue((TopicMetadata(tid, "ctl", 1, ()),)), 0
            ),
        ),
        (
            encode_key(ConsumerGroupMetadataKey(modern)),
            encode_value(ConsumerGroupMetadataValue(1), 0),
        ),
        (
            encode_key(ConsumerGroupTargetAssignmentMetadataKey(modern)),
            encode_value(ConsumerGroupTargetAssignmentMetadataValue(1), 0),
        ),
    ]
    for member in ("a", "b"):
        current = ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0, held, ())
        pairs.append(
            (
                encode_key(ConsumerGroupCurrentMemberAssignmentKey(modern, member)),
                encode_value(current, 0),
            )
        )
    part = coordinator_partition(modern)
    out["partition_owned_twice"] = [(k, v, part, ts) for k, v in pairs]
    # KIP-848 violations are raised once they have held 10 s of the partition's stream time:
    # a commit 20 s later on the same partition moves it on.
    clock = encode_key(OffsetCommitKey(f"control-clock-{part}", "clock", 0))
    tick = encode_value(OffsetCommitValue(1, "", ts + 20_000, 0), 3)
    out["partition_owned_twice"].append((clock, tick, part, ts + 20_000))
    return out


def check(params: Params, live_events: int, dump: Path | None) -> int:
    """The findings engine (``groupwatch analyze``'s Analyzer) over the history, the tail and
    ``live_events`` more rebalances (with commits among them): anything above info on the
    model's groups fails, and so does a control group whose finding is missing."""
    started = time.perf_counter()
    model = ClusterModel(params)
    log(f"model of {params.resolved().groups} groups built in {time.perf_counter() - started:.1f}s")
    # The hand-made commit keys are the encoder's.
    for g in model.groups[:20]:
        for t in g.topics[:2]:
            expected = encode_key(OffsetCommitKey(g.name, t.name, t.partitions - 1))
            got = commit_key_prefix(g.name, t.name) + struct.pack(">i", t.partitions - 1)
            assert got == expected, (g.name, t.name)
    end_ms = int(time.time() * 1000) - HOUR_MS
    traffic = Traffic(model, params.seed)
    records: list[Record] = list(history(model, end_ms, traffic))
    # Live traffic after the tail: rebalances with commits in between, a group never more
    # often than once per len(groups) rebalances, 200 ms apart (more in a small model: at most
    # 10 generations of a group in 5 minutes, half the rebalance_storm threshold).
    step_ms = max(200, STORM_WINDOW_S * 1000 // (10 * len(model.groups)))
    ts = end_ms
    rounds: Counter[int] = Counter()
    for _ in range(live_events):
        ts += step_ms
        batch = traffic.rebalance(ts)
        rounds[len(batch)] += 1
        records += batch
        records += [traffic.commit(ts + 1) for _ in range(5)]
    controls = control_records(ts + 100)
    for recs in controls.values():
        records += recs
    log(f"{len(records):,} records encoded in {time.perf_counter() - started:.1f}s")
    return analyze(
        records,
        set(controls),
        dump,
        started,
        {
            "groups": len(model.groups),
            "groups_by_kind": dict(sorted(Counter(g.kind for g in model.groups).items())),
            "live_rebalances": live_events,
            "records_per_live_rebalance": {
                "one": rounds[1],
                "more": live_events - rounds[1],
                "mean": round(sum(k * n for k, n in rounds.items()) / max(1, live_events), 1),
                "max": max(rounds, default=0),
            },
        },
        {g.name for g in model.groups},
    )


def analyze(
    records: Iterator[Record] | list[Record],
    controls: set[str],
    dump: Path | None,
    started: float,
    facts: dict[str, Any],
    groups: set[str],
    offsets_given: bool = False,
) -> int:
    """Records through the Analyzer; prints the summary line, 1 if anything is above info on
    the model's groups or a control's finding is missing. ``offsets_given``: the records'
    fourth field is ``(offset, timestamp)`` (read back from the topic)."""
    from groupwatch.detect import Analyzer
    from groupwatch.detect.catalogue import CATALOGUE

    severity = {k.name: k.severity for k in CATALOGUE}
    analyzer = Analyzer()
    found: Counter[tuple[str, str]] = Counter()
    control_found: Counter[str] = Counter()
    others: Counter[str] = Counter()
    examples: dict[str, str] = {}
    offsets: Counter[int] = Counter()
    n = 0
    out = dump.open("w") if dump else None

    def tally(findings: list[Any]) -> None:
        for f in findings:
            if f.group.startswith("control-"):
                control_found[f.kind] += 1
            elif f.group not in groups:
                others[f.kind] += 1
            else:
                found[(severity.get(f.kind, "?"), f.kind)] += 1
                examples.setdefault(f.kind, f"{f.group}: {f.detail}")

    try:
        for key, value, partition, stamp in records:
            if offsets_given:
                offset, stamp = stamp  # type: ignore[misc]
            else:
                offset = offsets[partition]
                offsets[partition] += 1
            line = {
                "key": base64.b64encode(key).decode(),
                "value": None if value is None else base64.b64encode(value).decode(),
                "topic": "__consumer_offsets",
                "partition": partition,
                "offset": offset,
                "timestamp": stamp,
            }
            n += 1
            if out is not None:
                out.write(json.dumps(line) + "\n")
            tally(analyzer.feed(line))
        tally(analyzer.finish())
    finally:
        if out is not None:
            out.close()
    bad = {k: c for k, c in found.items() if k[0] != "info"}
    missed = sorted(controls - set(control_found))
    summary = {
        "check": "ok" if not bad and not missed else "FAILED",
        **facts,
        "records": n,
        "groups_seen": sum(1 for g in groups if g in analyzer.states),
        "findings": {f"{s}/{k}": c for (s, k), c in sorted(found.items())},
        "controls": {k: control_found.get(k, 0) for k in sorted(controls)},
        "other_groups_findings": dict(sorted(others.items())),
        "seconds": round(time.perf_counter() - started, 1),
    }
    for kind, text in sorted(examples.items()):
        log(f"  e.g. {kind}: {text[:300]}")
    if missed:
        log(f"  the engine missed the control finding(s) {missed}")
    print(json.dumps(summary), flush=True)
    return 1 if bad or missed else 0


def read_topic(bootstrap: str, topic: str) -> Iterator[tuple[bytes, bytes | None, int, Any]]:
    """Every record of ``topic``, partition after partition, in offset order (a group's
    records all live in one partition)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTP

    ends = topic_end_offsets(bootstrap, topic) or {}
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        metrics_enabled=False,
        max_partition_fetch_bytes=16 << 20,
        fetch_max_bytes=64 << 20,
    )
    try:
        for partition, end in sorted(ends.items()):
            tp = KafkaTP(topic, partition)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            position = 0
            while position < end:
                for batch in consumer.poll(timeout_ms=5000).values():
                    for rec in batch:
                        yield rec.key, rec.value, partition, (rec.offset, rec.timestamp)
                        position = rec.offset + 1
    finally:
        consumer.close()


def check_topic(manifest: Path, bootstrap: str, dump: Path | None) -> int:
    """The engine over the model's topic as it stands, live traffic appended included."""
    doc = read_manifest(manifest)
    if doc is None:
        raise SystemExit(f"no manifest at {manifest}")
    started = time.perf_counter()
    p = doc["params"]
    names = {json.loads(line)["group"] for line in groups_path(manifest).read_text().splitlines()}
    facts = {
        "topic": doc["topic"],
        "groups": p["groups"],
        "history_records": doc["counts"]["records"],
        "appended": doc["appended"],
    }
    records = read_topic(bootstrap, doc["topic"])
    return analyze(records, set(), dump, started, facts, names, offsets_given=True)


# -- command line ------------------------------------------------------------------------------
def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--groups", type=int, default=DEFAULT_GROUPS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--tail-generations", type=int, default=-1, help="rebalances in the tail (-1: groups/5)"
    )
    ap.add_argument(
        "--tail-commits", type=int, default=-1, help="offset commits in the tail (-1: 100/group)"
    )


def params_of(args: argparse.Namespace) -> Params:
    return Params(args.groups, args.seed, args.tail_generations, args.tail_commits)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--check" in argv:
        argv.remove("--check")
        argv.insert(0, "check")
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="action", required=True)
    d = sub.add_parser("describe", help="the model's counts (nothing produced)")
    add_model_arguments(d)
    c = sub.add_parser("check", help="run the findings engine over the model offline")
    add_model_arguments(c)
    c.set_defaults(groups=200)
    c.add_argument("--live-events", type=int, default=1000)
    c.add_argument("--dump", type=Path, help="also write the raw records as JSON lines")
    c.add_argument(
        "--manifest", type=Path, help="check the produced topic of this manifest instead"
    )
    c.add_argument("--bootstrap", help="with --manifest: the broker")
    p = sub.add_parser("produce", help="produce the model's history once (reused)")
    add_model_arguments(p)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--reuse", action=argparse.BooleanOptionalAction, default=True)
    pc = sub.add_parser("produce-commits", help="a topic of the model's offset commits only")
    add_model_arguments(pc)
    pc.add_argument("--bootstrap", required=True)
    pc.add_argument("--commits", type=int, default=2_000_000)
    live_ap = sub.add_parser("live", help="produce live traffic into the model's topic")
    live_ap.add_argument("--manifest", type=Path, required=True)
    live_ap.add_argument("--bootstrap", required=True)
    live_ap.add_argument("--seconds", type=float, default=60.0)
    live_ap.add_argument("--commit-rate", type=float, default=1000.0)
    live_ap.add_argument("--rebalance-rate", type=float, default=1.0)
    add_storm_arguments(live_ap)
    args = ap.parse_args(argv)

    if args.action == "describe":
        started = time.perf_counter()
        info = ClusterModel(params_of(args)).describe()
        info["build_seconds"] = round(time.perf_counter() - started, 1)
        print(json.dumps(info, indent=2))
        return 0
    if args.action == "check":
        if args.manifest:
            if not args.bootstrap:
                ap.error("check --manifest needs --bootstrap")
            return check_topic(args.manifest, args.bootstrap, args.dump)
        return check(params_of(args), args.live_events, args.dump)
    if args.action == "produce":
        path, doc = ensure_model(args.bootstrap, params_of(args), args.reuse)
        emit({"event": "model", "manifest": str(path), "topic": doc["topic"]})
        return 0
    if args.action == "produce-commits":
        topic = ensure_commits(args.bootstrap, params_of(args), args.commits)
        emit({"event": "commits", "topic": topic, "commits": args.commits})
        return 0
    live(
        args.manifest,
        args.bootstrap,
        args.seconds,
        args.commit_rate,
        args.rebalance_rate,
        *storm_of(args),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
