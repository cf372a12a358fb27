"""Findings are a pure function of the record sequence, whatever the batching, and the
per-group state is a bounded JSON value."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.detect import (
    Analyzer,
    DetectorConfig,
    GroupState,
    analyze_lines,
    event_from_decoded,
    step,
)
from groupwatch_dev.scenarios.builder import decoded_lines, load, scenario_files
from tests.scenarios.healthy import healthy_scenario

CONFIG = DetectorConfig(partitions_per_topic={"t": 6, "t0": 6, "t1": 3})


def _interleaved() -> list[dict[str, Any]]:
    """Every incident scenario plus two healthy groups, records interleaved by group."""
    streams = [decoded_lines(load(p)) for p in scenario_files()]
    streams.append(decoded_lines(healthy_scenario("cooperative-sticky", 3, 3)))
    streams.append(decoded_lines(healthy_scenario("sticky", 2, 4)))
    out: list[dict[str, Any]] = []
    while any(streams):
        for s in streams:
            if s:
                out.append(s.pop(0))
    return out


LINES = _interleaved()
ONE_PASS = [f.to_dict() for f in analyze_lines(LINES, CONFIG)]


def test_the_input_is_interesting() -> None:
    assert len(LINES) > 80
    assert {f["severity"] for f in ONE_PASS} == {"critical", "warning", "error", "info"}


@settings(max_examples=40)
@given(st.lists(st.integers(min_value=0, max_value=len(LINES)), max_size=12))
def test_same_findings_whatever_the_batching(cuts: list[int]) -> None:
    """Each batch starts from the states the previous one left, stored as JSON strings."""
    bounds = [0, *sorted(cuts), len(LINES)]
    stored: dict[str, str] = {}
    found: list[dict[str, Any]] = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        analyzer = Analyzer(CONFIG, {g: GroupState.loads(s) for g, s in stored.items()})
        for line in LINES[lo:hi]:
            found.extend(f.to_dict() for f in analyzer.feed(line))
        stored = {g: s.dumps() for g, s in analyzer.states.items()}
    assert found == ONE_PASS


def test_same_input_same_findings() -> None:
    assert [f.to_dict() for f in analyze_lines(LINES, CONFIG)] == ONE_PASS


def test_replaying_a_record_raises_nothing_new() -> None:
    """At-least-once delivery: a record seen twice gives its findings once."""
    doubled = [line for line in LINES for _ in range(2)]
    assert [f.to_dict() for f in analyze_lines(doubled, CONFIG)] == ONE_PASS


def test_state_round_trips_through_json() -> None:
    analyzer = Analyzer(CONFIG)
    for line in LINES:
        analyzer.feed(line)
    for state in analyzer.states.values():
        text = state.dumps()
        assert GroupState.loads(text) == state
        assert json.loads(text)["group"] == state.group


def test_state_stays_bounded() -> None:
    config = DetectorConfig(storm_generations=3, max_remembered_findings=5)
    state = None
    scenario = load(next(p for p in scenario_files() if p.stem == "kafka_15106"))
    for line in decoded_lines(scenario):
        event = event_from_decoded(line)
        assert event is not None
        state, _ = step(state, event, config)
    assert state is not None
    assert len(state.recent) <= 4 and len(state.emitted) <= 5


def test_a_state_refuses_another_groups_event() -> None:
    line = LINES[0]
    event = event_from_decoded(line)
    assert event is not None
    state, _ = step(None, event)
    other = event_from_decoded({**line, "group": "someone-else"})
    assert other is not None
    try:
        step(state, other)
    except ValueError:
        return
    raise AssertionError("expected a ValueError")
