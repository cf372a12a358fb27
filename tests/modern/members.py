"""A driver for ``groupwatch.modern.ModernMembers`` (jvm/kafka): one JVM hosting every member of
the modern-group scenarios, Kafka's own Java client on the ``consumer`` protocol (and on the
classic one, for a group about to be upgraded).

The host's plumbing (commands on its standard input, a reader thread keeping what each member
last reported: the partitions it owns and its member ids) is ``groupwatch_dev.member_host``'s;
this side adds the host's ``join`` and a wait for a steady, complete assignment.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from groupwatch import paths
from groupwatch_dev.member_host import MemberHost, MemberHostError

MAIN_CLASS = "groupwatch.modern.ModernMembers"


def missing_harness() -> str | None:
    """Why the host cannot start (the harness jar predates the class), or None."""
    jar = paths.jars_dir("kafka") / "groupwatch-oracle.jar"
    entry = MAIN_CLASS.replace(".", "/") + ".class"
    try:
        with zipfile.ZipFile(jar) as z:
            z.getinfo(entry)
    except (OSError, KeyError, zipfile.BadZipFile):
        return f"{jar} has no {entry}: run scripts/setup (it rebuilds the harness)"
    return None


class ModernMembers(MemberHost):
    """``with ModernMembers(bootstrap, log) as host: host.join(...)``; thread-safe."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        super().__init__(MAIN_CLASS, bootstrap, log)

    def join(
        self,
        name: str,
        group: str,
        *,
        topics: Sequence[str] = (),
        pattern: str | None = None,
        regex: str | None = None,
        protocol: str = "consumer",
        assignor: str | None = None,
        instance: str | None = None,
        max_poll_ms: int | None = None,
    ) -> None:
        """Start member ``name``: ``topics``, a client-side ``pattern`` or a broker-side
        ``regex`` (RE2J) subscription; ``assignor`` is the broker's under ``consumer``."""
        if pattern is not None:
            subscription = f"pattern={pattern}"
        elif regex is not None:
            subscription = f"regex={regex}"
        else:
            subscription = "topics=" + ",".join(topics)
        words = [f"protocol={protocol}"]
        if assignor:
            words.append(f"assignor={assignor}")
        if instance:
            words.append(f"instance={instance}")
        if max_poll_ms is not None:
            words.append(f"maxpoll={max_poll_ms}")
        self._send(f"join {name} {group} {subscription} {' '.join(words)}")

    def wait_covered(
        self, names: Sequence[str], partitions: int, timeout: float = 90.0, steady: float = 1.0
    ) -> float:
        """Until the members ``names`` together own ``partitions`` distinct partitions, each
        exactly once, every member some, unchanged for ``steady`` seconds; returns the time."""
        start = time.monotonic()
        deadline = start + timeout
        since: float | None = None
        last: dict[str, frozenset[str]] = {}
        with self._cond:
            while True:
                now = {n: self._owned.get(n, frozenset()) for n in names}
                flat = [p for o in now.values() for p in o]
                covered = len(flat) == partitions == len(set(flat)) and all(now.values())
                if covered and now == last:
                    since = since if since is not None else time.monotonic()
                    if time.monotonic() - since >= steady:
                        return time.monotonic() - start
                else:
                    since = None
                last = now
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise MemberHostError(
                        f"{list(names)} did not cover {partitions} partitions in {timeout:.0f}s: "
                        f"{ {n: sorted(o) for n, o in now.items()} } errors={self._errors} "
                        f"(host log {self.log})"
                    )
                self._cond.wait(0.2)
