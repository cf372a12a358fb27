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

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from groupwatch.detect.errors import ContractError
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
    #: The timestamp of the record that moved the SPSO to where it is (or first showed it):
    #: from when ``share_partition_stalled`` counts a start offset standing still.
    start_since_ms: int | None = None
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

    def to_row(self, end_offset: int | None = None, topic: str | None = None) -> dict[str, Any]:
        """The state as a JSON object (``groupwatch analyze --share-state``); ``topic``: the
        topic's name, when known."""
        return {
            "group": self.key.group,
            "topic_id": self.key.topic_id,
            "topic": topic,
            "partition": self.key.partition,
            "start_offset": self.start_offset,
            "state_epoch": self.state_epoch,
            "leader_epoch": self.leader_epoch,
            "snapshot_epoch": self.snapshot_epoch,
            "delivery_complete_count": self.delivery_complete_count,
            "end_offset": end_offset,
            "lag_records": self.lag(end_offset),
            "in_flight_records": self.in_flight_records,
            "in_flight_batches": [
                {
                    "first_offset": b.first_offset,
                    "last_offset": b.last_offset,
                    "delivery_count": b.delivery_count,
                }
                for b in self.in_flight_batches
            ],
            "archived_records": self.archived_records,
            "archived_ranges": [list(r) for r in self.archived_ranges],
            "max_delivery_count": self.max_delivery_count,
            "observed_at": self.observed_at,
        }

    def lag(self, end_offset: int | None) -> int | None:
        """Kafka's share lag against the partition's end offset; None when it is unknown."""
        if end_offset is None or self.start_offset < 0 or self.delivery_complete_count < 0:
            return None
        return end_offset - self.start_offset - self.delivery_complete_count


@dataclass(frozen=True)
class ShareStateRecord:
    """One decoded ``__share_group_state`` record, as the fold needs it (from the decoder's
    typed record or from a ``groupwatch decode`` line alike)."""

    key: SharePartitionKey
    snapshot: bool  # a ShareSnapshot (the whole state), else a ShareUpdate
    tombstone: bool = False
    start_offset: int = -1
    state_epoch: int = -1  # snapshots only
    leader_epoch: int = -1
    snapshot_epoch: int = -1
    delivery_complete_count: int = -1
    batches: tuple[Batch, ...] = ()
    timestamp: int | None = None
    source_partition: int | None = None  # of __share_group_state
    source_offset: int | None = None


def key_of(k: ShareSnapshotKey | ShareUpdateKey) -> SharePartitionKey:
    return SharePartitionKey(k.group_id, kafka_uuid(k.topic_id), k.partition)


def _batches(raw: Iterable[StateBatch]) -> tuple[Batch, ...]:
    return tuple(
        Batch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in raw
    )


def from_decoded(rec: DecodedRecord) -> ShareStateRecord | None:
    """The share state record of a decoded record; None if it is not one (or did not decode)."""
    k, v = rec.key, rec.value
    if rec.error is not None or not isinstance(k, ShareSnapshotKey | ShareUpdateKey):
        return None
    base = ShareStateRecord(
        key_of(k),
        isinstance(k, ShareSnapshotKey),
        tombstone=rec.tombstone,
        timestamp=rec.timestamp,
        source_partition=rec.partition,
        source_offset=rec.offset,
    )
    if rec.tombstone:
        return base
    if isinstance(v, ShareSnapshotValue):
        return replace(
            base,
            start_offset=v.start_offset,
            state_epoch=v.state_epoch,
            leader_epoch=v.leader_epoch,
            snapshot_epoch=v.snapshot_epoch,
            delivery_complete_count=v.delivery_complete_count,
            batches=_batches(v.state_batches),
        )
    if isinstance(v, ShareUpdateValue):
        return replace(
            base,
            start_offset=v.start_offset,
            leader_epoch=v.leader_epoch,
            snapshot_epoch=v.snapshot_epoch,
            delivery_complete_count=v.delivery_complete_count,
            batches=_batches(v.state_batches),
        )
    return None


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


