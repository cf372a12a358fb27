"""While Spark waits for Kafka, one warning per interval (not one per poll), and one line when
Kafka answers again."""

from __future__ import annotations

import logging

import pytest

from groupwatch.job.source_wait import SourceWait, waiting_for_source


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_status_of_a_trigger_asking_for_offsets() -> None:
    asking = {"message": "Getting offsets from KafkaV2[Subscribe[m]]", "isTriggerActive": True}
    assert waiting_for_source(asking)
    assert not waiting_for_source({**asking, "isTriggerActive": False})
    assert not waiting_for_source({"message": "Processing new data", "isTriggerActive": True})
    assert not waiting_for_source({"message": "Waiting for next trigger", "isTriggerActive": False})


def test_one_warning_per_interval_then_one_line_on_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    log = logging.getLogger("test.source_wait")
    wait = SourceWait("b:9092", 30, log, clock)
    with caplog.at_level(logging.INFO, logger="test.source_wait"):
        for second in range(0, 95):  # polled once a second for 95 s
            clock.now = float(second)
            wait.observe(True)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert [round(float(r.args[1])) for r in warnings] == [30, 60, 90]  # type: ignore[index]
        assert all("source.bootstrap_servers" in r.getMessage() for r in warnings)
        clock.now = 95.0
        wait.observe(False)
    assert caplog.records[-1].getMessage() == "Kafka at b:9092 answers again after 95 s"


def test_short_waits_say_nothing(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    wait = SourceWait("b:9092", 30, logging.getLogger("test.source_wait"), clock)
    with caplog.at_level(logging.INFO, logger="test.source_wait"):
        for round_ in range(10):  # a few seconds of offset fetching each trigger
            for second in range(5):
                clock.now = round_ * 10.0 + second
                wait.observe(True)
            clock.now += 1
            wait.observe(False)
    assert caplog.records == []
