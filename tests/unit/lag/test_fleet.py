"""The fleet's partitions judged as columns (groupwatch.detect.lag.fleet), held to the keeper
that judges them one by one."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.detect.lag.fleet import (
    FleetKeeper,
    commits_table,
    judge_rows,
    owners_table,
    rows_of,
)
from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.lag.model import Commit, EndOffset, Owner
from groupwatch.detect.lag.poll import LagKeeper, PollResult

A = Owner("m-a", "app-1", "/10.0.0.1", 5)
B = Owner("m-b", "app-2", "/10.0.0.2", 6)
A2 = Owner("m-a", "app-1", "/10.0.0.9", 5)  # the same member seen with another host

#: One poll of one partition: how far the log end moves (negative: a new, shorter log), how
#: far the committed offset moves (negative: back), whether a commit was made (and with
#: which ``moved_time``: none, the commit's, an earlier one), who owns it, whether the
#: brokers answered, and whether the partition's offset exists (deleted, then back).
_STEP = st.tuples(
    st.sampled_from([0, 0, 1, 5, 40, 400, -10_000]),
    st.sampled_from([0, 0, 1, 5, 40, 400, -300]),
    st.sampled_from([None, "none", "made", "earlier"]),
    st.sampled_from([A, A, B, A2, None]),
    st.booleans(),
    st.sampled_from([True, True, True, True, False]),
)
Step = tuple[int, int, str | None, Owner | None, bool, bool]


def _rules(poll_s: int) -> LagRules:
    return LagRules(stop_ms=120_000, warn_ms=30_000, window_ms=90_000, poll_ms=poll_s * 1000)


def _same(a: PollResult, b: PollResult, where: str) -> None:
    assert a.table is not None
    assert rows_of(a.table) == b.rows, where
    assert a.rows == [r for r in b.rows if r.status in ("stopped", "stalled", "rewound", "lagging")]
    assert a.opened == b.opened, where
    assert sorted(a.resolved) == sorted(b.resolved), where
    assert a.topics == b.topics, where


def _run(
    steps: list[list[Step]],
    poll_s: int,
    *,
    trim: bool,
    behind: bool,
    offsets: tuple[int, int, int] = (900, 1000, 500),
    prepared_first: bool = False,
    by_strings: bool = False,
) -> int:
    """Both keepers through the same polls; returns how many partitions the fleet keeper
    judged as arrays (so a test can tell it did).  ``prepared_first``: the fleet keeper
    given the commits and owners before the brokers' answer (as the job's poll does it);
    ``by_strings``: its keys joined as strings, as a fleet whose ids do not fit is."""
    rules = _rules(poll_s)
    one = LagKeeper(rules, trim=trim)
    fleet = FleetKeeper(rules, trim=trim)
    if by_strings:
        fleet._codes.encode = lambda table: None  # type: ignore[method-assign]
    ends = [1000, 1000, 1000]
    committed = list(offsets)
    made = [0, 0, 0]
    moved: list[int | None] = [None, None, None]
    as_arrays = 0
    for i, poll in enumerate(steps):
        at = (i + 1) * poll_s * 1000
        answers, commits, owners = [], [], {}
        for p, (grow, move, commit_kind, owner, answered, exists) in enumerate(poll):
            ends[p] = max(0, ends[p] + grow)
            if commit_kind is not None:
                committed[p] = max(0, committed[p] + move)
                made[p] = at - 1000
                if commit_kind == "none":
                    moved[p] = None
                elif commit_kind == "made":
                    moved[p] = made[p]
                else:  # the table's time of the offset's first commit, before this one
                    moved[p] = made[p] - 7_000
            if answered:
                answers.append(EndOffset("t", p, 0, ends[p], at))
            if exists:
                commits.append(Commit("g", "t", p, committed[p], made[p], moved_ms=moved[p]))
                if behind:
                    commits.append(Commit("h", "t", p, committed[p] // 2, made[p]))
            if owner is not None:
                owners[("t", p)] = owner
        commits.sort(key=lambda c: (c.group, c.partition))
        if prepared_first:
            fleet.prepare(commits_table(commits), owners_table({"g": owners}))
        for keeper in (one, fleet):
            keeper.observe(answers)
            keeper.forget_older(at - 3_600_000)
        known = at - 500 if i % 3 else None
        b = one.judge(commits, {"g": owners}, stale=not answers, known_ms=known)
        if prepared_first:
            a = fleet.judge_prepared(stale=not answers, known_ms=known)
        else:
            a = judge_rows(fleet, commits, {"g": owners}, stale=not answers, known_ms=known)
        _same(a, b, f"poll {i}")
        # The memory too: a difference no verdict shows yet could show at a later poll.
        assert fleet.tracks == one.tracks, f"poll {i}"
        as_arrays += len(commits) - fleet.judged_one_by_one
        assert fleet.history == one.history
    return as_arrays


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.lists(_STEP, min_size=3, max_size=3), min_size=1, max_size=40),
    poll_s=st.sampled_from([5, 15, 60]),
    prepared_first=st.booleans(),
    by_strings=st.booleans(),
)
def test_the_fleet_judged_as_columns_is_judged_as_one_by_one(
    steps: list[list[Step]], poll_s: int, prepared_first: bool, by_strings: bool
) -> None:
    """Rows, findings opened and resolved, topics and the history kept, poll for poll, over
    logs that grow, stall and restart shorter, consumers that keep up, fall behind, stop,
    stall, move back, change hands and have their offsets deleted, brokers that do not
    answer: the arrays change no verdict; nor does joining the owners before the brokers'
    answer is observed (``prepare``), nor joining the keys as integers or as strings."""
    _run(
        steps,
        poll_s,
        trim=False,
        behind=False,
        prepared_first=prepared_first,
        by_strings=by_strings,
    )


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(st.lists(_STEP, min_size=3, max_size=3), min_size=1, max_size=40),
    poll_s=st.sampled_from([5, 15, 60]),
    prepared_first=st.booleans(),
)
def test_with_a_group_far_behind_and_the_history_trimmed(
    steps: list[list[Step]], poll_s: int, prepared_first: bool
) -> None:
    _run(steps, poll_s, trim=True, behind=True, prepared_first=prepared_first)


def test_a_fleet_that_keeps_up_is_judged_as_arrays() -> None:
    """The plain case (consumers that keep up or are behind by less than ``warn``) takes no
    one-by-one judgement, and its rows are the keeper's."""
    steady = [[(10, 10, "made", A, True, True)] * 3] * 30
    # Caught up, half a step behind (the history's last step), five steps behind (a search
    # of the history), all under ``warn``.
    as_arrays = _run(steady, 5, trim=True, behind=False, offsets=(1000, 995, 950))
    assert as_arrays == 3 * len(steady)