def apply(state: SharePartitionState | None, rec: ShareStateRecord) -> SharePartitionState | None:
    """The state after one record of its partition (None: the partition's state is gone)."""
    if rec.tombstone:
        return None
    count = (state.records_applied if state is not None else 0) + 1
    if rec.snapshot or state is None:
        # An update with no snapshot before it (a dump that starts late) is all there is.
        since = (
            rec.timestamp
            if state is None or state.start_offset != rec.start_offset
            else state.start_since_ms
        )
        return SharePartitionState(
            key=rec.key,
            start_offset=rec.start_offset,
            state_epoch=rec.state_epoch if rec.snapshot else -1,
            leader_epoch=rec.leader_epoch,
            snapshot_epoch=rec.snapshot_epoch,
            delivery_complete_count=rec.delivery_complete_count,
            batches=combine((), rec.batches, rec.start_offset),
            observed_at=rec.timestamp,
            start_since_ms=since,
            records_applied=count,
        )
    start = state.start_offset if rec.start_offset == -1 else rec.start_offset
    return replace(
        state,
        start_offset=start,
        start_since_ms=rec.timestamp if start != state.start_offset else state.start_since_ms,
        leader_epoch=state.leader_epoch if rec.leader_epoch == -1 else rec.leader_epoch,
        delivery_complete_count=rec.delivery_complete_count,
        batches=combine(state.batches, rec.batches, start),
        observed_at=rec.timestamp,
        records_applied=count,
    )


class ShareStateBook:
    """Every share partition's state, from the records of ``__share_group_state`` in the order
    of each of its partitions.  Records that did not decode are counted, never applied."""

    def __init__(self) -> None:
        self.partitions: dict[SharePartitionKey, SharePartitionState] = {}
        self.undecodable = 0

    def add(self, rec: ShareStateRecord | DecodedRecord) -> SharePartitionState | None:
        """Apply one record; a decoded record that is not a share state one (or did not
        decode) is counted in ``undecodable`` and changes nothing."""
        if not isinstance(rec, ShareStateRecord):
            found = from_decoded(rec)
            if found is None:
                self.undecodable += 1
                return None
            rec = found
        after = apply(self.partitions.get(rec.key), rec)
        if after is None:
            self.partitions.pop(rec.key, None)
        else:
            self.partitions[rec.key] = after
        return after

    def __iter__(self) -> Iterator[SharePartitionState]:
        return iter(sorted(self.partitions.values(), key=lambda s: s.key))

    def of_group(self, group: str) -> list[SharePartitionState]:
        return [s for s in self if s.key.group == group]


# --- `groupwatch decode` output lines -------------------------------------------------------------


def _int(obj: Mapping[str, Any], name: str) -> int:
    v = obj.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ContractError(f"share state field {name} is not an integer")
    return v


def from_line(line: Mapping[str, Any]) -> ShareStateRecord:
    """The share state record of a ``groupwatch decode`` output line of a share snapshot or
    update (one without an error).  Raises :class:`ContractError` when the line does not have
    the decoder's shape."""
    key = line.get("key")
    if not isinstance(key, Mapping):
        raise ContractError("share state record without a decoded key")
    group, topic_id = key.get("group_id"), key.get("topic_id")
    if not isinstance(group, str) or not isinstance(topic_id, str):
        raise ContractError("share state key without group_id or topic_id")
    base = ShareStateRecord(
        SharePartitionKey(group, topic_id, _int(key, "partition")),
        line.get("record_type") == "share_snapshot",
        tombstone=bool(line.get("tombstone")),
        timestamp=_opt_int(line.get("timestamp")),
        source_partition=_opt_int(line.get("partition")),
        source_offset=_opt_int(line.get("offset")),
    )
    if base.tombstone:
        return base
    value = line.get("value")
    data = value.get("data") if isinstance(value, Mapping) else None
    if not isinstance(data, Mapping):
        raise ContractError("share state record without a decoded value")
    raw = data.get("state_batches")
    if not isinstance(raw, list) or not all(isinstance(b, Mapping) for b in raw):
        raise ContractError("share state value without state_batches")
    batches = tuple(
        Batch(
            _int(b, "first_offset"),
            _int(b, "last_offset"),
            _int(b, "delivery_state"),
            _int(b, "delivery_count"),
        )
        for b in raw
    )
    return replace(
        base,
        start_offset=_int(data, "start_offset"),
        state_epoch=_int(data, "state_epoch") if base.snapshot else -1,
        leader_epoch=_int(data, "leader_epoch"),
        snapshot_epoch=_int(data, "snapshot_epoch"),
        delivery_complete_count=_int(data, "delivery_complete_count"),
        batches=batches,
    )


