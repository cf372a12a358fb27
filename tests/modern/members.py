"""A driver for ``groupwatch.modern.ModernMembers`` (jvm/kafka): one JVM hosting every member of
the modern-group scenarios, Kafka's own Java client on the ``consumer`` protocol (and on the
classic one, for a group about to be upgraded).

Commands go down the host's standard input one line at a time; a reader thread keeps what each
member last reported: the partitions it owns and its member id.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from groupwatch import paths

MAIN_CLASS = "groupwatch.modern.ModernMembers"


class HostError(RuntimeError):
    """The member host failed, or the members did not reach a state in time."""


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


class ModernMembers:
    """``with ModernMembers(bootstrap, log) as host: host.join(...)``; thread-safe."""

    def __init__(self, bootstrap: str, log: Path) -> None:
        java = shutil.which("java")
        if java is None:
            raise HostError("java is not on PATH")
        jars = paths.jars_dir("kafka")
        self.log = log
        self._stderr = open(log, "w")  # noqa: SIM115 - closed in close()
        self._proc = subprocess.Popen(
            [
                java,
                "-Xmx512m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                f"{jars}/*",
                MAIN_CLASS,
                bootstrap,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C of pytest is not the host's; close() ends it
        )
        self._owned: dict[str, frozenset[str]] = {}
        self._ids: dict[str, list[str]] = {}
        self._errors: list[str] = []
        self._notes: list[str] = []
        self._acks = 0
        self._cond = threading.Condition()
        # Scenarios run in parallel threads; their command lines must not interleave.
        self._write = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- commands --------------------------------------------------------------------------------
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

    def leave(self, name: str) -> None:
        """Close the member (a dynamic one leaves; a static one leaves as static)."""
        self._send(f"leave {name}")
        with self._cond:
            self._owned.pop(name, None)

    def stall(self, name: str, millis: int) -> None:
        """Stop the member's polling for ``millis``."""
        self._send(f"stall {name} {millis}")

    # -- what the members said -------------------------------------------------------------------
    def owned(self, name: str) -> frozenset[str]:
        with self._cond:
            return self._owned.get(name, frozenset())

    def member_ids(self, name: str) -> list[str]:
        """Every member id ``name`` reported, in order (a rejoin may bring a new one)."""
        with self._cond:
            return list(self._ids.get(name, []))

    def errors(self) -> list[str]:
        with self._cond:
            return list(self._errors)

    def notes(self) -> list[str]:
        with self._cond:
            return list(self._notes)

    def wait_member_id(self, name: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._ids.get(name):
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise HostError(f"{name} reported no member id in {timeout:.0f}s")
                self._cond.wait(0.5)
            return self._ids[name][-1]

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
                    raise HostError(
                        f"{list(names)} did not cover {partitions} partitions in {timeout:.0f}s: "
                        f"{ {n: sorted(o) for n, o in now.items()} } errors={self._errors} "
                        f"(host log {self.log})"
                    )
                self._cond.wait(0.2)

    # -- plumbing --------------------------------------------------------------------------------
    def _send(self, line: str) -> None:
        assert self._proc.stdin is not None
        with self._write:
            with self._cond:
                target = self._acks + 1
            try:
                self._proc.stdin.write(line + "\n")
                self._proc.stdin.flush()
            except OSError as exc:
                raise HostError(f"the member host is gone ({exc}); see {self.log}") from exc
            deadline = time.monotonic() + 60
            with self._cond:
                while self._acks < target:
                    if time.monotonic() > deadline or self._proc.poll() is not None:
                        raise HostError(
                            f"no answer to {line!r}; errors={self._errors}; see {self.log}"
                        )
                    self._cond.wait(0.5)

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            words = raw.rstrip("\n").split(" ", 2)
            with self._cond:
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
        self._stderr.close()

    def __enter__(self) -> ModernMembers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
