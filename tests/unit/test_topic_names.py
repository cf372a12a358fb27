"""The driver's topic-name map: asked at the first batch, then at most once per interval; a
failure to ask is said once and never stops the job."""

from __future__ import annotations

import logging

import pytest

from groupwatch.spark.topic_names import TopicNames, parse_listings


class Brokers:
    """Answers the question with ``names``, or fails while ``down``."""

    def __init__(self) -> None:
        self.names = {"aWQtb2YtYS10b3BpYy0wMA": "orders"}
        self.down = False
        self.asked = 0

    def __call__(self) -> dict[str, str]:
        self.asked += 1
        if self.down:
            raise RuntimeError("Timed out waiting for a node assignment")
        return dict(self.names)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_asked_first_then_at_most_once_per_interval() -> None:
    brokers, clock = Brokers(), Clock()
    names = TopicNames(brokers, 300, clock)
    assert names.current() == {"aWQtb2YtYS10b3BpYy0wMA": "orders"}
    brokers.names["cGF5bWVudHMtdG9waWMtaWQ"] = "payments"
    clock.now += 299
    assert len(names.current()) == 1 and brokers.asked == 1
    clock.now += 1
    assert len(names.current()) == 2 and brokers.asked == 2


def test_zero_never_asks() -> None:
    brokers = Brokers()
    assert TopicNames(brokers, 0, Clock()).current() == {} and brokers.asked == 0


def test_a_failure_is_said_once_and_the_last_answer_stays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    brokers, clock = Brokers(), Clock()
    names = TopicNames(brokers, 10, clock)
    names.current()
    brokers.down = True
    with caplog.at_level(logging.INFO, logger="groupwatch.job"):
        for _ in range(3):
            clock.now += 10
            assert names.current() == {"aWQtb2YtYS10b3BpYy0wMA": "orders"}
        brokers.down = False
        clock.now += 10
        names.current()
    assert brokers.asked == 5
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "topic_names_refresh_seconds" in warnings[0].getMessage()
    assert any("named 1 topics again" in r.getMessage() for r in caplog.records)


def test_listings_text_parses() -> None:
    text = (
        "[(name=orders, topicId=aWQtb2YtYS10b3BpYy0wMA, internal=false), "
        "(name=__consumer_offsets, topicId=Q29uc3VtZXJPZmZzZXRzMA, internal=true)]"
    )
    assert parse_listings(text) == {
        "aWQtb2YtYS10b3BpYy0wMA": "orders",
        "Q29uc3VtZXJPZmZzZXRzMA": "__consumer_offsets",
    }
