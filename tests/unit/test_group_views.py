"""The driver's looks at rebalancing groups: at most once per interval, a group found
rebalancing described again at the next look (so its settling is seen), a failure said once."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import pytest

from groupwatch.spark.group_views import GroupViews

Answer = dict[str, tuple[str, tuple[str, ...]]]


class Brokers:
    """Report ``rebalancing`` groups, and any group asked about in ``states``."""

    def __init__(self) -> None:
        self.rebalancing: Answer = {"g": ("PreparingRebalance", ("A-1 (a)",))}
        self.states: Answer = {}
        self.down = False
        self.also: list[list[str]] = []

    def __call__(self, also: Iterable[str]) -> Answer:
        asked = list(also)
        self.also.append(asked)
        if self.down:
            raise RuntimeError("Timed out waiting for a node assignment")
        out = dict(self.rebalancing)
        out.update({g: self.states.get(g, ("Stable", ())) for g in asked if g not in out})
        return out


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_look_at_most_once_per_interval_and_settled_groups_seen() -> None:
    brokers, clock = Brokers(), Clock()
    views = GroupViews(brokers, 30, clock, wall_ms=lambda: 5_000)
    first = views.look()
    assert {g: (v.state, v.members, v.time_ms) for g, v in first.items()} == {
        "g": ("PreparingRebalance", ("A-1 (a)",), 5_000)
    }
    clock.now += 29
    assert views.look() == {} and len(brokers.also) == 1
    brokers.rebalancing = {}
    clock.now += 1
    # The group found rebalancing last time is described again: it has settled.
    assert {g: v.state for g, v in views.look().items()} == {"g": "Stable"}
    assert brokers.also[-1] == ["g"]
    clock.now += 30
    assert views.look() == {} and brokers.also[-1] == []


def test_zero_never_asks() -> None:
    brokers = Brokers()
    assert GroupViews(brokers, 0, Clock()).look() == {} and brokers.also == []


def test_a_failure_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    brokers, clock = Brokers(), Clock()
    views = GroupViews(brokers, 10, clock)
    brokers.down = True
    with caplog.at_level(logging.WARNING, logger="groupwatch.job"):
        for _ in range(3):
            assert views.look() == {}
            clock.now += 10
    brokers.down = False
    assert set(views.look()) == {"g"}
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "stuck_check_seconds" in warnings[0].getMessage()
