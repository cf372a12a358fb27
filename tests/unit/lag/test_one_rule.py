"""One lag verdict: the job's first poll and ``analyze`` judge a stop from the same facts.  Where
no observation of the log end brackets a committed offset, the record there tells when it was
written (``passing_points``), for both."""

from __future__ import annotations

from groupwatch.detect.lag.brokers import histories
from groupwatch.detect.lag.estimate import passing_points
from groupwatch.detect.lag.fleet import FleetKeeper, commits_table, owners_table
from groupwatch.detect.lag.judge import LagRules, judge
from groupwatch.detect.lag.model import Commit, EndOffset

RULES = LagRules()
NOW = 1_700_000_000_000
MIN = 60_000

#: A group stopped 11 min ago at offset 100 (records kept arriving); one that committed a
#: minute ago at 480; one caught up.
COMMITS = [
    Commit("stopped", "t", 0, 100, NOW - 11 * MIN, moved_ms=NOW - 11 * MIN),
    Commit("recent", "t", 0, 480, NOW - MIN, moved_ms=NOW - MIN),
    Commit("idle", "t", 1, 50, NOW - 30 * MIN, moved_ms=NOW - 30 * MIN),
]
ENDS = [EndOffset("t", 0, 0, 500, NOW), EndOffset("t", 1, 0, 50, NOW)]
#: The brokers' first records at the committed offsets (the stopped group's was written 10 min
#: ago, the recent one's 50 s ago).
RECORDS = {
    (("t", 0), 100): (100, NOW - 10 * MIN),
    (("t", 0), 480): (480, NOW - 50_000),
}


def _analyze() -> dict[str, str | None]:
    """``analyze``'s verdicts: one answer, the record at each committed offset."""
    out = {}
    for c in COMMITS:
        tp = (c.topic, c.partition)
        first = RECORDS.get((tp, c.offset))
        history = histories(ENDS, {tp: c.offset}, {} if first is None else {tp: first})[tp]
        v = judge(c, history, None, RULES)
        out[c.group] = None if v.opened is None else v.opened.kind
    return out


def _job(read: bool) -> tuple[dict[str, str | None], dict[tuple[str, int], list[int]]]:
    """The job's first poll: prepared, asked, the records read where asked (``read``)."""
    keeper = FleetKeeper(RULES)
    keeper.prepare(commits_table(COMMITS), owners_table({}))
    asked = keeper.unbracketed(ENDS)
    keeper.observe(ENDS)
    if read:
        found = {k: v for k, v in RECORDS.items() if k[1] in asked.get(k[0], [])}
        keeper.told(asked, found, ENDS)
    result = keeper.judge_prepared()
    opened = {f.group: f.kind for f in result.opened}
    return {c.group: opened.get(c.group) for c in COMMITS}, asked


def test_the_jobs_first_poll_and_analyze_raise_the_same_stop() -> None:
    verdicts, asked = _job(read=True)
    assert verdicts == _analyze() == {"stopped": "consumer_stopped", "recent": None, "idle": None}
    # Only the stop old enough to matter is read: not the recent commit, not the caught-up one.
    assert asked == {("t", 0): [100]}


def test_without_the_records_the_first_poll_cannot_tell_a_stop() -> None:
    # The gap the rule closes: a first poll's history starts past the committed offset.
    verdicts, _ = _job(read=False)
    assert verdicts["stopped"] is None


def test_an_offset_is_asked_once_and_the_learnt_time_stays_history() -> None:
    keeper = FleetKeeper(RULES)
    keeper.prepare(commits_table(COMMITS), owners_table({}))
    asked = keeper.unbracketed(ENDS)
    keeper.observe(ENDS)
    keeper.told(asked, {(("t", 0), 100): (100, NOW - 10 * MIN)}, ENDS)
    first = keeper.judge_prepared()
    later = [EndOffset("t", 0, 0, 560, NOW + 15_000), EndOffset("t", 1, 0, 50, NOW + 15_000)]
    keeper.prepare(commits_table(COMMITS), owners_table({}))
    assert keeper.unbracketed(later) == {}
    keeper.observe(later)
    second = keeper.judge_prepared()
    assert [f.kind for f in first.opened] == ["consumer_stopped"]
    assert second.opened == []  # still open, not raised again
    [row] = [r for r in second.rows if r.group == "stopped"]
    assert row.status == "stopped" and not row.lag_seconds_at_least
    assert row.lag_seconds == 10 * 60 + 15


def test_passing_points_of_a_record_and_of_one_retention_removed() -> None:
    newest = EndOffset("t", 0, 7, 500, NOW)
    assert passing_points(newest, 100, (100, NOW - MIN)) == [
        EndOffset("t", 0, 7, 100, NOW - MIN),
        EndOffset("t", 0, 7, 101, NOW - MIN),
    ]
    # The record at 100 is gone: the first one after it only bounds the time.
    assert passing_points(newest, 100, (120, NOW - MIN)) == [EndOffset("t", 0, 7, 121, NOW - MIN)]
    # A producer's clock ahead of the brokers' is held to the answer's time; none behind the end.
    assert passing_points(newest, 100, (100, NOW + MIN))[0].observed_ms == NOW
    assert passing_points(newest, 500, (500, NOW)) == []


def test_learnt_points_keep_between_their_neighbours() -> None:
    keeper = FleetKeeper(RULES)
    keeper.observe([EndOffset("t", 0, 0, 300, NOW - MIN), EndOffset("t", 0, 0, 500, NOW)])
    # A record whose timestamp is after the first observation (a producer's clock ahead).
    keeper.learn([EndOffset("t", 0, 0, 200, NOW), EndOffset("t", 0, 0, 201, NOW)])
    ends = [(e.end_offset, e.observed_ms) for e in keeper.history[("t", 0)]]
    assert ends == [(200, NOW - MIN), (201, NOW - MIN), (300, NOW - MIN), (500, NOW)]
