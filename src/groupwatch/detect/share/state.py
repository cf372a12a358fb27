"""The state of each share partition, folded from the records of ``__share_group_state``.

A share group (KIP-932) commits no offsets: its progress is the share coordinator's state of
each (group, topic, partition), written as a ``ShareSnapshot`` (the whole state) now and then and
a ``ShareUpdate`` (what changed) after every acknowledgement.  This module replays them the way
the coordinator does (``ShareCoordinatorShard``):

* a snapshot replaces the state;
* an update keeps the start offset and the leader epoch when it writes -1 for them, takes its
  delivery-complete count as written, and lays its batches over the ones before (the newer state
  of an offset wins), dropping every offset below the start offset;
* a tombstone (of either key) removes the partition's state.

Share lag is Kafka's own formula (KIP-1226, ``GroupCoordinatorService``):
``end offset - start offset - delivery-complete count``, unknown while either of the last two is
-1 (a partition not yet initialised, or a writer before 4.2, which leaves the count out).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from groupwatch.protocol.jsonview import kafka_uuid
from groupwatch.protocol.models import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)
from groupwatch.protocol.records import DecodedRecord

#: The delivery states the coordinator writes (Kafka's ``RecordState``; acquired is never
#: persisted: an acquired record is written as available with its delivery count).
AVAILABLE = 0
ACKNOWLEDGED = 2
ARCHIVED = 4
_COMPLETE = frozenset({ACKNOWLEDGED, ARCHIVED})


@dataclass(frozen=True, order=True)
class SharePartitionKey:
    """A share partition: a group's view of one topic partition (topic by its id, as the
    coordinator keys it)."""

    group: str
    topic_id: str  # Kafka's form: URL-safe Base64 of the 16 bytes
    partition: int


@dataclass(frozen=True)
class Batch:
    """A run of offsets in one delivery state with one delivery count."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int

    @property
    def records(self) -> int:
        return self.last_offset - self.first_offset + 1

    @property
    def complete(self) -> bool:
        """Acknowledged or archived: nothing more will be delivered from it."""
        return self.state in _COMPLETE


@dataclass(frozen=True)
class SharePartitionState:
    """One share partition as of its newest record."""

    key: SharePartitionKey
    start_offset: int  # the SPSO; -1 until the coordinator knows it
    state_epoch: int  # -1 when no snapshot was seen (the state came from an update alone)
    leader_epoch: int
    snapshot_epoch: int
    delivery_complete_count: int  # -1: unknown (a writer before 4.2)
    batches: tuple[Batch, ...]  # at or past the SPSO, sorted, not overlapping
    observed_at: int | None = None  # the timestamp of the newest record applied, ms
    records_applied: int = field(default=0, compare=False)

    @property
    def in_flight_batches(self) -> tuple[Batch, ...]:
        """Batches past the SPSO whose delivery is not complete (available again, or acquired
        by a consumer when the state was written)."""
        return tuple(b for b in self.batches if not b.complete)

    @property
    def in_flight_records(self) -> int:
        return sum(b.records for b in self.in_flight_batches)

    @property
    def archived_ranges(self) -> tuple[tuple[int, int], ...]:
        """Inclusive offset ranges the broker archived (still at or past the SPSO)."""
        return tuple((b.first_offset, b.last_offset) for b in self.batches if b.state == ARCHIVED)

    @property
    def archived_records(self) -> int:
        return sum(last - first + 1 for first, last in self.archived_ranges)

    @property
    def max_delivery_count(self) -> int:
        return max((b.delivery_count for b in self.batches), default=0)

    def lag(self, end_offset: int | None) -> int | None:
        """Kafka's share lag against the partition's end offset; None when it is unknown."""
        if end_offset is None or self.start_offset < 0 or self.delivery_complete_count < 0:
            return None
        return end_offset - self.start_offset - self.delivery_complete_count


def key_of(k: ShareSnapshotKey | ShareUpdateKey) -> SharePartitionKey:
    return SharePartitionKey(k.group_id, kafka_uuid(k.topic_id), k.partition)


def _batches(raw: Iterable[StateBatch]) -> list[Batch]:
    return [Batch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in raw]