def test_polls_the_brokers_do_not_answer_are_judged_as_arrays_too() -> None:
    """A poll without an answer judges the last answer again (the rows marked stale): for a
    fleet that keeps up, as arrays, not one by one, which at fleet scale cost a poll ten
    times its usual time exactly while the brokers are in trouble."""
    answered = [(10, 10, "made", A, True, True)] * 3
    silent = [(10, 10, "made", A, False, True)] * 3
    polls = [answered] * 5 + [silent] * 4 + [answered] * 3 + [silent] + [answered] * 2
    as_arrays = _run(polls, 5, trim=True, behind=False, offsets=(1000, 995, 950))
    assert as_arrays == 3 * len(polls)


def test_keys_are_looked_up_as_the_last_equal_row() -> None:
    from groupwatch.detect.lag.fleet import _lookup

    keys = np.array([7, 3, 7, 9, 3], dtype=np.int64)
    probe = np.array([3, 7, 8, 9, 10, 0], dtype=np.int64)
    assert _lookup(probe, keys).tolist() == [4, 2, -1, 3, -1, -1]
    assert _lookup(probe, keys[:0]).tolist() == [-1] * 6
    assert _lookup(probe[:0], keys).tolist() == []


def test_ids_made_anew_when_groups_come_and_go_change_no_verdict() -> None:
    """A fleet whose groups are new at every poll (console consumers, tests) wears the ids
    out: they are made anew, with the last poll's keys, and the partition that stayed is
    judged as the keeper judges it across the change (its offset moved back by its owner:
    a rewind, which a lost memory would not see)."""
    rules = _rules(15)
    one, fleet = LagKeeper(rules), FleetKeeper(rules)
    made = []
    for i in range(9):
        at = (i + 1) * 15_000
        offset = 200 if i == 8 else 900  # back, at the poll that makes the ids anew
        commits = [Commit("stay", "t", 0, offset, at - 1000)]
        # More groups before it each poll: its id after the change is not its first one.
        commits += [Commit(f"g{i}-{n}", "t", 1, 10, at - 1000) for n in range(1000 + i)]
        commits.sort(key=lambda c: (c.group, c.partition))
        owners = {"stay": {("t", 0): A}}
        for keeper in (one, fleet):
            keeper.observe([EndOffset("t", 0, 0, 1000, at), EndOffset("t", 1, 0, 10, at)])
        b = one.judge(commits, owners)
        _same(judge_rows(fleet, commits, owners), b, f"poll {i}")
        made.append(len(fleet._codes.groups.ids))
    assert [r.status for r in b.rows if r.group == "stay"] == ["rewound"]
    assert made[-2] > 8000 and made[-1] < 3000, made  # made anew at the last poll


