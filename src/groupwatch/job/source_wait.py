"""One warning per interval while Spark waits for Kafka, and one line when Kafka answers again.

When a broker goes away under a running query, Spark's Kafka source neither fails nor logs
anything of its own: the trigger stays in "Getting offsets from ..." until the broker is back,
while the Kafka client (quiet by default, see ``groupwatch.spark.preflight``) would log a
reconnect attempt several times a second.  The runner polls the query's status once a second
and feeds it here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

#: The query's status message while the source asks Kafka for the latest offsets.
WAITING_PREFIX = "Getting offsets from"


def waiting_for_source(status: Mapping[str, Any]) -> bool:
    """Whether a query status (``StreamingQuery.status``) shows a trigger waiting for Kafka."""
    message = str(status.get("message", ""))
    return bool(status.get("isTriggerActive")) and message.startswith(WAITING_PREFIX)


class SourceWait:
    """Turns a stream of "waiting / not waiting" observations into rate-limited log lines."""

    def __init__(
        self,
        bootstrap: str,
        every_seconds: float,
        log: logging.Logger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bootstrap = bootstrap
        self.every = max(1.0, every_seconds)
        self.log = log
        self.clock = clock
        self._since: float | None = None
        self._last_warning: float | None = None

    def observe(self, waiting: bool) -> None:
        now = self.clock()
        if not waiting:
            if self._last_warning is not None and self._since is not None:
                self.log.info(
                    "Kafka at %s answers again after %.0f s", self.bootstrap, now - self._since
                )
            self._since = self._last_warning = None
            return
        if self._since is None:
            self._since = now
            return
        waited = now - self._since
        due = self._last_warning is None or now - self._last_warning >= self.every
        if waited >= self.every and due:
            self.log.warning(
                "source.bootstrap_servers: no answer from Kafka at %s for %.0f s; the job "
                "waits and resumes when it answers",
                self.bootstrap,
                waited,
            )
            self._last_warning = now
