"""``rebalance_stuck``: generations skipped after a silence, and the brokers' view of a rebalance
that lasts; no alarm on normal, slow-but-in-time, rolling-restart or stopping groups."""

from __future__ import annotations

from typing import Any

from groupwatch.detect import Analyzer, DetectorConfig, Finding, GroupState
from groupwatch.detect.model import BrokerView
from groupwatch_dev.scenarios.builder import BASE_TIME_MS, decoded_lines

GROUP = "g"
CONFIG = DetectorConfig(partitions_per_topic={"t": 2})


def _gen(n: int, t: float, members: tuple[str, ...] = ("A-1", "B-1")) -> dict[str, Any]:
    parts = {m: [i] for i, m in enumerate(members)}
    return {
        "group": GROUP,
        "generation": n,
        "protocol": "range",
        "version": 3,
        "time": t,
        "members": [
            {"id": m, "version": 3, "topics": ["t"], "generation_id": "prev", "assigned": {"t": p}}
            for m, p in parts.items()
        ],
    }


def _commits(start: float, end: float, every: float = 2.0) -> list[dict[str, Any]]:
    out, t = [], start
    while t <= end:
        out.append({"commit": {"group": GROUP, "topic": "t", "partition": 0}, "time": t})
        t += every
    return out


def _run(
    records: list[dict[str, Any]], config: DetectorConfig = CONFIG, analyzer: Analyzer | None = None
) -> tuple[Analyzer, list[Finding]]:
    analyzer = analyzer or Analyzer(config)
    found = [
        f
        for line in decoded_lines({"records": records})
        for f in analyzer.feed(line)
        if f.kind == "rebalance_stuck"
    ]
    return analyzer, found


def _look(
    analyzer: Analyzer, state: str, at_s: float, members: tuple[str, ...] = ()
) -> list[Finding]:
    view = BrokerView(GROUP, state, members, BASE_TIME_MS + int(at_s * 1000))
    return analyzer.observe(view)


def test_generations_skipped_after_a_silence_are_a_stuck_rebalance() -> None:
    # KAFKA-13406's shape: steady commits at generation 7, then 162 s of nothing until 13.
    _, found = _run([_gen(7, 0), *_commits(2, 20), _gen(13, 182)])
    [f] = found
    assert (f.group, f.generation, f.members) == (GROUP, 7, ("A-1", "B-1"))
    assert f.severity == "error"
    assert f.evidence["skipped_generations"] == {"first": 8, "last": 12, "count": 5}
    assert f.evidence["stuck_for_ms"] == 162_000
    assert f.evidence["stuck_since_ms"] == BASE_TIME_MS + 20_000
    assert f.evidence["next_generation"] == 13
    assert f.evidence["ended"] == "completed"
    assert "8..12" in f.detail and "A-1, B-1" in f.detail


def test_a_normal_rebalance_after_a_long_silence_is_not_stuck() -> None:
    _, found = _run([_gen(7, 0), *_commits(2, 20), _gen(8, 900)])
    assert found == []


def test_a_rolling_restart_skipping_generations_quickly_is_not_stuck() -> None:
    # Three generations skipped, but the group committed until 5 s before the next record.
    _, found = _run([_gen(7, 0), *_commits(1, 40), _gen(11, 45)])
    assert found == []


def test_fewer_skipped_generations_than_the_threshold_are_not_stuck() -> None:
    _, found = _run([_gen(7, 0), *_commits(2, 20), _gen(10, 600)])
    assert found == []
    _, found = _run(
        [_gen(7, 0), *_commits(2, 20), _gen(10, 600)], DetectorConfig(stuck_skipped_generations=2)
    )
    assert [f.generation for f in found] == [7]


def test_a_group_that_never_committed_is_not_judged_by_skipped_generations() -> None:
    _, found = _run([_gen(7, 0), _gen(13, 600)])
    assert found == []


def test_a_group_that_stopped_is_not_stuck() -> None:
    # All members left: an empty generation, whatever the silence before; the next members'
    # start is judged on its own (a start of two that skips two generations is healthy).
    _, found = _run([_gen(7, 0), *_commits(2, 20), _gen(8, 400, members=()), _gen(11, 900)])
    assert found == []
    _, found = _run(
        [_gen(7, 0), *_commits(2, 20), {"tombstone": GROUP, "time": 300}, _gen(13, 900)]
    )
    assert found == []


def test_the_brokers_view_confirms_a_rebalance_that_lasts() -> None:
    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    # One look is not enough: the rebalance may be over a moment later.
    assert _look(analyzer, "PreparingRebalance", 330, ("A-1 (a)",)) == []
    [f] = _look(analyzer, "PreparingRebalance", 360, ("A-1 (a)", "C-1 (c)"))
    assert (f.generation, f.members) == (7, ("A-1", "B-1"))
    assert f.evidence["confirmed_by"] == "brokers"
    assert f.evidence["broker_members"] == ["A-1 (a)", "C-1 (c)"]
    assert f.evidence["stuck_for_ms"] == 340_000
    # The generation that finally completes with skips is the same finding: not raised again.
    _, again = _run([_gen(13, 400)], analyzer=analyzer)
    assert again == []


