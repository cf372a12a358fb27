"""One log line per micro-batch: what the batch did and where the source stands.

The batch function knows what it read and wrote; how far the query is behind the source's end
is known only from the query's progress, which Spark reports after the batch. The line is
therefore written when both halves are in, or, for a batch whose progress never arrives (the
last one of ``--once``), by :meth:`BatchLog.flush`.
"""

from __future__ import annotations

import logging
import threading


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class BatchLog:
    """Joins each batch's summary with its progress; tracks backlog catch-up."""

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._lock = threading.Lock()
        self._pending: dict[int, str] = {}
        #: Records read since the query was last caught up (the backlog being worked off).
        self._done = 0

    def batch_done(self, batch_id: int, summary: str) -> None:
        with self._lock:
            self._pending[batch_id] = summary

    def progress(
        self, batch_id: int, rows: int, lag: float | None, rows_per_second: float
    ) -> str | None:
        """The query reported ``batch_id``: ``rows`` read, ``lag`` records left at the source."""
        with self._lock:
            summary = self._pending.pop(batch_id, None)
            where = self._where(rows, lag, rows_per_second)
        if summary is None:
            return None  # an empty batch: the job logged nothing for it
        line = f"batch {batch_id}: {summary}; {where}"
        self._log.info("%s", line)
        return line

    def flush(self) -> None:
        """Log the batches whose progress did not arrive (the query stopped)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for batch_id, summary in sorted(pending.items()):
            self._log.info("batch %d: %s", batch_id, summary)

    def _where(self, rows: int, lag: float | None, rows_per_second: float) -> str:
        if lag is None:
            return "lag unknown"
        if lag <= 0:
            self._done = 0
            return "caught up"
        self._done += rows
        done = self._done / (self._done + lag)
        text = f"lag {lag:,.0f} records, backlog {done:.0%} done"
        if rows_per_second > 0:
            text += f", about {_duration(lag / rows_per_second)} left"
        return text
