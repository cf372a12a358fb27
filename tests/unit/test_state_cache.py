"""The driver's state cache: what a batch may read from it, and what it reads."""

from __future__ import annotations

import pytest

from groupwatch.spark.state_cache import ENTRY_OVERHEAD, Key, StateCache, Version


def v(
    batch: int,
    state: str | None = "{}",
    *,
    deleted: bool = False,
    until: int | None = None,
    partition: int | None = None,
    last: int | None = 5,
) -> Version:
    return Version(batch, deleted, state, last, until, partition)


def loaded(*rows: tuple[str, Version], through: int = 9) -> StateCache:
    cache = StateCache(1_000_000)
    cache.reset(through, rows)
    return cache


def test_serves_only_the_batch_after_the_one_it_mirrors() -> None:
    cache = StateCache(1_000_000)
    assert not cache.covers(0)  # empty, never loaded
    cache.reset(-1, [])  # loaded before batch 0 from an empty table
    assert cache.covers(0) and not cache.covers(1)
    cache.settle(0)
    assert cache.covers(1) and not cache.covers(0)  # a replay of batch 0 reloads
    cache.invalidate()
    assert not cache.covers(1)


def test_a_batch_only_adds_after_what_it_mirrors() -> None:
    cache = loaded(("g", v(3)))
    with pytest.raises(ValueError, match="does not follow"):
        cache.add(12, [("g", v(12))])


def test_states_are_the_newest_live_versions_of_the_groups_asked() -> None:
    cache = loaded(("a", v(3, '{"a": 3}', last=7)), ("gone", v(4, None, deleted=True)))
    cache.add(10, [("a", v(10, '{"a": 10}', last=8)), ("b", v(10, '{"b": 10}'))])
    assert cache.split(["a", "b", "gone", "unknown"]) == (
        [("a", '{"a": 10}', 8), ("b", '{"b": 10}', 5)],
        [],
    )
    assert cache.split(["b"]) == ([("b", '{"b": 10}', 5)], [])


def test_due_follows_each_versions_partition_clock() -> None:
    cache = loaded(
        ("p0", v(3, until=100, partition=0)),
        ("p1", v(3, until=100, partition=1)),
        ("any", v(3, until=150)),
        ("late", v(3, until=500, partition=0)),
        ("gone", v(3, None, deleted=True, until=50, partition=0)),
        ("calm", v(3)),
    )
    # Partition 1 not read this batch: its group is not due; no partition: the newest clock.
    assert cache.due({0: 120, 2: 160}) == ["any", "p0"]
    assert cache.due({0: 99, 1: 100}) == ["p1"]
    assert cache.due({}) == []


def test_a_newer_version_replaces_the_pending_one() -> None:
    cache = loaded(("g", v(3, until=100, partition=0)))
    cache.add(10, [("g", v(10))])  # confirmed or superseded: nothing awaits
    assert cache.due({0: 1_000}) == []
    cache.settle(10)
    cache.add(11, [("g", v(11, until=2_000, partition=0))])
    assert cache.due({0: 1_000}) == [] and cache.due({0: 2_000}) == ["g"]


def test_forget_keeps_versions_of_the_batch_itself() -> None:
    cache = loaded(("silent", v(2)), ("reborn", v(7, None, deleted=True)))
    cache.add(10, [("reborn", v(10, '{"x": 1}'))])
    cache.forget(["silent", "reborn", "never"], 10)
    assert cache.split(["silent", "reborn"]) == ([("reborn", '{"x": 1}', 5)], [])
    assert len(cache) == 1


