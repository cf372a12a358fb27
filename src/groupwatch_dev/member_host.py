"""A driver of a member host of jvm/kafka (``groupwatch.members.MemberHost``): one JVM running
any number of group members of Kafka's own Java client.

Commands go down the host's standard input one line at a time, each answered by ``ok COMMAND``;
a reader thread keeps what the members report: the partitions each owns, its member ids, and
the host's ``error`` and ``note`` lines.  The hosts differ only in their ``join`` command, which
their own drivers (``groupwatch_dev.demo.java_members``, the modern-group tests) build.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from groupwatch import paths
from groupwatch.errors import GroupwatchError
from groupwatch_dev import SHORT_LIVED_JVM

Assignments = dict[str, frozenset[str]]


class MemberHostError(GroupwatchError, RuntimeError):
    """The member host failed, or the members did not reach a state in time."""


class MemberHost:
    """Runs ``main_class`` on the harness classpath; ``close`` (or leaving a ``with`` block)
    closes every member still running and ends the host.  Thread-safe.

    ``log`` receives the JVM's standard error (discarded when None); ``classpath`` is the harness
    classpath of jvm/kafka unless given (another release's host brings its own), and
    ``jvm_options`` go before the main class."""

    def __init__(
        self,
        main_class: str,
        bootstrap: str,
        log: Path | None = None,
        *,
        classpath: str | None = None,
        jvm_options: Sequence[str] = (),
    ) -> None:
        java = shutil.which("java")
        if java is None:
            raise MemberHostError("java is not on PATH; run scripts/setup")
        self.log = log
        self._stderr: IO[str] | None = open(log, "w") if log else None  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [
                java,
                "-Xmx512m",
                *SHORT_LIVED_JVM,
                *jvm_options,
                "-cp",
                classpath or f"{paths.jars_dir('kafka')}/*",
                main_class,
                bootstrap,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr or subprocess.DEVNULL,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C is not the host's; close() ends it
        )
        self._owned: Assignments = {}
        self._ids: dict[str, list[str]] = {}
        self._errors: list[str] = []
        self._notes: list[str] = []
        self._lines: list[tuple[float, str]] = []
        self._acks = 0
        self._cond = threading.Condition()
        # Callers in several threads (one per group) must not interleave their command lines.
        self._write = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- commands --------------------------------------------------------------------------------
    def leave(self, name: str) -> None:
        """Close the member: a dynamic one leaves the group, a static one leaves as static."""
        self._send(f"leave {name}")
        with self._cond:
            self._owned.pop(name, None)

    def stall(self, name: str, millis: int) -> None:
        """Stop polling for ``millis``: past max.poll.interval.ms the member is out of the group."""
        self._send(f"stall {name} {millis}")

    # -- what the members said -------------------------------------------------------------------
    def assignments(self) -> Assignments:
        with self._cond:
            return dict(self._owned)

    def owned(self, name: str) -> frozenset[str]:
        with self._cond:
            return self._owned.get(name, frozenset())

    def member_ids(self, name: str) -> list[str]:
        """Every member id ``name`` reported, in order (a rejoin may bring a new one)."""
        with self._cond:
            return list(self._ids.get(name, []))

    def errors(self) -> list[str]:
        """The ``error ...`` lines the host printed so far."""
        with self._cond:
            return list(self._errors)

    def notes(self) -> list[str]:
        """The ``note ...`` lines (refused commits) the host printed so far."""
        with self._cond:
            return list(self._notes)

    def transcript(self) -> list[tuple[float, str]]:
        """Every line the host printed so far, with the wall-clock time it was read."""
        with self._cond:
            return list(self._lines)

    def wait_for(
        self, predicate: Callable[[Assignments], bool], timeout: float = 60.0, what: str = ""
    ) -> Assignments:
        """Block until the members' reported assignments satisfy ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(dict(self._owned)):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._proc.poll() is not None:
                    raise MemberHostError(
                        f"timed out waiting for {what or 'assignments'}: {self._owned} "
                        f"errors={self._errors}{self._see_log()}"
                    )
                self._cond.wait(min(remaining, 0.5))
            return dict(self._owned)

    def wait_transcript(
        self,
        predicate: Callable[[list[tuple[float, str]]], bool],
        timeout: float = 60.0,
        what: str = "",
    ) -> list[tuple[float, str]]:
        """Block until the host's output lines so far (see ``transcript``) satisfy ``predicate``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(list(self._lines)):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._proc.poll() is not None:
                    raise MemberHostError(
                        f"timed out waiting for {what or 'the members'}: {self._owned} "
                        f"errors={self._errors[-5:]}{self._see_log()}"
                    )
                self._cond.wait(min(remaining, 0.5))
            return list(self._lines)

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

    def wait_member_id(self, name: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ids.get(name):
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise MemberHostError(f"{name} reported no member id in {timeout:.0f}s")
                self._cond.wait(0.5)
            return self._ids[name][-1]

    # -- plumbing --------------------------------------------------------------------------------
    def _see_log(self) -> str:
        return f"; see {self.log}" if self.log else ""

    def _send(self, line: str) -> None:
        """Send one command and wait for its ``ok``."""
        assert self._proc.stdin is not None
        with self._write:
            with self._cond:
                target = self._acks + 1
            try:
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
            except OSError as exc:
                raise MemberHostError(f"the member host is gone ({exc}){self._see_log()}") from exc
        deadline = time.monotonic() + 60
        with self._cond:
            while self._acks < target:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise MemberHostError(
                        f"no answer to {line!r}; errors={self._errors}{self._see_log()}"
                    )
                self._cond.wait(0.5)

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            words = raw.rstrip("\n").split(" ", 2)
            with self._cond:
                self._lines.append((time.time(), raw.rstrip("\n")))
                if words[0] == "assigned":
                    parts = words[2].split(",") if len(words) > 2 and words[2] else []
                    self._owned[words[1]] = frozenset(parts)
                elif words[0] == "member" and len(words) == 3:
                    self._ids.setdefault(words[1], []).append(words[2])
                elif words[0] == "ok":
                    self._acks += 1
                elif words[0] == "error":
                    self._errors.append(raw.strip())
                elif words[0] == "note":
                    self._notes.append(raw.strip())
                self._cond.notify_all()

    def close(self) -> None:
        """Close every member still running and end the host (killed if it does not exit)."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write("quit\n")
                self._proc.stdin.flush()
                self._proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait(timeout=30)
        self._reader.join(timeout=5)
        if self._stderr is not None:
            self._stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