def _opt_int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# --- a group's share partitions between batches (the job's saved state) -------------------------


def _batch_json(b: Batch) -> list[int]:
    return [b.first_offset, b.last_offset, b.state, b.delivery_count]


def state_to_json(s: SharePartitionState) -> dict[str, Any]:
    """One share partition's state as the job saves it (``records_applied`` too: it is not
    part of the state's equality, but the history rows count with it)."""
    return {
        "topic_id": s.key.topic_id,
        "partition": s.key.partition,
        "start_offset": s.start_offset,
        "state_epoch": s.state_epoch,
        "leader_epoch": s.leader_epoch,
        "snapshot_epoch": s.snapshot_epoch,
        "delivery_complete_count": s.delivery_complete_count,
        "batches": [_batch_json(b) for b in s.batches],
        "observed_at": s.observed_at,
        "start_since_ms": s.start_since_ms,
        "records_applied": s.records_applied,
    }


def state_from_json(group: str, doc: Mapping[str, Any]) -> SharePartitionState:
    """The state :func:`state_to_json` wrote, of ``group``; :class:`ContractError` on
    anything else."""
    topic_id = doc.get("topic_id")
    raw = doc.get("batches")
    if not isinstance(topic_id, str) or not isinstance(raw, list):
        raise ContractError("saved share partition without topic_id or batches")
    batches = []
    for b in raw:
        if not isinstance(b, list) or len(b) != 4 or not all(_is_int(v) for v in b):
            raise ContractError("saved share batch is not four integers")
        batches.append(Batch(*b))
    return SharePartitionState(
        key=SharePartitionKey(group, topic_id, _int(doc, "partition")),
        start_offset=_int(doc, "start_offset"),
        state_epoch=_int(doc, "state_epoch"),
        leader_epoch=_int(doc, "leader_epoch"),
        snapshot_epoch=_int(doc, "snapshot_epoch"),
        delivery_complete_count=_int(doc, "delivery_complete_count"),
        batches=tuple(batches),
        observed_at=_opt_int(doc.get("observed_at")),
        start_since_ms=_opt_int(doc.get("start_since_ms")),
        records_applied=_int(doc, "records_applied"),
    )


@dataclass(frozen=True)
class RaisedShare:
    """A share finding already raised (stall or retry storm), and the offset its id names:
    once the partition's start offset is past it, the id can never come again and is
    forgotten (the start offset only moves forward)."""

    finding_id: str
    topic_id: str
    partition: int
    offset: int


