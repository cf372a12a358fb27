"""``share_partition_stalled`` and ``share_delivery_retries`` judged from share partition states
built by hand, and the engine's once-only raising of them (pure)."""

from __future__ import annotations

from dataclasses import replace

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.detect.modern.model import Current, GroupType
from groupwatch.detect.modern.state import Member, ModernState
from groupwatch.detect.share.judge import assigned_members, retries, stalled
from groupwatch.detect.share.state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    Batch,
    SharePartitionKey,
    SharePartitionState,
    ShareStateRecord,
    apply,
)

KEY = SharePartitionKey("g", "q5FbYOvUT9KeOShc5WZ5iw", 2)
CONFIG = DetectorConfig()
NAMES = {KEY.topic_id: "orders"}
T0 = 1_000_000


def _state(*batches: Batch, start: int = 5, since: int | None = T0) -> SharePartitionState:
    return SharePartitionState(KEY, start, 0, 0, 0, 0, tuple(batches), start_since_ms=since)


def test_the_start_offsets_time_is_the_record_that_moved_it() -> None:
    rec = ShareStateRecord(KEY, True, start_offset=0, timestamp=10)
    s = apply(None, rec)
    assert s is not None and s.start_since_ms == 10
    s = apply(s, replace(rec, snapshot=False, start_offset=-1, timestamp=20))  # -1: unchanged
    assert s is not None and s.start_since_ms == 10
    s = apply(s, replace(rec, snapshot=True, timestamp=30))  # a snapshot at the same SPSO
    assert s is not None and s.start_since_ms == 10
    s = apply(s, replace(rec, snapshot=False, start_offset=4, timestamp=40))
    assert s is not None and (s.start_offset, s.start_since_ms) == (4, 40)


def test_members_assigned_are_the_current_assignments_holding_the_partition() -> None:
    def current(*slots: tuple[str, int]) -> Member:
        return Member(current=Current(3, 2, 0, tuple(slots), ()))

    modern = ModernState(
        GroupType.SHARE,
        members={
            "b": current((KEY.topic_id, 2)),
            "a": current((KEY.topic_id, 1), (KEY.topic_id, 2)),
            "c": current((KEY.topic_id, 1)),
            "d": Member(),
        },
    )
    assert assigned_members(modern, KEY) == ("a", "b")
    assert assigned_members(None, KEY) == ()


def test_stalled_only_past_the_threshold_with_records_waiting_and_members() -> None:
    s = _state(Batch(5, 9, AVAILABLE, 1))
    late = T0 + CONFIG.share_stall_ms
    f = stalled(s, late, ("m",), CONFIG, NAMES)
    assert f is not None and (f.kind, f.severity, f.topic, f.partition) == (
        "share_partition_stalled",
        "error",
        "orders",
        2,
    )
    assert f.evidence["start_offset"] == 5 and f.evidence["since_ms"] == T0
    assert f.evidence["members"] == ["m"] and f.members == ("m",)
    assert stalled(s, late - 1, ("m",), CONFIG, NAMES) is None
    assert stalled(s, late, (), CONFIG, NAMES) is None  # nobody assigned: idle
    done = _state(Batch(5, 9, ACKNOWLEDGED, 1))  # nothing in flight, no end offset: idle
    assert stalled(done, late, ("m",), CONFIG, NAMES) is None
    assert stalled(_state(Batch(5, 9, AVAILABLE, 1), start=-1), late, ("m",), CONFIG, NAMES) is None


def test_the_brokers_end_offset_tells_records_no_consumer_fetched() -> None:
    idle = _state()  # no batches at all: the state alone says nothing waits
    late = T0 + CONFIG.share_stall_ms
    assert stalled(idle, late, ("m",), CONFIG, NAMES) is None
    f = stalled(idle, late, ("m",), CONFIG, NAMES, end_offset=12)
    assert f is not None
    assert (f.evidence["records_waiting_from"], f.evidence["lag_records"]) == ("end_offset", 7)
    # The end offset wins over the state: in flight records already counted, lag 0 is quiet.
    caught_up = _state(Batch(5, 9, ACKNOWLEDGED, 1))
    assert (
        stalled(replace(caught_up, delivery_complete_count=5), late, ("m",), CONFIG, NAMES, 10)
        is None
    )


def test_a_stall_is_named_by_its_start_offset() -> None:
    late = T0 + CONFIG.share_stall_ms
    a = stalled(_state(Batch(5, 9, AVAILABLE, 1)), late, ("m",), CONFIG, NAMES)
    b = stalled(_state(Batch(5, 9, AVAILABLE, 2)), late + 9, ("m",), CONFIG, NAMES)
    c = stalled(_state(Batch(6, 9, AVAILABLE, 1), start=6), late, ("m",), CONFIG, NAMES)
    assert a is not None and b is not None and c is not None
    assert a.finding_id == b.finding_id != c.finding_id


REC = ShareStateRecord(KEY, False, timestamp=5, source_partition=9, source_offset=40)


def test_retries_need_several_records_near_the_limit() -> None:
    one = _state(Batch(5, 5, AVAILABLE, 4), Batch(6, 9, ACKNOWLEDGED, 1))
    assert retries(one, REC, CONFIG, NAMES) is None  # a single poison record
    two = _state(Batch(5, 6, AVAILABLE, 4))
    assert retries(two, REC, CONFIG, NAMES) is None  # below share_retry_records (3)
    low = _state(Batch(5, 9, AVAILABLE, 3))
    assert retries(low, REC, CONFIG, NAMES) is None  # two short of the limit
    gone = _state(Batch(5, 9, ARCHIVED, 5))
    assert retries(gone, REC, CONFIG, NAMES) is None  # archived: not in flight any more
    storm = _state(
        Batch(5, 6, AVAILABLE, 4), Batch(7, 7, ACKNOWLEDGED, 2), Batch(8, 8, AVAILABLE, 5)
    )
    f = retries(storm, REC, CONFIG, NAMES)
    assert f is not None and (f.kind, f.severity) == ("share_delivery_retries", "warning")
    assert f.evidence["retrying_offsets"] == [[5, 6], [8, 8]]
    assert f.evidence["retrying_records"] == 3 and f.evidence["delivery_counts"] == [4, 5]
    assert f.evidence["delivery_count_limit"] == 5
    higher = replace(CONFIG, share_delivery_count_limit=10)
    assert retries(storm, REC, higher, NAMES) is None


def test_the_engine_raises_each_once() -> None:
    analyzer = Analyzer(DetectorConfig(topic_names=NAMES))
    storm = ShareStateRecord(
        KEY, True, start_offset=0, timestamp=T0, batches=(Batch(0, 5, AVAILABLE, 4),)
    )
    found = analyzer._share_apply(storm)
    assert [f.kind for f in found] == ["share_delivery_retries"]
    assert analyzer._share_apply(replace(storm, timestamp=T0 + 1)) == []
    # Records in flight but no members: never stalled, whatever the time.
    late = replace(storm, snapshot=False, start_offset=-1, batches=(), timestamp=T0 + 10**9)
    assert analyzer._share_apply(late) == []
