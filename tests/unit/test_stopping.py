"""SIGTERM takes Ctrl-C's path inside ``sigterm_as_interrupt`` and nowhere else."""

from __future__ import annotations

import os
import signal

import pytest

from groupwatch.stopping import sigterm_as_interrupt


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
