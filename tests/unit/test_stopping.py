"""SIGTERM takes Ctrl-C's path in ``sigterm_as_interrupt``; ``stop_requests`` makes both a flag."""

from __future__ import annotations

import os
import signal

import pytest

from groupwatch.stopping import sigterm_as_interrupt, stop_requests


def test_sigterm_raises_keyboard_interrupt_inside_and_the_old_handler_returns() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
            os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_stop_requests_sets_a_flag_for_sigterm_and_ctrl_c_and_raises_nothing() -> None:
    seen: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, frame: seen.append(signum))
        for sig in (signal.SIGTERM, signal.SIGINT)
    }
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with stop_requests() as stop:
                assert not stop.is_set()
                os.kill(os.getpid(), sig)  # the handler runs before kill returns
                assert stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        assert seen == [signal.SIGTERM, signal.SIGINT]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
