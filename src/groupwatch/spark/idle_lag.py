"""The lag poll while the query is idle: a daemon thread in the driver.

Spark's Kafka source runs no micro-batch while ``__consumer_offsets`` receives nothing, and a
poll made only after a batch would stop exactly when the commits stop: a consumer that
stopped on a quiet cluster would never be judged ``stopped``.  So every second this thread
looks whether a poll is due and no batch is running (the batch holds ``lock`` for its whole
run, its own poll and its writes to ``findings`` included), and polls then, on the clock of
the brokers' answers.  A failed poll is logged and the next one tried: the thread never
ends the job, and never fails silently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger("groupwatch.job")

#: How often the thread looks whether a poll is due.
CHECK_SECONDS = 1.0


class IdleLag:
    """Calls ``poll`` when ``due()`` says so and ``lock`` is free; ``stop`` ends it."""

    def __init__(
        self,
        lock: threading.Lock,
        due: Callable[[], bool],
        poll: Callable[[], object],
        every: float = CHECK_SECONDS,
    ) -> None:
        self._lock = lock
        self._due = due
        self._poll = poll
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="groupwatch-idle-lag", daemon=True)
        #: Polls made by this thread (the tests and the log read it).
        self.polls = 0

    def start(self) -> IdleLag:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ends the thread; a poll under way finishes first (its writes are not cut)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.check()

    def check(self) -> bool:
        """One look: polls if due and no batch runs; whether it polled."""
        try:
            if not self._due():
                return False
            # A batch under way polls itself when it ends: never wait for it here.
            if not self._lock.acquire(blocking=False):
                return False
            try:
                if self._stop.is_set():
                    return False
                self._poll()
                self.polls += 1
                return True
            finally:
                self._lock.release()
        except Exception:
            log.exception("lag: the poll while the query is idle failed; the next one is tried")
            return False
