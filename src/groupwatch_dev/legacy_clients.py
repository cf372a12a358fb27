"""Group members of old releases of Kafka's Java client, and what their own logs say happened.

``LegacyMembers`` drives ``groupwatch.legacy.LegacyMembers`` (jvm/legacy) on the classpath of one
release that scripts/setup copied from Maven Central into ``.groupwatch/jars/legacy/<version>``:
the same host jar, compiled against 2.2.2's API, runs on each.  It speaks the line protocol of
the other member hosts (``groupwatch_dev.member_host``), plus ``pace`` (a slow application) and
``fetched`` lines (the first records of a partition after it was assigned).

The clients log through SLF4J's simple binding into the host's log file; ``read_client_log``
turns those lines into each member's own account of the group: the generations it joined and
synced, what it was assigned in each, and the errors it met.  That account is the ground truth
the reproductions compare groupwatch's findings with.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from groupwatch import paths
from groupwatch_dev.member_host import MemberHost

#: The releases setup fetches (jvm/legacy/pom.xml and scripts/setup).
RELEASES = ("2.2.2", "3.0.0", "3.0.1")

#: What the 3.0.0 leader's validation throws when a partition is revoked and added in one round.
COOPERATIVE_VIOLATION = "Assignor supporting the COOPERATIVE protocol violates its requirements"


def release_dir(version: str) -> Path:
    return paths.jars_dir("legacy") / version


def host_jar() -> Path:
    return paths.jars_dir("legacy") / "host" / "groupwatch-legacy.jar"


def available(version: str) -> bool:
    """Whether setup fetched ``version`` and built the host."""
    return host_jar().is_file() and any(release_dir(version).glob("kafka-clients-*.jar"))


class LegacyMembers(MemberHost):
    """One JVM of members of kafka-clients ``version``; the clients' logs go to ``log``."""

    def __init__(self, bootstrap: str, version: str, log: Path) -> None:
        self.version = version
        super().__init__(
            "groupwatch.legacy.LegacyMembers",
            bootstrap,
            log,
            classpath=f"{host_jar()}:{release_dir(version)}/*",
            jvm_options=(
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                # The configuration dumps of every client are long and say nothing of the group.
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.ConsumerConfig=warn",
                "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common.config.AbstractConfig=warn",
            ),
        )

    def join(
        self,
        name: str,
        group: str,
        topics: Iterable[str],
        assignor: str,
        *,
        instance_id: str | None = None,
        max_poll_interval_ms: int | None = None,
        session_timeout_ms: int | None = None,
        poll_ms: int | None = None,
        pace_ms: int | None = None,
    ) -> None:
        """Start member ``name`` (its client id) in ``group`` with the release's ``assignor``
        (range, roundrobin, sticky, cooperative-sticky)."""
        options = {
            "instance": instance_id,
            "max.poll": max_poll_interval_ms,
            "session": session_timeout_ms,
            "poll": poll_ms,
            "pace": pace_ms,
        }
        extra = "".join(f" {k}={v}" for k, v in options.items() if v is not None)
        self._send(f"join {name} {group} {','.join(topics)} {assignor}{extra}")

    def pace(self, name: str, millis: int) -> None:
        """From now on the member spends ``millis`` after every poll (0: none)."""
        self._send(f"pace {name} {millis}")

    def fetched(self, name: str) -> set[str]:
        """The partitions ``name`` received records of (``t-p``), over its whole life."""
        prefix = f"fetched {name} "
        return {line[len(prefix) :] for _, line in self.transcript() if line.startswith(prefix)}

    def client_log(self) -> ClientLog:
        assert self.log is not None
        return read_client_log(self.log.read_text(errors="replace").splitlines())


