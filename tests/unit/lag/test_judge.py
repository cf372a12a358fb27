"""The status rules and the findings they open and resolve (docs/lag.md)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from groupwatch.detect.lag.book import CommitBook, advance
from groupwatch.detect.lag.judge import LagRules, Track, Verdict, judge
from groupwatch.detect.lag.model import Commit, EndOffset, Owner, worst

RULES = LagRules(poll_ms=15_000, warn_ms=60_000, stop_ms=300_000, window_ms=300_000)
OWNER = Owner("consumer-2-8f01", "billing-2", "/10.0.3.7", 41)
S = 1000
MIN = 60 * S


def ends(rate: float, until_ms: int, poll_ms: int = 15 * S) -> list[EndOffset]:
    """A steady producer of ``rate`` records/s from time 0, polled every ``poll_ms``."""
    return [
        EndOffset("orders", 3, 0, int(rate * t / 1000), t) for t in range(0, until_ms + 1, poll_ms)
    ]


def commit(offset: int, at: int, moved: int | None = None, **kw: object) -> Commit:
    return Commit("billing", "orders", 3, offset, at, moved_ms=at if moved is None else moved, **kw)  # type: ignore[arg-type]


def run(
    commits: dict[int, int], until_ms: int, rate: float = 100.0, owner: Owner | None = OWNER
) -> list[Verdict]:
    """Judge at every poll; ``commits``: poll time -> offset committed just before it."""
    history = ends(rate, until_ms)
    book = CommitBook()
    track = Track()
    out = []
    for i, e in enumerate(history):
        if e.observed_ms in commits:
            book.commit(Commit("billing", "orders", 3, commits[e.observed_ms], e.observed_ms - 1))
        c = book.commits.get(("billing", "orders", 3))
        if c is None:
            continue
        v = judge(c, history[: i + 1], owner, RULES, track)
        track = v.track
        out.append(v)
    return out


def statuses(vs: list[Verdict]) -> list[str]:
    return [v.row.status for v in vs]


def test_caught_up_is_idle_whatever_the_commit_age() -> None:
    history = [EndOffset("orders", 3, 0, 500, t) for t in (0, 10 * 3_600_000)]
    v = judge(commit(500, 0), history, OWNER, RULES)
    assert (v.row.status, v.row.lag_records, v.row.lag_seconds) == ("idle", 0, 0.0)
    assert v.opened is None


def test_a_consumer_that_keeps_up_is_ok_for_hours() -> None:
    # Commits every 15 s, 10 s behind the producer.
    commits = {t: int(100 * (t - 10 * S) / 1000) for t in range(15 * S, 3 * 3_600_000, 15 * S)}
    vs = run(commits, 3 * 3_600_000)
    assert set(statuses(vs)) == {"ok"}
    assert all(v.opened is None for v in vs)
    assert all(abs((v.row.lag_seconds or 0) - 10) <= 15 for v in vs)


def test_stopped_is_raised_with_the_owner_and_resolved_when_it_commits_again() -> None:
    commits = {15 * S: 1500, 20 * MIN: 120_000}  # one commit, then nothing until 20 min
    vs = run(commits, 25 * MIN)
    first = next(i for i, v in enumerate(vs) if v.row.status == "stopped")
    # No commit for 5 min and the oldest waiting record 5 min old: not before.
    assert vs[first].row.observed_ms is not None
    assert vs[first].row.observed_ms - 15 * S + 1 >= RULES.stop_ms
    opened = vs[first].opened
    assert opened is not None and opened.kind == "consumer_stopped"
    assert opened.member == "consumer-2-8f01" and opened.partition == 3
    assert "orders-3 of billing has had no commit for 5 min" in opened.detail
    assert "client billing-2, host /10.0.3.7" in opened.detail
    assert "since generation 41" in opened.detail
    assert opened.evidence["owner_client"] == "billing-2"
    assert sum(1 for v in vs if v.opened) == 1  # opened once, not every poll
    back = next(v for v in vs if v.row.committed_offset == 120_000)
    assert back.row.status != "stopped" and back.resolved == (opened.finding_id, "consumer_stopped")


def test_stalled_when_commits_continue_at_the_same_offset() -> None:
    commits = {t: 1500 for t in range(15 * S, 20 * MIN, 15 * S)}
    vs = run(commits, 20 * MIN)
    assert "stalled" in statuses(vs) and "stopped" not in statuses(vs)
    v = next(v for v in vs if v.opened)
    assert v.opened is not None and v.opened.kind == "consumer_stalled"


def test_a_slow_topic_consumed_at_once_is_never_stopped() -> None:
    """One record an hour, consumed and committed within a poll: between the record and the
    commit the lag is 1 and the last commit an hour old, but the record waited seconds."""
    history: list[EndOffset] = []
    book = CommitBook()
    track = Track()
    for hour in range(1, 6):
        t0 = hour * 3_600_000
        history += [EndOffset("orders", 3, 0, hour - 1, t0 - 15 * S)]
        history += [EndOffset("orders", 3, 0, hour, t0)]
        book.commit(Commit("billing", "orders", 3, hour - 1, (hour - 1) * 3_600_000 + 1))
        c = book.commits[("billing", "orders", 3)]
        v = judge(c, history, OWNER, RULES, track)
        track = v.track
        assert v.row.status == "ok" and v.row.lag_records == 1, v.row
        assert v.row.lag_seconds is not None and v.row.lag_seconds <= 15


def test_a_restart_or_rebalance_of_two_minutes_raises_nothing() -> None:
    # Keeps up, then nothing is committed for 2 min (restart), then it catches up.
    commits = {t: int(100 * (t - 5 * S) / 1000) for t in range(15 * S, 30 * MIN, 15 * S)}
    for t in range(10 * MIN, 12 * MIN, 15 * S):
        commits.pop(t, None)
    vs = run(commits, 30 * MIN)
    assert set(statuses(vs)) == {"ok"}


def test_lagging_when_slower_than_the_producer_for_a_whole_window() -> None:
    # Consumes 80 of the producer's 100 records/s.
    commits = {t: int(80 * t / 1000) for t in range(15 * S, 30 * MIN, 15 * S)}
    vs = run(commits, 30 * MIN)
    st_ = statuses(vs)
    assert "lagging" in st_ and not {"stopped", "stalled"} & set(st_)
    first = st_.index("lagging")
    # Not before lag passed warn (60 s behind at ~300 s) and a whole window above it.
    assert vs[first].row.observed_ms is not None and vs[first].row.observed_ms >= 600 * S
    kinds = [v.opened.kind for v in vs if v.opened]
    assert kinds == ["consumer_lagging"]


def test_rewound_by_a_member_within_a_generation() -> None:
    book = CommitBook()
    book.commit(commit(1000, 1000, generation=7))
    c = book.commit(commit(400, 2000, generation=7))
    assert (c.rewound_from, c.rewound_ms) == (1000, 2000)
    history = [EndOffset("orders", 3, 0, 1200, 3000)]
    v = judge(c, history, OWNER, RULES)
    assert v.row.status == "rewound" and v.opened is not None
    assert v.opened.kind == "offset_rewound" and "from offset 1,000 to 400" in v.opened.detail
    # Moving forward but still short of 1000: still rewound; back at 1000: over.
    c = book.commit(commit(900, 4000, generation=7))
    assert c.rewound_from == 1000
    c = book.commit(commit(1000, 5000, generation=7))
    assert c.rewound_from is None
    v2 = judge(c, [EndOffset("orders", 3, 0, 1200, 6000)], OWNER, RULES, v.track)
    assert v2.row.status == "ok" and v2.resolved is not None


def test_a_rebalance_or_a_reset_of_the_group_is_not_a_rewind() -> None:
    assert advance(commit(1000, 1, generation=7), commit(400, 2, generation=8)).rewound_from is None
    assert (
        advance(commit(1000, 1, generation=7), commit(400, 2, generation=7), members=0).rewound_from
        is None
    )
    assert advance(commit(1000, 1), commit(400, 2)).rewound_from is None  # generation unknown


def test_an_empty_group_alerts_until_retired() -> None:
    rules = LagRules(stop_ms=300_000, retire_ms=3_600_000)
    history = ends(100, 2 * 3_600_000)
    c = commit(1500, 15 * S)
    at_10min = judge(c, history[: 10 * 4], None, rules)
    assert at_10min.row.status == "stopped" and at_10min.opened is not None
    assert at_10min.opened.member is None and "owned by no member" in at_10min.opened.detail
    retired = judge(c, history, None, rules, at_10min.track)
    assert retired.row.status == "idle" and retired.row.retired
    assert retired.resolved == (at_10min.opened.finding_id, "consumer_stopped")
    # A group with an owner is never retired.
    assert judge(c, history, OWNER, rules).row.status == "stopped"


def test_never_observed_is_unknown_not_late() -> None:
    v = judge(commit(5, 0), [], OWNER, RULES)
    assert v.row.end_offset is None and v.row.lag_records is None and v.row.lag_seconds is None
    assert v.row.status == "idle" and v.opened is None


def test_committed_beyond_the_end_is_zero_not_negative() -> None:
    v = judge(commit(900, 0), [EndOffset("orders", 3, 0, 10, 1000)], OWNER, RULES)
    assert v.row.lag_records == 0


def test_tombstones_remove_offsets() -> None:
    book = CommitBook()
    book.commit(commit(1, 1))
    book.commit(Commit("billing", "other", 0, 5, 1))
    book.commit(Commit("shipping", "orders", 0, 5, 1))
    book.delete("billing", "orders", 3)
    assert ("billing", "orders", 3) not in book.commits
    book.delete_group("billing")
    assert book.groups() == {"shipping"}


def test_worst_order() -> None:
    assert worst(["ok", "idle", "lagging"]) == "lagging"
    assert worst(["rewound", "stalled"]) == "stalled"
    assert worst(["stopped", "stalled"]) == "stopped"
    assert worst([]) == "idle"


@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 60_000)), min_size=1, max_size=30),
    st.integers(0, 20_000),
)
def test_lag_is_never_negative_and_zero_means_idle(
    points: list[tuple[int, int]], committed: int
) -> None:
    history = [EndOffset("t", 0, 0, e, i * 15_000) for i, (e, _) in enumerate(points)]
    v = judge(Commit("g", "t", 0, committed, 0), history, None, RULES)
    assert v.row.lag_records is not None and v.row.lag_records >= 0
    assert v.row.lag_records == max(0, history[-1].end_offset - committed)
    if v.row.lag_records == 0:
        assert v.row.status == "idle" and v.row.lag_seconds == 0.0
    else:
        assert v.row.lag_seconds is not None and v.row.lag_seconds >= 0