def test_a_slow_rebalance_within_the_threshold_is_not_stuck() -> None:
    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    assert _look(analyzer, "PreparingRebalance", 100) == []
    assert _look(analyzer, "CompletingRebalance", 250) == []
    _, found = _run([_gen(8, 260)], analyzer=analyzer)
    assert found == []


def test_a_look_that_says_stable_starts_the_count_again() -> None:
    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    assert _look(analyzer, "PreparingRebalance", 400) == []
    assert _look(analyzer, "Stable", 430) == []
    assert _look(analyzer, "PreparingRebalance", 460) == []
    assert len(_look(analyzer, "PreparingRebalance", 490)) == 1


def test_commits_during_a_rebalance_push_the_silence_back() -> None:
    # Cooperative members keep consuming while they rebalance: they are not stuck.
    analyzer, _ = _run([_gen(7, 0), *_commits(1, 600)])
    assert _look(analyzer, "PreparingRebalance", 610) == []
    assert _look(analyzer, "PreparingRebalance", 640) == []


def test_the_brokers_view_needs_a_completed_generation_with_members() -> None:
    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20), _gen(8, 30, members=())])
    assert _look(analyzer, "PreparingRebalance", 400) == []
    assert _look(analyzer, "PreparingRebalance", 500) == []
    # A group no record has shown is left alone.
    assert Analyzer(CONFIG).observe(BrokerView("other", "PreparingRebalance", (), 10**13)) == []


def test_the_brokers_view_moves_no_stream_clock() -> None:
    # An unassigned partition awaits confirmation by stream time; a look an hour later (wall
    # clock) does not confirm it.
    lonely = dict(_gen(7, 0, members=("A-1",)))
    lonely["members"] = [dict(lonely["members"][0], assigned={"t": [0]})]
    analyzer, _ = _run([lonely])
    assert analyzer.pending(), "the scenario should leave unassigned_partitions pending"
    assert _look(analyzer, "Stable", 3600) == []
    assert analyzer.pending()


def test_the_watch_survives_the_state_round_trip() -> None:
    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    _look(analyzer, "PreparingRebalance", 330)
    saved = {g: GroupState.loads(s.dumps()) for g, s in analyzer.states.items()}
    assert saved == analyzer.states
    again = Analyzer(CONFIG, saved)
    assert len(_look(again, "PreparingRebalance", 360)) == 1


def test_kip848_groups_are_left_to_the_modern_checks() -> None:
    from dataclasses import replace

    from groupwatch.detect.modern.model import GroupType
    from groupwatch.detect.modern.state import ModernState

    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    state = analyzer.states[GROUP]
    analyzer.states[GROUP] = replace(state, modern=ModernState(GroupType.CONSUMER))
    assert _look(analyzer, "PreparingRebalance", 400) == []
    assert _look(analyzer, "PreparingRebalance", 500) == []


