"""The fleet's members: real clients of several implementations, each started and stopped the way
its users run it, all reporting what they own in one line format (``assigned t-p,...``).

Java consumers share one JVM (``groupwatch.demo.GroupMembers``); every other member is a process
of its own: a Kafka Streams instance (``groupwatch.fleet.StreamsApp``), a franz-go member (the Go
program setup built), a librdkafka or kafka-python member (``pymember.py``).  A process member
closes cleanly when told ``leave`` on its standard input; whatever happens, ``Fleet.close`` kills
every process still running.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from groupwatch import paths
from groupwatch_dev import SHORT_LIVED_JVM
from groupwatch_dev.demo.java_members import JavaGroupMembers

PYMEMBER = Path(__file__).with_name("pymember.py")


def go_client() -> Path:
    return paths.home() / "bin" / "fleet-goclient"


class Member(Protocol):
    name: str

    def owned(self) -> frozenset[str]: ...

    def leave(self) -> None: ...

    def problems(self) -> list[str]: ...


class ProcessMember:
    """One member process; a reader thread keeps what it last said it owns."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self.name = name
        self.log = log
        self._stderr = open(log, "w")  # noqa: SIM115 - closed in _reap
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C of pytest is not theirs; close() kills them
        )
        self._owned: frozenset[str] = frozenset()
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            self.heard(line)
            with self._lock:
                if line.startswith("assigned"):
                    parts = line[len("assigned") :].strip()
                    self._owned = frozenset(parts.split(",")) if parts else frozenset()
                elif line.startswith("error"):
                    self._errors.append(line)

    def heard(self, line: str) -> None:
        """Every line the member printed, as it is read (for members that say more)."""

    def owned(self) -> frozenset[str]:
        with self._lock:
            return frozenset() if self.proc.poll() is not None else self._owned

    def problems(self) -> list[str]:
        with self._lock:
            out = list(self._errors)
        if self.proc.poll() not in (None, 0):
            out.append(f"exited {self.proc.returncode}; stderr in {self.log}")
        return out

    def dump_stacks(self) -> None:
        """Ask a Python member for its threads' stacks (into its log); others ignore it."""
        if self.proc.poll() is None and self.proc.args[0] == sys.executable:
            self.proc.send_signal(signal.SIGUSR1)

    def leave(self, timeout: float = 60.0) -> None:
        """Ask for a clean close and wait for it; kill it if it does not exit in time."""
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write("leave\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
        self._reap()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reap()

    def _reap(self) -> None:
        self._reader.join(timeout=5)
        self._stderr.close()


@dataclass
class JavaMember:
    """A member hosted in the shared Java consumer JVM."""

    name: str
    host: JavaGroupMembers

    def owned(self) -> frozenset[str]:
        return self.host.assignments().get(self.name, frozenset())

    def leave(self) -> None:
        self.host.leave(self.name)

    def problems(self) -> list[str]:
        return [e for e in self.host.errors() if f" {self.name} " in e]


def _require(path: Path, what: str) -> None:
    if not path.exists():
        # Never silently green: CI runs setup first, so a missing part there is a failure.
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: scripts/setup did not build {what}")
        pytest.skip(f"{what} not built; run scripts/setup")


class Fleet:
    """Starts members of any client; ``close`` stops every one still running."""

    def __init__(self, bootstrap: str, workdir: Path) -> None:
        self.bootstrap = bootstrap
        self.workdir = workdir
        self._java: JavaGroupMembers | None = None
        self._procs: list[ProcessMember] = []
        self._lock = threading.Lock()

    # -- starting members, one function per client ------------------------------------------
    def java(
        self,
        name: str,
        group: str,
        topics: Sequence[str],
        assignor: str,
        instance: str | None,
        protocol: str = "classic",
    ) -> Member:
        with self._lock:
            if self._java is None:
                self._java = JavaGroupMembers(self.bootstrap)
        self._java.join(name, group, topics, assignor, instance_id=instance, protocol=protocol)
        return JavaMember(name, self._java)

    def python(
        self,
        client: str,
        name: str,
        group: str,
        topics: Sequence[str],
        assignor: str,
        instance: str | None,
    ) -> Member:
        argv = [
            sys.executable,
            str(PYMEMBER),
            client,
            self.bootstrap,
            group,
            ",".join(topics),
            assignor,
        ]
        return self._start(name, argv + ([instance] if instance else []))

    def go(
        self, name: str, group: str, topics: Sequence[str], assignor: str, instance: str | None
    ) -> Member:
        exe = go_client()
        _require(exe, "the Go client (franz-go)")
        argv = [
            str(exe),
            "-bootstrap",
            self.bootstrap,
            "-group",
            group,
            "-topics",
            ",".join(topics),
            "-balancer",
            assignor,
        ]
        return self._start(name, argv + (["-instance", instance] if instance else []))

    def streams(self, name: str, application_id: str, topic: str, protocol: str) -> Member:
        java = shutil.which("java")
        assert java is not None, "java is not on PATH"
        _require(paths.jars_dir("kafka") / "groupwatch-oracle.jar", "the Kafka jars")
        # One state folder per instance name (a restart reuses it, as a real redeploy does).
        state = self.workdir / "streams-state" / name.removesuffix("-restarted")
        state.mkdir(parents=True, exist_ok=True)
        argv = [
            java,
            "-Xmx256m",
            *SHORT_LIVED_JVM,
            f"-Dlog4j2.configurationFile={self._quiet_log4j()}",
            "-cp",
            f"{paths.jars_dir('kafka')}/*",
            "groupwatch.fleet.StreamsApp",
            self.bootstrap,
            application_id,
            topic,
            protocol,
            str(state),
            name,
        ]
        return self._start(name, argv)

    # -- plumbing ---------------------------------------------------------------------------
    def _start(
        self, name: str, argv: list[str], kind: type[ProcessMember] = ProcessMember
    ) -> ProcessMember:
        member = kind(name, argv, self.workdir / f"{name}.log")
        with self._lock:
            self._procs.append(member)
        return member

    def _quiet_log4j(self) -> Path:
        conf = self.workdir / "log4j2-warn.properties"
        if not conf.exists():
            conf.write_text(
                "rootLogger.level = WARN\nrootLogger.appenderRef.err.ref = ERR\n"
                "appender.err.type = Console\nappender.err.name = ERR\n"
                "appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n"
                "appender.err.layout.pattern = %d %p %c{1} %m%n\n"
            )
        return conf

    def close(self) -> None:
        """Kill whatever still runs (members that left have exited already)."""
        with self._lock:
            procs, self._procs = self._procs, []
            java, self._java = self._java, None
        for p in procs:
            p.kill()
        if java is not None:
            java.close()


def wait_covered(
    members: Sequence[Member], partitions: int, timeout: float = 90.0, what: str = ""
) -> float:
    """Until ``members`` together report owning ``partitions`` distinct partitions, each exactly
    once and every member some; returns the seconds it took."""
    start = time.monotonic()
    deadline = start + timeout
    while True:
        owned = [m.owned() for m in members]
        flat = [p for o in owned for p in o]
        if len(flat) == partitions == len(set(flat)) and all(owned[:partitions]):
            return time.monotonic() - start
        if time.monotonic() > deadline:
            for m in members:
                if isinstance(m, ProcessMember):
                    m.dump_stacks()
            report = {m.name: sorted(o) for m, o in zip(members, owned, strict=True)}
            problems = {m.name: m.problems() for m in members if m.problems()}
            logs = [str(m.log) for m in members if isinstance(m, ProcessMember)]
            raise AssertionError(
                f"{what}: did not converge to {partitions} partitions in {timeout:.0f}s: "
                f"{report} problems={problems} logs={logs}"
            )
        time.sleep(0.2)


Start = Callable[[str, "str | None"], Member]