# -- the clients' own account --------------------------------------------------------------------
@dataclass
class MemberLog:
    """One member's account, in the order it logged it."""

    #: every generation it joined (JoinGroup answered), in order
    joined: list[int] = field(default_factory=list)
    #: every generation it synced (3.0 logs it; 2.2 only logs the assignment that follows)
    synced: list[int] = field(default_factory=list)
    #: the whole assignment it received, by the generation it had joined
    assigned: dict[int, frozenset[str]] = field(default_factory=dict)
    #: the leader's logged assignment of the whole group, by generation (3.0)
    led: dict[int, str] = field(default_factory=dict)
    #: the generations in which, as leader, it refused its own assignor's result (3.0's
    #: validateCooperativeAssignment: a partition revoked from one member and added to another)
    refused: list[int] = field(default_factory=list)
    #: the ERROR and WARN lines it logged
    problems: list[str] = field(default_factory=list)
    #: every line it logged (without the time, thread and logger)
    lines: list[str] = field(default_factory=list)


@dataclass
class ClientLog:
    """Every member's account, by client id."""

    members: dict[str, MemberLog]

    def owners(self, generation: int) -> dict[str, frozenset[str]]:
        """Each partition of ``generation`` -> the members that were assigned it in it."""
        out: dict[str, set[str]] = defaultdict(set)
        for name, member in self.members.items():
            for tp in member.assigned.get(generation, frozenset()):
                out[tp].add(name)
        return {tp: frozenset(names) for tp, names in out.items()}

    def shared(self) -> dict[int, dict[str, frozenset[str]]]:
        """The generations in which members were assigned one partition together, and whom."""
        gens = {g for m in self.members.values() for g in m.assigned}
        out: dict[int, dict[str, frozenset[str]]] = {}
        for g in sorted(gens):
            both = {tp: names for tp, names in self.owners(g).items() if len(names) > 1}
            if both:
                out[g] = both
        return out

    def generations(self) -> list[int]:
        """Every generation any member joined, ascending."""
        return sorted({g for m in self.members.values() for g in m.joined})

    def lines_with(self, text: str) -> list[str]:
        """The members' log lines (any level) containing ``text``."""
        return [line for m in self.members.values() for line in m.lines if text in line]


_PREFIX = re.compile(r"\[Consumer clientId=([^,\]]+), groupId=([^\]]+)\] (.*)$")
# 2.2: "... with generation 5"; 3.0: "... with generation Generation{generationId=7, ...}"
_GEN = r"generation (?:Generation\{generationId=)?(-?\d+)"
_JOINED = re.compile(r"Successfully joined group with " + _GEN)
_SYNCED = re.compile(r"Successfully synced group in " + _GEN)
_ASSIGNED_22 = re.compile(r"Setting newly assigned partitions:? \[?([^\]]*)\]?$")
_ASSIGNED_30 = re.compile(r"Notifying assignor about the new Assignment\(partitions=\[([^\]]*)\]")
_REFUSED = "With the COOPERATIVE protocol, owned partitions cannot be reassigned"
_LED = re.compile(r"Finished assignment for group at generation (\d+): (.*)$")


def _append_new(values: list[int], value: int) -> None:
    if not values or values[-1] != value:
        values.append(value)


def _partitions(text: str) -> frozenset[str]:
    return frozenset(p.strip() for p in text.split(",") if p.strip())


def read_client_log(lines: Iterable[str]) -> ClientLog:
    """The members' accounts from the log lines of their clients (SLF4J simple format)."""
    members: dict[str, MemberLog] = defaultdict(MemberLog)
    for line in lines:
        m = _PREFIX.search(line)
        if m is None:
            continue
        member, text = members[m.group(1)], m.group(3)
        member.lines.append(text)
        # A leader whose assignment fails logs the same JoinGroup answer again at every retry.
        if joined := _JOINED.search(text):
            _append_new(member.joined, int(joined.group(1)))
        elif synced := _SYNCED.search(text):
            _append_new(member.synced, int(synced.group(1)))
        elif _REFUSED in text and member.joined:
            _append_new(member.refused, member.joined[-1])
        elif (got := _ASSIGNED_30.search(text) or _ASSIGNED_22.search(text)) and member.joined:
            member.assigned[member.joined[-1]] = _partitions(got.group(1))
        elif led := _LED.search(text):
            member.led[int(led.group(1))] = led.group(2)
        if " ERROR " in line or " WARN " in line:
            member.problems.append(text)
    return ClientLog(dict(members))