def test_over_budget_the_oldest_texts_go_and_every_key_stays() -> None:
    cache = StateCache(3 * ENTRY_OVERHEAD + 11)
    cache.reset(4, [("a", v(1, "x" * 5)), ("b", v(2, "y" * 5, until=50, partition=1))])
    assert cache.size_bytes == 2 * ENTRY_OVERHEAD + 10 and cache.holds_all_texts
    cache.add(5, [("c", v(5, "z" * 6))])
    # "a" was written longest ago: its text went first, and that was enough.
    assert cache.dropped_texts == 1 and not cache.holds_all_texts
    assert cache.size_bytes == 3 * ENTRY_OVERHEAD + 11
    held, by_key = cache.split(["a", "b", "c", "unknown"])
    assert held == [("b", "y" * 5, 5), ("c", "z" * 6, 5)]
    assert by_key == [Key("a", 1, 5)]
    cache.settle(5)
    # A group written again is the newest written: "b" now outlives "c".
    cache.add(6, [("b", v(6, "y" * 8, until=50, partition=1))])
    assert cache.split(["b", "c"]) == ([("b", "y" * 8, 5)], [Key("c", 5, 5)])
    # A dropped text keeps its timer: "b" is due on its partition's clock either way.
    cache.add(6, [("c", v(6, "w" * 20))])
    assert cache.split(["b"])[1] == [Key("b", 6, 5)] and cache.due({1: 50}) == ["b"]


def test_keys_are_held_whatever_the_budget() -> None:
    cache = StateCache(2 * ENTRY_OVERHEAD + 10)
    assert cache.fits(2, 10) and not cache.fits(2, 11)  # the table's keys and sizes
    assert not cache.fits(3, 0)
    cache.reset(4, [("a", v(1, "x" * 5)), ("b", v(2, "y" * 5, until=7))])
    cache.add(5, [("c", v(5, "z"))])
    # Three keys are over the budget alone: every text goes, every key stays.
    assert len(cache) == 3 and cache.covers(5) and cache.size_bytes == 3 * ENTRY_OVERHEAD
    assert cache.split(["a", "b", "c"]) == ([], [Key("a", 1, 5), Key("b", 2, 5), Key("c", 5, 5)])
    assert cache.due({0: 7}) == ["b"]
    # No budget at all (``job.state_cache_mb = 0``): keys only, from the start.
    empty = StateCache(0)
    empty.reset(4, [("a", v(1, "x"))])
    assert empty.split(["a"]) == ([], [Key("a", 1, 5)]) and empty.dropped_texts == 1


def test_loaded_without_texts_every_live_group_is_read_by_key() -> None:
    cache = StateCache(1_000_000)
    rows = [("a", v(1, None)), ("b", v(2, None, until=9)), ("gone", v(3, None, deleted=True))]
    cache.reset(4, [], keys_only=rows)
    assert cache.size_bytes == 3 * ENTRY_OVERHEAD and not cache.holds_all_texts
    assert cache.split(["a", "b", "gone", "unknown"]) == ([], [Key("a", 1, 5), Key("b", 2, 5)])
    assert cache.due({0: 9}) == ["b"]
    cache.add(5, [("a", v(5, '{"a": 5}'))])
    assert cache.split(["a"]) == ([("a", '{"a": 5}', 5)], [])


def test_sizes_follow_replacements_and_drops() -> None:
    cache = loaded(("a", v(1, "x" * 100)), ("b", v(1, None, deleted=True)))
    assert cache.size_bytes == 2 * ENTRY_OVERHEAD + 100
    cache.add(10, [("a", v(10, "x" * 40))])
    assert cache.size_bytes == 2 * ENTRY_OVERHEAD + 40
    cache.forget(["b"], 10)
    assert cache.size_bytes == ENTRY_OVERHEAD + 40


def test_a_load_over_budget_holds_the_newest_texts_that_fit() -> None:
    cache = StateCache(4 * ENTRY_OVERHEAD + 10)
    sizes = [("old", 1, 3), ("new", 9, 6), ("mid", 5, 5), ("empty", 2, 0)]
    # Room for 10 characters beside the four keys: "new" (6), then "mid" (5) is too many.
    assert cache.texts_to_hold(sizes) == {"new"}
    assert StateCache(4 * ENTRY_OVERHEAD + 13).texts_to_hold(sizes) == {"new", "mid", "empty"}
    assert StateCache(10_000).texts_to_hold(sizes) == {"old", "new", "mid", "empty"}
    assert StateCache(3 * ENTRY_OVERHEAD).texts_to_hold(sizes) == set()  # the keys alone are over