@dataclass(frozen=True)
class SavedShare:
    """What a group's share partitions carry from one batch to the next: their states, the
    share findings raised that could come again, and ``__share_group_state``'s stream time as
    the group's records last told it."""

    group: str
    partitions: tuple[SharePartitionState, ...] = ()
    raised: tuple[RaisedShare, ...] = ()
    clock_ms: int | None = None
    #: KAFKA-20742's watch of the group's topics (``detect/share/added.py``), which needs the
    #: records of several partitions and so several batches: each partition whose state was
    #: resolved, ``(topic id, partition, first resolved record's ms, its state epoch)``...
    added_known: tuple[tuple[str, int, int | None, int], ...] = ()
    #: ... and each partition initialised with -1 and not judged yet.
    added_pending: tuple[AddedPending, ...] = ()

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "group": self.group,
            "partitions": [state_to_json(s) for s in self.partitions],
            "raised": [[r.finding_id, r.topic_id, r.partition, r.offset] for r in self.raised],
        }
        if self.clock_ms is not None:
            doc["clock_ms"] = self.clock_ms
        # Only when there is something to keep: a state saved before is saved as the same text.
        if self.added_known or self.added_pending:
            doc["added"] = {
                "known": [list(k) for k in self.added_known],
                "pending": [p.to_list() for p in self.added_pending],
            }
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> SavedShare:
        if not isinstance(doc, Mapping):
            raise ContractError("saved share state is not an object")
        group, parts, raised = doc.get("group"), doc.get("partitions"), doc.get("raised")
        if not (isinstance(group, str) and isinstance(parts, list) and isinstance(raised, list)):
            raise ContractError("saved share state without partitions or raised")
        out = []
        for r in raised:
            if (
                not isinstance(r, list)
                or len(r) != 4
                or not isinstance(r[0], str)
                or not isinstance(r[1], str)
                or not all(_is_int(v) for v in r[2:])
            ):
                raise ContractError("saved share finding is not [id, topic id, partition, offset]")
            out.append(RaisedShare(r[0], r[1], r[2], r[3]))
        known: list[tuple[str, int, int | None, int]] = []
        pending: list[AddedPending] = []
        added = doc.get("added")
        if added is not None:
            if not isinstance(added, Mapping):
                raise ContractError("saved share added-partition watch is not an object")
            for k in added.get("known") or []:
                if not (
                    isinstance(k, list)
                    and len(k) == 4
                    and isinstance(k[0], str)
                    and _is_int(k[1])
                    and (k[2] is None or _is_int(k[2]))
                    and _is_int(k[3])
                ):
                    raise ContractError(
                        "saved share partition is not [topic id, partition, ms, state epoch]"
                    )
                known.append((k[0], k[1], k[2], k[3]))
            pending = [AddedPending.from_list(p) for p in added.get("pending") or []]
        return cls(
            group=group,
            partitions=tuple(state_from_json(group, p) for p in parts),
            raised=tuple(out),
            clock_ms=_opt_int(doc.get("clock_ms")),
            added_known=tuple(known),
            added_pending=tuple(pending),
        )


@dataclass(frozen=True)
class AddedPending:
    """A share partition whose first state was the -1 sentinel, as saved between batches: its
    initialising record's state epoch, time and place in ``__share_group_state``, and its
    first resolved start with that record's place, once seen."""

    topic_id: str
    partition: int
    state_epoch: int
    initialized_ms: int | None
    at: tuple[int | None, int | None, int | None]
    resolved_start: int | None = None
    resolved_at: tuple[int | None, int | None, int | None] | None = None

    def to_list(self) -> list[Any]:
        return [
            self.topic_id,
            self.partition,
            self.state_epoch,
            self.initialized_ms,
            list(self.at),
            self.resolved_start,
            None if self.resolved_at is None else list(self.resolved_at),
        ]

    @classmethod
    def from_list(cls, doc: Any) -> AddedPending:
        def place(v: Any) -> tuple[int | None, int | None, int | None]:
            if not (
                isinstance(v, list) and len(v) == 3 and all(x is None or _is_int(x) for x in v)
            ):
                raise ContractError("saved share record place is not [partition, offset, ms]")
            return (v[0], v[1], v[2])

        if not (
            isinstance(doc, list)
            and len(doc) == 7
            and isinstance(doc[0], str)
            and _is_int(doc[1])
            and _is_int(doc[2])
            and (doc[3] is None or _is_int(doc[3]))
            and (doc[5] is None or _is_int(doc[5]))
        ):
            raise ContractError("saved share pending partition is not a 7-item list")
        return cls(
            doc[0],
            doc[1],
            doc[2],
            doc[3],
            place(doc[4]),
            doc[5],
            None if doc[6] is None else place(doc[6]),
        )


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
