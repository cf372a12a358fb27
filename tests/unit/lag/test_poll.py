"""The job's memory between polls (groupwatch.detect.lag.poll)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, PartitionLag, worst
from groupwatch.detect.lag.poll import MAX_POINTS, LagKeeper, TopicLag

RULES = LagRules(stop_ms=300_000, warn_ms=60_000, window_ms=300_000)
A = Owner("m-a", "app-1", "/10.0.0.1", 5)
B = Owner("m-b", "app-2", "/10.0.0.2", 6)


def topic_lag(rows: list[PartitionLag]) -> list[TopicLag]:
    """The reference the keeper's running sums are held to: the rows grouped per (group,
    topic) after the poll, each sum taken plainly."""
    by: dict[tuple[str, str], list[PartitionLag]] = {}
    for r in rows:
        by.setdefault((r.group, r.topic), []).append(r)
    out = []
    for (group, topic), rs in sorted(by.items()):
        seconds = [r.lag_seconds for r in rs if r.lag_seconds is not None]
        observed = [r.observed_ms for r in rs if r.observed_ms is not None]
        out.append(
            TopicLag(
                group,
                topic,
                max(observed) if observed else None,
                len(rs),
                sum(r.lag_records or 0 for r in rs),
                max(seconds) if seconds else None,
                worst(r.status for r in rs),
            )
        )
    return out


def end(at_s: int, offset: int, partition: int = 0) -> EndOffset:
    return EndOffset("t", partition, 0, offset, at_s * 1000)


def commit(offset: int, at_s: int) -> Commit:
    return Commit("g", "t", 0, offset, at_s * 1000, moved_ms=at_s * 1000)


def test_a_move_back_by_the_same_owner_between_polls_is_a_rewind() -> None:
    keeper = LagKeeper(RULES)
    keeper.observe([end(0, 1000)])
    first = keeper.judge([commit(900, 0)], {"g": {("t", 0): A}})
    assert [r.status for r in first.rows] == ["ok"]
    keeper.observe([end(15, 1000)])
    back = keeper.judge([commit(200, 14)], {"g": {("t", 0): A}})
    assert [r.status for r in back.rows] == ["rewound"]
    assert [f.kind for f in back.opened] == ["offset_rewound"]
    assert back.opened[0].member == "m-a"


def test_a_move_back_when_the_partition_changed_hands_is_not() -> None:
    keeper = LagKeeper(RULES)
    keeper.observe([end(0, 1000)])
    keeper.judge([commit(900, 0)], {"g": {("t", 0): A}})
    keeper.observe([end(15, 1000)])
    moved = keeper.judge([commit(200, 14)], {"g": {("t", 0): B}})
    assert [r.status for r in moved.rows] == ["ok"] and moved.opened == []
    keeper.observe([end(30, 1000)])
    reset = keeper.judge([commit(100, 29)], {})  # nobody owns it: a reset of the empty group
    assert [r.status for r in reset.rows] == ["ok"] and reset.opened == []


def test_a_deleted_offset_resolves_its_finding() -> None:
    keeper = LagKeeper(RULES)
    for t in range(0, 601, 15):
        keeper.observe([end(t, 100 * t)])
    stopped = keeper.judge([commit(10, 1)], {"g": {("t", 0): A}})
    assert [f.kind for f in stopped.opened] == ["consumer_stopped"]
    gone = keeper.judge([], {})
    assert gone.rows == [] and gone.resolved == [(stopped.opened[0].finding_id, "consumer_stopped")]


def test_unanswered_polls_keep_the_last_values_marked_stale() -> None:
    keeper = LagKeeper(RULES)
    keeper.observe([end(0, 50), end(15, 80)])
    fresh = keeper.judge([commit(60, 10)], {})
    stale = keeper.judge([commit(60, 10)], {}, stale=True)
    assert stale.rows[0].stale and not fresh.rows[0].stale
    assert (stale.rows[0].lag_records, stale.rows[0].end_offset) == (20, 80)
    assert stale.rows[0].observed_ms == 15_000


def test_a_flat_run_is_compressed_and_the_estimate_is_unchanged() -> None:
    keeper = LagKeeper(RULES)
    keeper.observe([end(t, 10) for t in range(0, 3600, 15)] + [end(3600, 20)])
    assert [p.observed_ms for p in keeper.history[("t", 0)]] == [0, 3_585_000, 3_600_000]
    row = keeper.judge([commit(10, 1)], {}).rows[0]
    # The end passed offset 10 between 3585 s and 3600 s: at 3586.5 s, 13.5 s before.
    assert row.lag_seconds is not None and abs(row.lag_seconds - 13.5) < 1e-6


def test_topic_rows_sum_records_and_take_the_worst() -> None:
    keeper = LagKeeper(RULES)
    keeper.observe([end(0, 100, 0), end(0, 100, 1)])
    commits = [commit(40, 0), Commit("g", "t", 1, 100, 0)]
    (topic,) = keeper.judge(commits, {}).topics
    assert (topic.partitions, topic.lag_records, topic.status) == (2, 60, "ok")


# -- the compact keeper (the job's) against the keeper that keeps everything -----------------
#: One poll of one partition: how far the log end moves (negative: a new, shorter log), how
#: far the committed offset moves (negative: back), whether a commit was made, who owns it,
#: and whether the brokers answered.
_ENDS = st.sampled_from([0, 0, 1, 5, 40, 400, -10_000])
_STEP = st.tuples(
    _ENDS,
    st.sampled_from([0, 0, 1, 5, 40, 400, -300]),
    st.booleans(),
    st.sampled_from([A, A, B, None]),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.lists(_STEP, min_size=3, max_size=3), min_size=1, max_size=40),
    poll_s=st.sampled_from([5, 15, 60]),
)
def test_the_compact_keeper_judges_as_the_one_that_keeps_everything(
    steps: list[list[tuple[int, int, bool, Owner | None, bool]]], poll_s: int
) -> None:
    """Its rows, the findings it opens and resolves, poll for poll, over three partitions
    whose logs grow, stall, restart shorter, and whose consumers keep up, fall behind, stop,
    move back and change hands: dropping what it drops changes no verdict.  (Without the
    history's ``trim``, which changes the verdicts of a move back: the next test.)"""
    _compare(LagKeeper(_rules(poll_s), trim=False), steps, poll_s)


#: The same polls with commits that never move back.
_FORWARD = st.tuples(
    _ENDS,
    st.sampled_from([0, 0, 1, 5, 40, 400]),
    st.booleans(),
    st.sampled_from([A, A, B, None]),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.lists(_FORWARD, min_size=3, max_size=3), min_size=1, max_size=40),
    poll_s=st.sampled_from([5, 15, 60]),
)
def test_the_trimmed_history_judges_as_the_whole_one_while_commits_move_forward(
    steps: list[list[tuple[int, int, bool, Owner | None, bool]]], poll_s: int
) -> None:
    """The job's keeper, its history cut at each partition's committed offset, against the
    one that keeps everything, on logs that grow, stall and restart shorter, with a second
    group on each partition far behind the first: the same rows, findings and topics, as long
    as no group moves back."""
    _compare(LagKeeper(_rules(poll_s)), steps, poll_s, behind=True)


