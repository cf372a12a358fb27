"""The share-partition state folded from ``__share_group_state`` records, as the share
coordinator merges them, and Kafka's share lag from it."""

from __future__ import annotations

import uuid

from groupwatch.detect.share.state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    Batch,
    ShareStateBook,
    combine,
)
from groupwatch.protocol import decode_record, encode_key, encode_value
from groupwatch.protocol.models import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)
from groupwatch.protocol.records import DecodedRecord
from groupwatch.protocol.specs import SHARE_STATE_TOPIC

TOPIC_ID = uuid.UUID("1bb87b6b-693c-4a94-bfde-725e942cda9c")


def _rec(key: object, value: object | None, ts: int = 0) -> DecodedRecord:
    kb = encode_key(key)  # type: ignore[arg-type]
    vb = None if value is None else encode_value(value, 0)  # type: ignore[arg-type]
    return decode_record(kb, vb, topic=SHARE_STATE_TOPIC, timestamp=ts)


def _snapshot(start: int, count: int, *batches: StateBatch, part: int = 0) -> DecodedRecord:
    v = ShareSnapshotValue(0, 1, 0, start, 10, 10, tuple(batches), count)
    return _rec(ShareSnapshotKey("g", TOPIC_ID, part), v)


def _update(start: int, count: int, *batches: StateBatch, epoch: int = 0) -> DecodedRecord:
    v = ShareUpdateValue(0, epoch, start, tuple(batches), count)
    return _rec(ShareUpdateKey("g", TOPIC_ID, 0), v, ts=99)


def test_updates_lay_over_the_snapshot_as_the_coordinator_merges_them() -> None:
    book = ShareStateBook()
    s = book.add(_snapshot(-1, -1))
    assert s is not None and s.lag(10) is None  # not initialised: Kafka's lag is unknown too
    s = book.add(
        _update(0, 9, StateBatch(0, 2, 2, 1), StateBatch(3, 3, 0, 1), StateBatch(4, 9, 2, 1))
    )
    assert s is not None and (s.start_offset, s.lag(10)) == (0, 1)
    assert s.in_flight_records == 1 and s.in_flight_batches[0].first_offset == 3
    s = book.add(_update(3, 6, StateBatch(3, 3, AVAILABLE, 2)))
    assert s is not None
    assert s.batches == (Batch(3, 3, AVAILABLE, 2), Batch(4, 9, ACKNOWLEDGED, 1))
    s = book.add(_update(-1, 7, StateBatch(3, 3, ARCHIVED, 5), epoch=-1))
    assert s is not None
    assert (s.start_offset, s.leader_epoch) == (3, 0)  # -1: not changed
    assert s.archived_ranges == ((3, 3),) and s.archived_records == 1
    assert (s.max_delivery_count, s.in_flight_records, s.lag(10), s.lag(15)) == (5, 0, 0, 5)
    assert (s.state_epoch, s.observed_at, s.records_applied) == (1, 99, 4)
    s = book.add(_update(10, 0))
    assert s is not None and s.batches == () and s.lag(12) == 2


def test_an_unknown_count_leaves_lag_unknown_and_a_tombstone_removes_the_partition() -> None:
    book = ShareStateBook()
    s = book.add(_snapshot(5, -1, StateBatch(5, 6, 2, 1)))  # a writer before 4.2
    assert s is not None and s.lag(10) is None
    assert book.add(_rec(ShareSnapshotKey("g", TOPIC_ID, 0), None)) is None
    assert list(book) == []


def test_undecodable_records_are_counted_not_applied() -> None:
    book = ShareStateBook()
    good = _snapshot(0, 0)
    bad = decode_record(
        encode_key(ShareSnapshotKey("g", TOPIC_ID, 0)), b"\x00\x00\x01", topic=SHARE_STATE_TOPIC
    )
    assert bad.error is not None
    book.add(good)
    assert book.add(bad) is None
    assert book.undecodable == 1 and [s.start_offset for s in book] == [0]


def test_combine_splits_overrides_prunes_and_joins() -> None:
    old = [Batch(0, 9, AVAILABLE, 1)]
    new = [Batch(4, 5, ACKNOWLEDGED, 1)]
    assert combine(old, new, 0) == (
        Batch(0, 3, AVAILABLE, 1),
        Batch(4, 5, ACKNOWLEDGED, 1),
        Batch(6, 9, AVAILABLE, 1),
    )
    assert combine(old, new, 5) == (Batch(5, 5, ACKNOWLEDGED, 1), Batch(6, 9, AVAILABLE, 1))
    assert combine([Batch(0, 3, 2, 1)], [Batch(4, 7, 2, 1)], 0) == (Batch(0, 7, 2, 1),)
