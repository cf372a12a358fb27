"""The job's memory between polls (groupwatch.detect.lag.poll)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, PartitionLag, worst
from groupwatch.detect.lag.poll import LagKeeper, TopicLag

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
_STEP = st.tuples(
    st.sampled_from([0, 0, 1, 5, 40, 400, -10_000]),
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
    move back and change hands: dropping what it drops changes no verdict."""
    rules = LagRules(stop_ms=120_000, warn_ms=30_000, window_ms=90_000, poll_ms=poll_s * 1000)
    compact, full = LagKeeper(rules), LagKeeper(rules, compact=False)
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
            if owner is not None:
                owners[("t", p)] = owner
        for keeper in (compact, full):
            keeper.observe(answers)
            keeper.forget_older(at - 3_600_000)
        known = at - 500 if i % 3 else None
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
