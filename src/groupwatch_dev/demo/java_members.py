"""Consumer-group members run by Kafka's own Java client (any assignor, cooperative included).

A thin driver around ``groupwatch.demo.GroupMembers`` (jvm/kafka): one JVM hosts any number of
members; this side sends commands and tracks what each member reports it owns.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType

from groupwatch import paths
from groupwatch.errors import GroupwatchError

Assignments = dict[str, frozenset[str]]


class GroupMembersError(GroupwatchError, RuntimeError):
    """The member host failed or a member did not reach the expected state in time."""


class JavaGroupMembers:
    """Start with ``with JavaGroupMembers(bootstrap) as members: members.join(...)``."""

    def __init__(self, bootstrap: str) -> None:
        java = shutil.which("java")
        if java is None:
            raise GroupMembersError("java is not on PATH; run scripts/setup")
        classpath = f"{paths.jars_dir('kafka')}/*"
        self._proc = subprocess.Popen(
            [java, "-Xmx512m", "-cp", classpath, "groupwatch.demo.GroupMembers", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._owned: dict[str, frozenset[str]] = {}
        self._errors: list[str] = []
        self._acks = 0
        self._cond = threading.Condition()
        # Callers in several threads (one per group) must not interleave their command lines.
        self._write = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- commands ------------------------------------------------------------------------------
    def join(
        self,
        name: str,
        group: str,
        topics: Iterable[str],
        assignor: str,
        *,
        instance_id: str | None = None,
        protocol: str = "classic",
    ) -> None:
        """Start member ``name`` in ``group`` with Kafka's assignor of that protocol name.

        ``protocol="consumer"`` joins with KIP-848's protocol, where ``assignor`` names the
        broker's assignor (``uniform`` or ``range``).
        """
        extra = f" instance={instance_id}" if instance_id else ""
        if protocol != "classic":
            extra += f" protocol={protocol}"
        self._send(f"join {name} {group} {','.join(topics)} {assignor}{extra}")

    def leave(self, name: str) -> None:
        """Close the member cleanly (it sends LeaveGroup)."""
        self._send(f"leave {name}")
        with self._cond:
            self._owned.pop(name, None)

    def stall(self, name: str, millis: int) -> None:
        """Stop polling for ``millis``: past max.poll.interval.ms the member is kicked out."""
        self._send(f"stall {name} {millis}")

    def assignments(self) -> Assignments:
        with self._cond:
            return dict(self._owned)

    def errors(self) -> list[str]:
        """The ``error ...`` lines the host printed so far."""
        with self._cond:
            return list(self._errors)

    def wait_for(
        self, predicate: Callable[[Assignments], bool], timeout: float = 60.0, what: str = ""
    ) -> Assignments:
        """Block until the members' reported assignments satisfy ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(dict(self._owned)):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._proc.poll() is not None:
                    raise GroupMembersError(
                        f"timed out waiting for {what or 'assignments'}: {self._owned} "
                        f"errors={self._errors}"
                    )
                self._cond.wait(min(remaining, 0.5))
            return dict(self._owned)

    def wait_covered(
        self, members: Iterable[str], partitions: int, timeout: float = 60.0
    ) -> Assignments:
        """Until ``members`` together own ``partitions`` distinct partitions, each exactly once."""
        names = list(members)

        def covered(owned: Assignments) -> bool:
            parts = [p for n in names for p in owned.get(n, frozenset())]
            return len(parts) == partitions == len(set(parts)) and all(
                owned.get(n) for n in names[:partitions]
            )

        return self.wait_for(covered, timeout, f"{names} to cover {partitions} partitions")

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._send("quit", wait=False)
                self._proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        self._reader.join(timeout=5)

    def __enter__(self) -> JavaGroupMembers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- plumbing ------------------------------------------------------------------------------
    def _send(self, line: str, *, wait: bool = True) -> None:
        assert self._proc.stdin is not None
        with self._write:
            with self._cond:
                target = self._acks + 1
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        if not wait:
            return
        deadline = time.monotonic() + 60
        with self._cond:
            while self._acks < target:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise GroupMembersError(f"no answer to {line!r}; errors={self._errors}")
                self._cond.wait(0.5)

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            words = raw.rstrip("\n").split(" ", 2)
            with self._cond:
                if words[0] == "assigned":
                    parts = words[2].split(",") if len(words) > 2 and words[2] else []
                    self._owned[words[1]] = frozenset(parts)
                elif words[0] == "ok":
                    self._acks += 1
                elif words[0] == "error":
                    self._errors.append(raw.strip())
                self._cond.notify_all()
