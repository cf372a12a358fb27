from __future__ import annotations

from groupwatch.rows.classic_ownership import Owner, advance, close_all, first_owner
from groupwatch.tables import timestamp

A, B = Owner("a", "client-a"), Owner("b", "client-b")


def test_first_snapshot_opens_an_interval_per_partition() -> None:
    state, rows = advance("g", {}, 1, 1000, {("t", 0): A, ("t", 1): B})
    assert len(state) == 2
    assert sorted((r.partition, r.member_id, r.to_generation) for r in rows) == [
        (0, "a", None),
        (1, "b", None),
    ]


def test_unchanged_owner_writes_nothing_and_keeps_its_start() -> None:
    state, _ = advance("g", {}, 1, 1000, {("t", 0): A})
    state2, rows = advance("g", state, 2, 2000, {("t", 0): A})
    assert rows == []
    assert state2 == state


def test_handover_closes_old_and_opens_new() -> None:
    state, _ = advance("g", {}, 1, 1000, {("t/x", 0): A})
    state, rows = advance("g", state, 3, 3000, {("t/x", 0): B})
    closed = [r for r in rows if r.to_generation is not None]
    opened = [r for r in rows if r.to_generation is None]
    assert [(r.member_id, r.from_generation, r.to_generation, r.to_time) for r in closed] == [
        ("a", 1, 3, timestamp(3000))
    ]
    assert [(r.topic, r.member_id, r.from_generation, r.from_time) for r in opened] == [
        ("t/x", "b", 3, timestamp(3000))
    ]


def test_unassigned_partition_is_closed_and_deletion_closes_all() -> None:
    state, _ = advance("g", {}, 1, 1000, {("t", 0): A, ("t", 1): B})
    state, rows = advance("g", state, 2, 2000, {("t", 1): B})
    assert [(r.partition, r.to_generation) for r in rows] == [(0, 2)]
    assert [(r.partition, r.to_generation, r.to_time) for r in close_all("g", state, 3, 9)] == [
        (1, 3, timestamp(9))
    ]


def test_overlap_keeps_the_first_owner() -> None:
    assert first_owner([(("t", 0), A), (("t", 0), B)]) == {("t", 0): A}
