"""``share_records_archived``, judged from a share partition's state before and after one
``__share_group_state`` record (pure: states built by hand)."""

from __future__ import annotations

from groupwatch.detect.share.judge import archived
from groupwatch.detect.share.state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    Batch,
    SharePartitionKey,
    SharePartitionState,
    ShareStateRecord,
)

KEY = SharePartitionKey("g", "q5FbYOvUT9KeOShc5WZ5iw", 2)
REC = ShareStateRecord(KEY, False, timestamp=5, source_partition=9, source_offset=40)


def _state(*batches: Batch, start: int = 0) -> SharePartitionState:
    return SharePartitionState(KEY, start, 0, 0, 0, 0, tuple(batches))


def test_quiet_while_nothing_is_archived() -> None:
    before = _state(Batch(0, 9, AVAILABLE, 1))
    after = _state(Batch(0, 4, ACKNOWLEDGED, 1), Batch(5, 9, AVAILABLE, 3))
    assert archived(None, after, REC, {}) == []
    assert archived(before, after, REC, {}) == []
    assert archived(after, None, REC, {}) == []  # a tombstone


def test_newly_archived_offsets_are_raised_with_topic_partition_and_offsets() -> None:
    before = _state(Batch(0, 2, ACKNOWLEDGED, 1), Batch(3, 3, AVAILABLE, 4))
    after = _state(Batch(0, 2, ACKNOWLEDGED, 1), Batch(3, 3, ARCHIVED, 5))
    [f] = archived(before, after, REC, {KEY.topic_id: "orders"})
    assert (f.kind, f.severity, f.group, f.topic, f.partition) == (
        "share_records_archived",
        "warning",
        "g",
        "orders",
        2,
    )
    assert f.evidence["archived_offsets"] == [[3, 3]]
    assert f.evidence["delivery_counts"] == [5] and f.evidence["topic_id"] == KEY.topic_id
    assert "orders-2 at offset(s) 3:" in f.detail
    assert (f.source.topic, f.source.partition, f.source.offset) == ("__share_group_state", 9, 40)
    # Without a name the topic is its id, as elsewhere.
    [g] = archived(before, after, REC, {})
    assert g.topic == KEY.topic_id


def test_only_what_was_not_archived_before_and_ranges_are_never_expanded() -> None:
    before = _state(Batch(0, 9, ARCHIVED, 5))
    after = _state(Batch(0, 9, ARCHIVED, 5), Batch(10, 2_000_000_009, ARCHIVED, 1))
    [f] = archived(before, after, REC, {})
    assert f.evidence["archived_offsets"] == [[10, 2_000_000_009]]
    assert f.evidence["archived_records"] == 2_000_000_000
    assert f.evidence["delivery_counts"] == [1]
    assert archived(after, after, REC, {}) == []  # a snapshot repeating it: nothing new


def test_the_text_lists_ten_ranges_then_counts_the_rest() -> None:
    after = _state(*(Batch(2 * i, 2 * i, ARCHIVED, 5) for i in range(13)))
    [f] = archived(None, after, REC, {})
    assert "0, 2, 4, 6, 8, 10, 12, 14, 16, 18 and 3 more range(s)" in f.detail
    assert len(f.evidence["archived_offsets"]) == 13