def combine(old: Iterable[Batch], new: Iterable[Batch], start_offset: int) -> tuple[Batch, ...]:
    """``new`` laid over ``old`` (the newer state of an offset wins), offsets below
    ``start_offset`` dropped, neighbours in the same state and count joined."""
    out = sorted(old, key=lambda b: b.first_offset)
    for b in sorted(new, key=lambda b: b.first_offset):
        kept: list[Batch] = []
        for o in out:
            if o.last_offset < b.first_offset or o.first_offset > b.last_offset:
                kept.append(o)
                continue
            if o.first_offset < b.first_offset:
                kept.append(replace(o, last_offset=b.first_offset - 1))
            if o.last_offset > b.last_offset:
                kept.append(replace(o, first_offset=b.last_offset + 1))
        kept.append(b)
        out = sorted(kept, key=lambda x: x.first_offset)
    pruned: list[Batch] = []
    for b in out:
        if start_offset >= 0 and b.last_offset < start_offset:
            continue
        if start_offset >= 0 and b.first_offset < start_offset:
            b = replace(b, first_offset=start_offset)
        prev = pruned[-1] if pruned else None
        if (
            prev is not None
            and prev.last_offset + 1 == b.first_offset
            and (prev.state, prev.delivery_count) == (b.state, b.delivery_count)
        ):
            pruned[-1] = replace(prev, last_offset=b.last_offset)
        else:
            pruned.append(b)
    return tuple(pruned)


def apply(state: SharePartitionState | None, rec: DecodedRecord) -> SharePartitionState | None:
    """The state after one decoded ``__share_group_state`` record of its partition."""
    k = rec.key
    if not isinstance(k, ShareSnapshotKey | ShareUpdateKey):
        raise ValueError(f"not a share state record: {rec.record_type}")
    if rec.tombstone:
        return None
    v = rec.value
    count = (state.records_applied if state is not None else 0) + 1
    if isinstance(v, ShareSnapshotValue):
        return SharePartitionState(
            key=key_of(k),
            start_offset=v.start_offset,
            state_epoch=v.state_epoch,
            leader_epoch=v.leader_epoch,
            snapshot_epoch=v.snapshot_epoch,
            delivery_complete_count=v.delivery_complete_count,
            batches=combine((), _batches(v.state_batches), v.start_offset),
            observed_at=rec.timestamp,
            records_applied=count,
        )
    if isinstance(v, ShareUpdateValue):
        if state is None:
            start, epoch = v.start_offset, v.leader_epoch
            return SharePartitionState(
                key=key_of(k),
                start_offset=start,
                state_epoch=-1,
                leader_epoch=epoch,
                snapshot_epoch=v.snapshot_epoch,
                delivery_complete_count=v.delivery_complete_count,
                batches=combine((), _batches(v.state_batches), start),
                observed_at=rec.timestamp,
                records_applied=count,
            )
        start = state.start_offset if v.start_offset == -1 else v.start_offset
        return replace(
            state,
            start_offset=start,
            leader_epoch=state.leader_epoch if v.leader_epoch == -1 else v.leader_epoch,
            delivery_complete_count=v.delivery_complete_count,
            batches=combine(state.batches, _batches(v.state_batches), start),
            observed_at=rec.timestamp,
            records_applied=count,
        )
    raise ValueError(f"share state record without a decoded value: {rec.error}")


class ShareStateBook:
    """Every share partition's state, from the records of ``__share_group_state`` in the order
    of each of its partitions.  Records that did not decode are counted, never applied."""

    def __init__(self) -> None:
        self.partitions: dict[SharePartitionKey, SharePartitionState] = {}
        self.undecodable = 0

    def add(self, rec: DecodedRecord) -> SharePartitionState | None:
        if rec.error is not None or not isinstance(rec.key, ShareSnapshotKey | ShareUpdateKey):
            self.undecodable += 1
            return None
        if not rec.tombstone and rec.value is None:
            self.undecodable += 1
            return None
        key = key_of(rec.key)
        after = apply(self.partitions.get(key), rec)
        if after is None:
            self.partitions.pop(key, None)
        else:
            self.partitions[key] = after
        return after

    def __iter__(self) -> Iterator[SharePartitionState]:
        return iter(sorted(self.partitions.values(), key=lambda s: s.key))

    def of_group(self, group: str) -> list[SharePartitionState]:
        return [s for s in self if s.key.group == group]