def test_analyze_looks_twice_at_the_groups_the_brokers_report_rebalancing() -> None:
    from collections.abc import Sequence

    from groupwatch.detect.brokers import look_twice

    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    asked: list[list[str]] = []
    slept: list[float] = []
    clock = iter([BASE_TIME_MS + 400_000, BASE_TIME_MS + 405_000])

    def describe(groups: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        asked.append(list(groups))
        return {g: ("PreparingRebalance", ("A-1 (a)",)) for g in groups}

    [f] = look_twice(analyzer, describe, 5.0, slept.append, lambda: next(clock))
    assert asked == [[GROUP], [GROUP]] and slept == [5.0]
    assert f.evidence["broker_members"] == ["A-1 (a)"] and f.generation == 7


def test_analyze_looks_once_at_settled_groups_and_at_emptied_ones() -> None:
    from collections.abc import Sequence

    from groupwatch.detect.brokers import look_twice

    analyzer, _ = _run([_gen(7, 0), *_commits(2, 20)])
    slept: list[float] = []

    def stable(groups: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        return {g: ("Stable", ()) for g in groups}

    assert look_twice(analyzer, stable, 5.0, slept.append) == [] and slept == []
    # An emptied group is looked at too (a rollout's new members may be joining it); an
    # empty answer needs no second look.
    emptied, _ = _run([_gen(7, 0), _gen(8, 10, members=())])
    asked: list[list[str]] = []

    def empty(groups: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        asked.append(list(groups))
        return {g: ("Empty", ()) for g in groups}

    assert look_twice(emptied, empty, 5.0, slept.append) == [] and asked == [[GROUP]]
    assert slept == []
    # A group never seen with members nor emptied (commits only) is not asked about.
    commits_only, _ = _run(_commits(0, 4))

    def refuse(groups: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
        raise AssertionError(f"asked about {groups}")

    assert look_twice(commits_only, refuse) == []


# -- after the group emptied (a rollout into a release whose assignor throws) ------------------

NEW = ("N-1 (new-1)", "N-2 (new-2)", "N-3 (new-3)")


def _emptied() -> Analyzer:
    # Three old members commit at generation 3, stop: the group empties at generation 4.
    old = ("A-1", "B-1", "C-1")
    analyzer, found = _run([_gen(3, 0, old), *_commits(2, 20), _gen(4, 30, members=())])
    assert found == []
    return analyzer


def test_a_rollout_whose_members_never_complete_is_stuck_from_the_records_after() -> None:
    # Generations 5..381 began and none completed; the members stop: one Empty at 382.
    _, found = _run([_gen(382, 105, members=())], analyzer=_emptied())
    [f] = found
    assert (f.group, f.generation, f.severity) == (GROUP, 4, "error")
    assert f.evidence["after_empty"] is True
    assert f.evidence["skipped_generations"] == {"first": 5, "last": 381, "count": 377}
    assert f.evidence["ended"] == "emptied" and f.evidence["stuck_for_ms"] == 75_000
    assert "no generation completed in 377 attempts over 75 seconds" in f.detail
    assert "the group emptied again at generation 382" in f.detail
    assert f.detail.startswith("members joined after ")


def test_a_rollout_that_later_completes_after_many_rounds_is_stuck() -> None:
    _, found = _run([_gen(60, 200, ("N-1", "N-2", "N-3"))], analyzer=_emptied())
    [f] = found
    assert f.generation == 4 and f.evidence["ended"] == "completed"
    assert "generation 60 then completed with 3 members" in f.detail


def test_a_healthy_rollout_is_not_stuck() -> None:
    # The new members complete their first generation late but in time, after a join or two
    # that each began a round the next join voided; or the group sat empty for an hour first.
    for record in (_gen(5, 300, ("N-1", "N-2", "N-3")), _gen(8, 3_600, ("N-1", "N-2", "N-3"))):
        _, found = _run([record], analyzer=_emptied())
        assert found == [], record
    # Members started and stopped again within seconds, a few rounds, nothing completed.
    _, found = _run([_gen(9, 40, members=())], analyzer=_emptied())
    assert found == []


def test_the_brokers_view_after_an_empty_generation_waits_the_rebalance_timeout() -> None:
    analyzer = _emptied()
    # A first look: a healthy start is a rebalance too.
    assert _look(analyzer, "CompletingRebalance", 40, NEW) == []
    # Rebalancing at later looks, within the rebalance timeout of the first: not yet.
    assert _look(analyzer, "PreparingRebalance", 70, NEW) == []
    assert _look(analyzer, "CompletingRebalance", 330, NEW) == []
    [f] = _look(analyzer, "CompletingRebalance", 340, NEW)
    assert (f.generation, f.severity) == (4, "error")
    assert f.evidence["confirmed_by"] == "brokers" and f.evidence["after_empty"] is True
    assert f.evidence["stuck_for_ms"] == 300_000 and f.evidence["joined_count"] == 3
    assert f.members == ("N-1", "N-2", "N-3")
    assert f.detail.startswith("3 members joined at ") and "N-2 (new-2)" in f.detail
    # The records after are the same finding (same id): not raised again.
    _, again = _run([_gen(382, 400, members=())], analyzer=analyzer)
    assert again == []


def test_the_records_after_name_who_the_brokers_saw_join() -> None:
    analyzer = _emptied()
    assert _look(analyzer, "CompletingRebalance", 40, NEW) == []
    assert _look(analyzer, "Empty", 100) == []  # they stopped before any timeout
    _, found = _run([_gen(382, 105, members=())], analyzer=analyzer)
    [f] = found
    assert f.detail.startswith("3 members joined at ")
    assert "over 65 seconds" in f.detail and f.evidence["joined_count"] == 3


def test_a_look_without_members_or_saying_stable_starts_the_count_again_after_empty() -> None:
    analyzer = _emptied()
    assert _look(analyzer, "PreparingRebalance", 40, NEW) == []
    assert _look(analyzer, "Empty", 200) == []
    assert _look(analyzer, "PreparingRebalance", 300, NEW) == []
    assert _look(analyzer, "PreparingRebalance", 590, NEW) == []
    assert len(_look(analyzer, "PreparingRebalance", 600, NEW)) == 1


def test_a_completed_generation_after_empty_ends_the_watch_of_the_empty_one() -> None:
    analyzer = _emptied()
    assert _look(analyzer, "CompletingRebalance", 40, NEW) == []
    _, found = _run([_gen(5, 50, ("N-1", "N-2", "N-3")), *_commits(52, 60)], analyzer=analyzer)
    assert found == []
    # Now judged as any group with members: the commits of generation 5 are recent.
    assert _look(analyzer, "PreparingRebalance", 100, NEW) == []
    assert _look(analyzer, "PreparingRebalance", 130, NEW) == []


def test_the_after_empty_watch_survives_the_state_round_trip() -> None:
    analyzer = _emptied()
    assert _look(analyzer, "CompletingRebalance", 40, NEW) == []
    state = analyzer.states[GROUP]
    back = GroupState.loads(state.dumps())
    assert back.stuck == state.stuck and back.stuck.emptied_generation == 4
    again = Analyzer(CONFIG, {GROUP: back})
    assert len(_look(again, "CompletingRebalance", 340, NEW)) == 1
