"""Stopping long-running commands the same way whatever asks them to stop."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside, SIGTERM (a service manager's stop, a container's, `kill`) raises
    KeyboardInterrupt, so it takes the same clean path as Ctrl-C."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stop_requests() -> Iterator[threading.Event]:
    """Inside, SIGTERM and Ctrl-C only set the returned event; the caller stops when it next
    looks.

    For code blocked in a call to the JVM: an exception raised out of a Py4J socket read
    makes Py4J shut that connection and its pooled siblings down on both sides, and the next
    call (the query's ``stop()``) can then find the gateway refusing it. A flag leaves the
    read alone: the interrupted system call is simply resumed. Outside, the previous
    handlers are back, so a second signal during the stop acts as it normally would.
    """
    requested = threading.Event()

    def _request(signum: int, frame: FrameType | None) -> None:
        requested.set()

    previous = {sig: signal.signal(sig, _request) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