def _rules(poll_s: int) -> LagRules:
    return LagRules(stop_ms=120_000, warn_ms=30_000, window_ms=90_000, poll_ms=poll_s * 1000)


def _compare(
    compact: LagKeeper,
    steps: list[list[tuple[int, int, bool, Owner | None, bool]]],
    poll_s: int,
    *,
    behind: bool = False,
) -> None:
    """``behind``: a group ``h`` commits half of ``g``'s offset on each partition too."""
    rules = compact.rules
    full = LagKeeper(rules, compact=False)
    ends = [1000, 1000, 1000]
    offsets = [900, 1000, 500]
    made = [0, 0, 0]
    for i, poll in enumerate(steps):
        at = (i + 1) * poll_s * 1000
        answers, commits, owners = [], [], {}
        for p, (grow, move, commits_now, owner, answered) in enumerate(poll):
            ends[p] = max(0, ends[p] + grow)
            if commits_now:
                offsets[p] = max(0, offsets[p] + move)
                made[p] = at - 1000
            if answered:
                answers.append(EndOffset("t", p, 0, ends[p], at))
            commits.append(Commit("g", "t", p, offsets[p], made[p], moved_ms=None))
            if behind:
                commits.append(Commit("h", "t", p, offsets[p] // 2, made[p], moved_ms=None))
            if owner is not None:
                owners[("t", p)] = owner
        for keeper in (compact, full):
            keeper.observe(answers)
            keeper.forget_older(at - 3_600_000)
        known = at - 500 if i % 3 else None
        commits.sort(key=lambda c: (c.group, c.partition))
        a = compact.judge(commits, {"g": owners}, stale=not answers, known_ms=known)
        b = full.judge(commits, {"g": owners}, stale=not answers, known_ms=known)
        assert a.rows == b.rows, f"poll {i}"
        assert a.opened == b.opened and a.resolved == b.resolved, f"poll {i}"
        assert a.topics == b.topics
        # The topics summed while judging are the rows summed afterwards.
        assert a.topics == topic_lag(a.rows) and b.topics == topic_lag(b.rows)


def test_a_low_judgement_replaced_by_one_of_the_same_answer_keeps_its_window() -> None:
    """The brokers' answer at 300 s is judged twice: with nothing waiting, then after the
    group moved its offset back (above warn); the full keeper's window still holds the low
    judgement at 255 s, so 90 s later the window is not lagging, in the compact keeper too
    (found by the property test above)."""
    rules = LagRules(stop_ms=120_000, warn_ms=30_000, window_ms=90_000)
    verdicts = []
    for keeper in (LagKeeper(rules), LagKeeper(rules, compact=False)):
        keeper.observe([end(0, 1000), end(255, 0)])  # a new, shorter log
        keeper.judge([commit(200, 250)], {})
        keeper.observe([end(300, 5)])
        keeper.judge([commit(200, 250)], {})  # 200 >= 5: nothing waits
        keeper.judge([commit(0, 299)], {}, stale=True)  # moved back: 5 wait, 36 s
        keeper.observe([end(390, 5)])
        verdicts.append([r.status for r in keeper.judge([commit(0, 299)], {}).rows])
    assert verdicts == [["ok"], ["ok"]]


def test_the_compact_keeper_keeps_two_points_of_an_idle_partitions_window() -> None:
    """The newest judgement and the one before it (in case the newest is replaced by a
    judgement of the same answer), not the window's twenty."""
    keeper = LagKeeper(RULES)
    for t in range(0, 3000, 15):
        keeper.observe([end(t, 100)])
        keeper.judge([commit(100, t)], {"g": {("t", 0): A}})
    assert keeper.tracks[("g", "t", 0)].recent == ((2970_000, 0.0), (2985_000, 0.0))
    full = LagKeeper(RULES, compact=False)
    for t in range(0, 3000, 15):
        full.observe([end(t, 100)])
        full.judge([commit(100, t)], {"g": {("t", 0): A}})
    assert len(full.tracks[("g", "t", 0)].recent) > 10


# -- what the keeper holds over a long run, and what it writes ---------------------------------
def test_a_fleet_that_keeps_up_holds_two_points_a_partition_however_long_it_runs() -> None:
    """Busy partitions (the end moves at every poll) and consumers at most a poll behind:
    a day of polls leaves a partition's history at the point before its committed offset and
    the newest, not 2,048 points (290 KB a partition before)."""
    keeper = LagKeeper(RULES)
    for t in range(0, 86_400, 15):
        keeper.observe([end(t, 100 * t, p) for p in range(3)])
        keeper.judge([Commit("g", "t", p, 100 * (t - 15), t * 1000) for p in range(3)], {})
    assert {len(points) for points in keeper.history.values()} == {2}


def test_one_group_far_behind_keeps_the_history_its_estimate_needs() -> None:
    """Two groups on a partition, one stopped an hour ago: the estimate of the stopped one
    stays exact (interpolated, not "at least"), the other's stays zero."""
    keeper = LagKeeper(RULES)
    rows = []
    for t in range(0, 7_200, 15):
        keeper.observe([end(t, 10 * t)])
        rows = keeper.judge(
            [Commit("a", "t", 0, 10 * t, t * 1000), Commit("b", "t", 0, 36_000, 3_600_000)], {}
        ).rows
    a, b = rows
    assert a.lag_seconds == 0.0
    # The end passed 36,000 at 3,600.1 s; the newest answer is at 7,185 s.
    assert not b.lag_seconds_at_least and b.lag_seconds is not None
    assert abs(b.lag_seconds - (7_185 - 3_600.1)) < 1e-6
    assert len(keeper.history[("t", 0)]) == 7_200 // 15 - 3_600 // 15


def test_a_seek_back_past_the_history_kept_is_at_least_never_a_guess() -> None:
    keeper = LagKeeper(RULES)
    for t in range(0, 600, 15):
        keeper.observe([end(t, 10 * t)])
        keeper.judge([commit(10 * t, t)], {})
    kept = keeper.history[("t", 0)][0].observed_ms
    row = keeper.judge([commit(100, 590)], {}).rows[0]  # written at 10 s: 575 s behind
    assert row.lag_seconds_at_least
    assert row.lag_seconds == (585_000 - kept) / 1000 < 575


def test_past_its_cap_a_history_is_thinned_and_a_steady_estimate_stays_exact() -> None:
    """A consumer stopped for longer than 2,048 polls on a steady producer: the older half is
    thinned, the span kept, the estimate interpolated exactly, not "at least"."""
    keeper = LagKeeper(RULES)
    for t in range(0, 15 * 5_000, 15):
        keeper.observe([end(t, 10 * t)])
    points = keeper.history[("t", 0)]
    assert len(points) <= MAX_POINTS and points[0].observed_ms == 0
    row = keeper.judge([commit(1_005, 1)], {}).rows[0]  # written at 100.6 s
    assert not row.lag_seconds_at_least and row.lag_seconds is not None
    assert abs(row.lag_seconds - (74_985 - 100.6)) < 1e-6


def test_only_changes_and_an_hourly_row_of_a_flat_run_are_written() -> None:
    keeper = LagKeeper(RULES)
    written: list[tuple[int, int]] = []
    for t in range(0, 2 * 3_600 + 60, 15):
        offset = 100 if t < 7_200 else 100 + t  # flat for two hours, then busy
        rows = keeper.observe([end(t, offset)])
        written += [(e.observed_ms // 1000, e.end_offset) for e in rows]
    assert written == [
        (0, 100),  # the first answer
        (3_600, 100),  # an hour on
        (7_185, 100),  # the flat run's last point, written when the end moved
        (7_200, 7_300),
        (7_215, 7_315),
        (7_230, 7_330),
        (7_245, 7_345),
    ]


def test_history_read_back_is_not_written_again() -> None:
    keeper = LagKeeper(RULES)
    keeper.restore([end(0, 100), end(15, 150)])
    keeper.restore([end(30, 150)], written=False)  # partition_lag's newest, not a row
    assert keeper.observe([end(45, 150)]) == []
    # The end moves: the flat run's end no row holds (30 s from partition_lag is in
    # memory but was replaced by 45 s) is written with the new answer.
    assert [e.observed_ms for e in keeper.observe([end(60, 160)])] == [45_000, 60_000]


def test_a_moving_end_is_a_row_a_minute_and_each_flat_run_keeps_its_ends() -> None:
    """``row_ms`` 60 s, polls 15 s apart: moving, flat from 285 s to 585 s, moving again."""
    keeper = LagKeeper(RULES, row_ms=60_000)
    written: list[int] = []
    for t in range(0, 700, 15):
        offset = 10 * min(t, 285) if t < 600 else 2_850 + (t - 585)
        written += [e.observed_ms // 1000 for e in keeper.observe([end(t, offset)])]
    # Every minute while it moves; the moving run's last answer (285 s) when the end stops,
    # the flat run's last (585 s) and the first that moved (600 s) when it moves again.
    assert written == [0, 60, 120, 180, 240, 285, 585, 600, 660]


def test_a_new_log_is_a_row_at_once() -> None:
    """A topic deleted and made again (the end goes backwards) between two rows a minute
    apart: its first answer is a row, so a restart does not read the old log's growth into
    the new one's."""
    keeper = LagKeeper(RULES, row_ms=60_000)
    written = []
    for t, offset in [(0, 500), (15, 600), (30, 10), (45, 20)]:
        written += [(e.observed_ms // 1000, e.end_offset) for e in keeper.observe([end(t, offset)])]
    assert written == [(0, 500), (30, 10)]


@settings(max_examples=300, deadline=None)
@given(
    histories=st.lists(
        st.lists(st.integers(0, 50), min_size=0, max_size=6, unique=True).map(sorted),
        max_size=8,
    ),
    cutoff=st.integers(0, 55),
)
def test_history_older_than_kept_goes_one_point_before_it_staying(
    histories: list[list[int]], cutoff: int
) -> None:
    """``forget_older``: of each partition's points (in time order), those before the first
    at or after the cutoff go but the last of them; a partition with none after it goes."""
    keeper = LagKeeper(LagRules(), compact=False)
    for p, times in enumerate(histories):
        keeper.history[("t", p)] = [EndOffset("t", p, 0, i, at) for i, at in enumerate(times)]
        keeper.written[("t", p)] = EndOffset("t", p, 0, 0, 0)
    keeper.forget_older(cutoff)
    for p, times in enumerate(histories):
        recent = [i for i, at in enumerate(times) if at >= cutoff]
        if not recent:
            assert ("t", p) not in keeper.history and ("t", p) not in keeper.written
        else:
            first = max(0, recent[0] - 1)
            kept = [e.observed_ms for e in keeper.history[("t", p)]]
            assert kept == times[first:], (times, cutoff)
