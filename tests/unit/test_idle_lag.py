"""The idle lag poll's thread (groupwatch.spark.idle_lag): when it polls, and its errors."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from groupwatch.spark.idle_lag import IdleLag


def test_it_polls_when_due_and_no_batch_holds_the_lock() -> None:
    lock = threading.Lock()
    calls: list[bool] = []
    idle = IdleLag(lock, lambda: True, lambda: calls.append(lock.locked()))
    assert idle.check()
    assert calls == [True]  # the poll ran holding the lock
    assert not lock.locked()


def test_it_does_not_poll_while_a_batch_runs_or_before_due() -> None:
    lock = threading.Lock()
    calls: list[int] = []
    with lock:
        assert not IdleLag(lock, lambda: True, lambda: calls.append(1)).check()
    assert not IdleLag(lock, lambda: False, lambda: calls.append(1)).check()
    assert calls == []


def test_a_failed_poll_is_logged_and_the_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    lock = threading.Lock()
    calls: list[int] = []

    def poll() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("brokers gone")

    idle = IdleLag(lock, lambda: True, poll, every=0.01)
    with caplog.at_level(logging.ERROR, logger="groupwatch.job"):
        idle.start()
        deadline = time.monotonic() + 10
        while idle.polls < 2:
            assert time.monotonic() < deadline, "the thread stopped polling after an error"
            time.sleep(0.01)
        idle.stop()
    assert "brokers gone" in caplog.text
    assert not lock.locked()
    stopped_at = len(calls)
    time.sleep(0.05)
    assert len(calls) == stopped_at  # stop ended it
