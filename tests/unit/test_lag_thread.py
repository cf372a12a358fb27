"""The lag poll's thread (groupwatch.spark.lag_thread): it judges beside a batch, writes only
holding the batches' lock, polls only when the stream allows, and survives its errors; and
what the poller lets it do (``LagPoller.known``)."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from groupwatch import config as config_mod
from groupwatch.spark.lag_thread import LagThread


def _always(batch_running: bool, waited: float) -> tuple[bool, int | None]:
    return True, None


def test_it_judges_without_the_lock_and_writes_holding_it() -> None:
    lock = threading.Lock()
    seen: list[tuple[str, bool]] = []

    def judge(known: int | None) -> str:
        seen.append(("judge", lock.locked()))
        return "judged"

    def write(judged: str) -> None:
        seen.append((judged, lock.locked()))

    thread = LagThread(lock, _always, judge, write)
    assert thread.check()
    assert seen == [("judge", False), ("judged", True)]
    assert not lock.locked() and thread.polls == 1


def test_a_batch_under_way_does_not_stop_the_judging_its_writes_wait_for_it() -> None:
    lock = threading.Lock()
    written = threading.Event()
    judged_while: list[bool] = []
    known_args: list[bool] = []

    def known(batch_running: bool, waited: float) -> tuple[bool, int | None]:
        known_args.append(batch_running)
        return True, 42

    def judge(known_ms: int | None) -> int | None:
        judged_while.append(lock.locked())
        return known_ms

    thread = LagThread(lock, known, judge, lambda j: written.set())
    lock.acquire()  # a batch runs
    looking = threading.Thread(target=thread.check)
    looking.start()
    deadline = time.monotonic() + 5
    while not judged_while:
        assert time.monotonic() < deadline, "the poll did not judge while a batch ran"
        time.sleep(0.01)
    time.sleep(0.1)
    assert not written.is_set()  # the write waits for the batch
    lock.release()
    looking.join(5)
    assert written.is_set() and judged_while == [True] and known_args == [True]


def test_it_does_not_poll_when_the_stream_does_not_allow_it_or_none_is_due() -> None:
    lock = threading.Lock()
    calls: list[object] = []
    no = LagThread(lock, lambda b, w: (False, None), lambda k: calls.append(k), calls.append)
    assert not no.check()
    not_due = LagThread(lock, _always, lambda k: None, calls.append)
    assert not not_due.check()
    assert calls == [] and no.polls == not_due.polls == 0


def test_a_failed_poll_is_logged_and_the_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    lock = threading.Lock()
    calls: list[int] = []

    def judge(known: int | None) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("brokers gone")
        return 1

    thread = LagThread(lock, _always, judge, lambda j: None, every=0.01)
    with caplog.at_level(logging.ERROR, logger="groupwatch.job"):
        thread.start()
        deadline = time.monotonic() + 10
        while thread.polls < 2:
            assert time.monotonic() < deadline, "the thread stopped polling after an error"
            time.sleep(0.01)
        thread.stop()
    assert "brokers gone" in caplog.text
    assert not lock.locked() and not thread.running
    stopped_at = len(calls)
    time.sleep(0.05)
    assert len(calls) == stopped_at  # stop ended it


def test_the_poller_lets_a_poll_judge_only_where_the_commits_are_known(tmp_path: Path) -> None:
    from groupwatch.spark.lag_poller import LagPoller

    cfg = config_mod.load(None, env={}, overrides=[f"delta.root={tmp_path}", "lag.poll_seconds=15"])
    poller = LagPoller(None, cfg)  # type: ignore[arg-type]  # no poll is made
    # Before any batch ended: a batch under way may read a backlog; with none, the source had
    # nothing new, and after lag.poll_seconds the table is judged as it is.
    assert poller.known(True, 100.0) == (False, None)
    assert poller.known(False, 3.0) == (False, None)
    assert poller.known(False, 15.0) == (True, None)
    # A batch read everything up to 1000: between batches up to now, during one up to 1000.
    poller.batch_ended(1000)
    assert poller.known(False, 0.0) == (True, None)
    assert poller.known(True, 0.0) == (True, 1000)
    # A backlog: no poll, with a batch under way or not.
    poller.batch_ended(None)
    assert poller.known(False, 100.0) == (False, None)
    assert poller.known(True, 100.0) == (False, None)