def test_a_stopped_consumer_opens_its_finding_with_its_owner_and_a_deleted_offset_ends_it() -> None:
    rules = _rules(15)
    fleet = FleetKeeper(rules)
    opened = []
    for t in range(0, 601, 15):
        fleet.observe([EndOffset("t", 0, 0, 100 * t, t * 1000)])
        result = judge_rows(fleet, [Commit("g", "t", 0, 10, 1000)], {"g": {("t", 0): A}})
        opened += result.opened
    assert [f.kind for f in opened] == ["consumer_stopped"] and opened[0].member == "m-a"
    assert [r.status for r in result.rows] == ["stopped"]
    gone = judge_rows(fleet, [], {})
    assert gone.table.num_rows == 0
    assert gone.resolved == [(opened[0].finding_id, "consumer_stopped")]


def test_the_tables_moved_time_counts_only_while_the_offset_stays() -> None:
    """``moved_time`` (when the offset first had its value) replaces the commit's own time
    at a first sight or an unchanged offset, not at a move forward seen between two polls,
    and a commit read again unchanged is not advanced again: a stall is timed as the keeper
    times it (here the two would differ by seven seconds)."""
    rules = _rules(5)
    one, fleet = LagKeeper(rules), FleetKeeper(rules)
    reads = {5: Commit("g", "t", 0, 50, 5_000, moved_ms=5_000)}
    for at in range(10, 200, 5):
        reads[at] = Commit("g", "t", 0, 100, 10_000, moved_ms=3_000)
    statuses = []
    for at in range(0, 200, 5):
        answer = [EndOffset("t", 0, 0, 200 + at, at * 1000)]
        commits = [reads[at]] if at in reads else []
        owners = {"g": {("t", 0): A}}
        for keeper in (one, fleet):
            keeper.observe(answer)
        b = one.judge(commits, owners)
        a = judge_rows(fleet, commits, owners)
        _same(a, b, f"at {at}")
        statuses += [r.status for r in b.rows]
    assert "stopped" in statuses and "stalled" not in statuses


def test_a_poll_without_an_owner_at_the_same_offset_keeps_the_owners_mark() -> None:
    """An unchanged offset read while no member owns the partition (between a member leaving
    and the assignment that follows) carries the last owner's mark: the same member moving
    the offset back afterwards is a rewind, as the keeper judges it."""
    rules = _rules(15)
    one, fleet = LagKeeper(rules), FleetKeeper(rules)
    polls = [(900, A), (900, None), (200, A)]
    statuses = []
    for i, (offset, owner) in enumerate(polls):
        at = (i + 1) * 15_000
        owners = {} if owner is None else {"g": {("t", 0): owner}}
        commits = [Commit("g", "t", 0, offset, at - 1000 if i != 1 else 14_000)]
        for keeper in (one, fleet):
            keeper.observe([EndOffset("t", 0, 0, 1000, at)])
        b = one.judge(commits, owners)
        _same(judge_rows(fleet, commits, owners), b, f"poll {i}")
        statuses += [r.status for r in b.rows]
    assert statuses[-1] == "rewound"


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["m-a", "m-b", "consumer-1-ü", "", None]),
            st.one_of(
                st.none(),
                st.integers(-3, 3),
                st.sampled_from([2**31 - 1, -(2**31)]),
                st.integers(-(2**40), 2**40),
            ),
        ),
        max_size=30,
    )
)
def test_owner_marks_are_the_marks_of_each_rows_text(
    rows: list[tuple[str | None, int | None]],
) -> None:
    """An owner's mark found among the distinct owners as integers (or by text, for
    generations beyond 32 bits) is ``mark_of`` of its row's ``member NUL generation``."""
    import pyarrow as pa

    from groupwatch.detect.lag.fleet import _owner_marks
    from groupwatch.detect.lag.poll import mark_of

    members = pa.array([m for m, _ in rows], pa.string())
    generations = pa.array([g for _, g in rows], pa.int64())
    want = [-1 if m is None else mark_of(f"{m}\0{g}") for m, g in rows]
    known: dict[str, int] = {}
    assert _owner_marks(members, generations, known).tolist() == want
    assert _owner_marks(members, generations, known).tolist() == want  # from what it knows
