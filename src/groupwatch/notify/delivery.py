"""Webhook delivery in the background: bounded queue, bounded timeouts, bounded retries.

``submit`` never blocks and never raises: a receiver that hangs costs one worker thread at most
``timeout * (retries + 1) + backoff`` per payload, and a full queue drops the oldest payload
with a log line instead of growing.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from groupwatch.notify.routing import Webhook

log = logging.getLogger(__name__)
_STOP = object()


class WebhookSender:
    """One background worker per webhook URL."""

    def __init__(self, hook: Webhook, queue_size: int = 1000) -> None:
        self.hook = hook
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, queue_size))
        self._thread = threading.Thread(target=self._work, name=f"notify {hook.url}", daemon=True)
        self._thread.start()

    def submit(self, payload: dict[str, Any]) -> None:
        while True:
            try:
                self._queue.put_nowait(payload)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                    log.warning(
                        "webhook %s is behind: dropped the oldest alert payload", self.hook.url
                    )
                except queue.Empty:
                    pass

    def close(self, timeout: float = 10.0) -> bool:
        """Deliver what is queued within ``timeout`` seconds; True when all went out."""
        try:
            self._queue.put(_STOP, timeout=max(0.0, timeout))
        except queue.Full:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            assert isinstance(item, dict)
            self._deliver(item)

    def _deliver(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        for attempt in range(self.hook.retries + 1):
            req = urllib.request.Request(
                self.hook.url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "User-Agent": "groupwatch-notifier"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.hook.timeout_seconds) as resp:
                    resp.read(65536)
                self.sent += 1
                return
            except urllib.error.HTTPError as exc:
                reason = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # the receiver rejects this payload: retrying will not help
            except (OSError, ValueError) as exc:
                reason = f"{type(exc).__name__}: {exc}"
            log.warning(
                "webhook %s attempt %d/%d failed: %s",
                self.hook.url,
                attempt + 1,
                self.hook.retries + 1,
                reason,
            )
            if attempt < self.hook.retries:
                time.sleep(self.hook.backoff_seconds * (2**attempt))
        self.failed += 1
        log.error("webhook %s: gave up on an alert payload (%s)", self.hook.url, reason)
