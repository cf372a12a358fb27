"""The lag poll of a continuous run: a daemon thread in the driver, beside the batches.

Polls are made on the brokers' clock, not the stream's: Spark's Kafka source runs no
micro-batch while ``__consumer_offsets`` receives nothing, and a poll made only after a batch
would stop exactly when the commits stop (a consumer that stopped on a quiet cluster would
never be judged ``stopped``).  And a poll judged inside a batch holds the stream up for as long
as it takes (3-6 s at 1.2 M committed partitions, bench/HISTORY.md, "A poll judged as
columns").  So every second this thread looks whether a poll is due and the stream lets it
judge (``known``: not while
a backlog is read), judges without the batches' lock, and takes the lock only to write: the
batches and the poll write ``findings``, and the lag tables have one writer at a time.  A
failed poll is logged and the next one tried: the thread never ends the job, and never fails
silently.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger("groupwatch.job")

#: How often the thread looks whether a poll is due.
CHECK_SECONDS = 1.0

J = TypeVar("J")


class LagThread(Generic[J]):
    """Judges with ``judge(known_ms)`` when ``known(batch_running, waited)`` allows it (a
    batch runs while ``lock`` is held), then writes the result with ``write`` holding
    ``lock``; ``stop`` ends it."""

    def __init__(
        self,
        lock: threading.Lock,
        known: Callable[[bool, float], tuple[bool, int | None]],
        judge: Callable[[int | None], J | None],
        write: Callable[[J], object],
        every: float = CHECK_SECONDS,
    ) -> None:
        self._lock = lock
        self._known = known
        self._judge = judge
        self._write = write
        self._every = every
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groupwatch-lag", daemon=True)
        #: Polls written by this thread (the tests and the log read it).
        self.polls = 0

    def start(self) -> LagThread[J]:
        self._started = time.monotonic()
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def stop(self, timeout: float = 60.0) -> None:
        """Ends the thread; a poll under way finishes first (its writes are not cut)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.check()

    def check(self) -> bool:
        """One look: judges and writes a poll if the stream allows one and it is due;
        whether it wrote one."""
        try:
            allowed, known_ms = self._known(self._lock.locked(), time.monotonic() - self._started)
            if not allowed:
                return False
            judged = self._judge(known_ms)
            if judged is None:
                return False
            # The batch under way (if any) writes findings too: the poll's writes wait for it.
            with self._lock:
                self._write(judged)
            self.polls += 1
            return True
        except Exception:
            log.exception("lag: a poll failed; the next one is tried")
            return False
