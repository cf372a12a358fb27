"""``share_new_partition_records_skipped`` (KAFKA-20742) at its edges: only a new partition of a
topic the group already consumed, initialised with -1 and resolved past 0, is raised.

The scenario library (``tests/scenarios/share/new_partition_*.json``) has the loss and the
healthy additions as Kafka's serde writes them; these are the cases a one-topic scenario cannot
say (a second topic, deleted state, a start an operator set, one initialisation's partitions).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupwatch.detect.share.added import AddedPartitions
from groupwatch.detect.share.state import (
    Batch,
    SharePartitionKey,
    SharePartitionState,
    ShareStateRecord,
    apply,
)

ORDERS, PAYMENTS = "b3JkZXJzLXRvcGljLWlkAA", "cGF5bWVudHMtdG9waWMtaQ"


class Feed:
    """States folded as the engine folds them, the judgement applied after each record."""

    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, SharePartitionState] = {}
        self.added = AddedPartitions()
        self.kinds: list[tuple[str, int | None]] = []
        self.clock = 0  # each record a millisecond after the one before

    def __call__(
        self,
        topic: str,
        partition: int,
        start: int,
        *,
        snapshot: bool = False,
        epoch: int = -1,
        tombstone: bool = False,
    ) -> None:
        key = SharePartitionKey("g", topic, partition)
        batches = () if start < 0 or tombstone else (Batch(start, start + 1, 0, 1),)
        self.clock += 1
        rec = ShareStateRecord(
            key, snapshot, tombstone, start, epoch, batches=batches, timestamp=self.clock
        )
        before = self.states.get(key)
        after = apply(before, rec)
        if after is None:
            self.states.pop(key, None)
        else:
            self.states[key] = after
        found = self.added.apply(before, after, rec, {ORDERS: "orders", PAYMENTS: "payments"})
        self.kinds += [(f.topic or "", f.partition) for f in found]


def _known_orders(feed: Feed) -> None:
    feed(ORDERS, 0, -1, snapshot=True, epoch=1)
    feed(ORDERS, 0, 10)


def test_a_new_partition_resolved_past_zero_is_raised_once() -> None:
    feed = Feed()
    _known_orders(feed)
    feed(ORDERS, 1, -1, snapshot=True, epoch=2)
    feed(ORDERS, 1, 4)
    feed(ORDERS, 1, 9)
    feed(ORDERS, 1, 12, snapshot=True, epoch=2)
    assert feed.kinds == [("orders", 1)]


def test_a_topic_new_to_the_group_starts_where_latest_says() -> None:
    feed = Feed()
    _known_orders(feed)
    # payments: subscribed later, at a later state epoch, from its end offset: healthy.
    feed(PAYMENTS, 0, -1, snapshot=True, epoch=3)
    feed(PAYMENTS, 0, 25)
    assert feed.kinds == []


def test_partitions_initialised_together_are_not_new() -> None:
    feed = Feed()
    feed(ORDERS, 0, -1, snapshot=True, epoch=1)
    feed(ORDERS, 0, 10)
    feed(ORDERS, 1, -1, snapshot=True, epoch=1)  # same initialisation, written later
    feed(ORDERS, 1, 7)
    assert feed.kinds == []


def test_a_start_an_operator_set_or_a_fixed_coordinators_zero_is_not_the_bug() -> None:
    feed = Feed()
    _known_orders(feed)
    feed(ORDERS, 1, 30, snapshot=True, epoch=2)  # an explicit start, not the -1 sentinel
    feed(ORDERS, 2, 0, snapshot=True, epoch=3)  # a fixed coordinator: 0
    feed(ORDERS, 2, 5)
    assert feed.kinds == []


def test_a_topic_whose_state_was_deleted_is_new_again() -> None:
    feed = Feed()
    _known_orders(feed)
    feed(ORDERS, 0, -1, tombstone=True)  # the group's offsets of the topic deleted
    feed(ORDERS, 1, -1, snapshot=True, epoch=4)
    feed(ORDERS, 1, 20)
    assert feed.kinds == []


def test_the_order_of_the_state_topics_partitions_does_not_matter() -> None:
    # A dump lists one __share_group_state partition after another: the new partition's records
    # may come before those that made its topic known; their timestamps tell.
    key0, key1 = SharePartitionKey("g", ORDERS, 0), SharePartitionKey("g", ORDERS, 1)
    records = [
        ShareStateRecord(key1, True, False, -1, 2, timestamp=5),
        ShareStateRecord(key1, False, False, 6, batches=(Batch(6, 6, 2, 1),), timestamp=6),
        ShareStateRecord(key0, True, False, -1, 1, timestamp=1),
        ShareStateRecord(key0, False, False, 10, batches=(Batch(10, 10, 2, 1),), timestamp=2),
    ]
    added = AddedPartitions()
    states: dict[SharePartitionKey, SharePartitionState] = {}
    found: list[Any] = []
    for rec in records:
        before = states.get(rec.key)
        after = apply(before, rec)
        assert after is not None
        states[rec.key] = after
        found += added.apply(before, after, rec, {})
    assert [(f.partition, f.evidence["skipped_offsets"]) for f in found] == [(1, [0, 5])]
    # ... and a partition made known only after the new one was initialised does not count.
    late = AddedPartitions()
    states = {}
    found = []
    for rec in [*records[:2], replace(records[2], timestamp=7), replace(records[3], timestamp=8)]:
        before = states.get(rec.key)
        after = apply(before, rec)
        assert after is not None
        states[rec.key] = after
        found += late.apply(before, after, rec, {})
    assert found == []


def test_a_new_partition_still_unresolved_raises_nothing_yet() -> None:
    feed = Feed()
    _known_orders(feed)
    feed(ORDERS, 1, -1, snapshot=True, epoch=2)
    assert feed.kinds == []
    feed(ORDERS, 1, 3)
    assert feed.kinds == [("orders", 1)]


def test_the_watch_is_saved_and_read_back_as_it_was() -> None:
    """The job keeps the watch between batches in the group's saved state: what it saves reads
    back to the same value, a group without any writes no ``added`` key, and a damaged one is
    a contract error."""
    import json

    import pytest

    from groupwatch.detect.errors import ContractError
    from groupwatch.detect.share.state import AddedPending, SavedShare

    pending = (
        AddedPending("tid", 2, 3, 1000, (0, 10, 1000)),
        AddedPending("tid", 3, 3, 1000, (0, 11, 1000), 6, (1, 4, 2000)),
    )
    saved = SavedShare("g", (), (), 5, (("tid", 0, 900, 1), ("tid", 1, None, 1)), pending)
    back = SavedShare.from_json(json.loads(json.dumps(saved.to_json())))
    assert back == saved
    assert "added" not in SavedShare("g", (), (), 5).to_json()
    doc = saved.to_json()
    doc["added"]["pending"][0] = ["tid", 2]
    with pytest.raises(ContractError):
        SavedShare.from_json(doc)
