"""Client for the Java differential oracle ``groupwatch.oracle.AssignOracle`` (tests and benchmark).

It lives with the tests, not in the product: only the differential test and
``bench/bench_assign.py`` start Kafka's assignor.

It keeps one JVM running and streams cases to it, one line each (see the Java class for the
token format), so thousands of cases cost one JVM start.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from groupwatch.assignor import MemberSubscription, PartitionRacks

ORACLE_CLASS = "groupwatch.oracle.AssignOracle"


def _s(value: str | None) -> str:
    """One string token: ``n`` for null, else ``s`` and the percent-encoded text."""
    return "n" if value is None else "s" + quote(value, safe="")


def encode_case(
    protocol: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    partition_racks: PartitionRacks | None = None,
    *,
    warmup: int = 0,
    quiet: bool = False,
) -> str:
    """One case as the harness's line of tokens; ``warmup`` runs Kafka that many times first,
    ``quiet`` leaves the assignment out of the answer.
    """
    out: list[str] = [
        _s(protocol),
        str(warmup),
        "1" if quiet else "0",
        str(len(partitions_per_topic)),
    ]
    racks = partition_racks or {}
    for topic, count in partitions_per_topic.items():
        rows = racks.get(topic)
        out += [_s(topic), str(count), "1" if rows is not None else "0"]
        if rows is not None:
            for p in range(count):
                row = rows[p] if p < len(rows) else []
                out.append(str(len(row)))
                out.extend(_s(r) for r in row)
    out.append(str(len(members)))
    for m in members:
        out += [
            _s(m.member_id),
            "n" if m.generation is None else str(m.generation),
            _s(m.rack_id),
            str(len(m.topics)),
        ]
        out.extend(_s(t) for t in m.topics)
        out.append(str(len(m.owned_partitions)))
        for topic, p in m.owned_partitions:
            out += [_s(topic), str(p)]
    return " ".join(out)


class JavaOracle:
    """A running ``AssignOracle`` JVM; ``run(...)`` returns its decoded JSON answer."""

    def __init__(self, java: str, classpath: str, *, heap: str = "4g") -> None:
        """Start the JVM (``java`` binary, ``classpath`` with the Kafka jars and the harness)."""
        self._proc = subprocess.Popen(
            [java, f"-Xmx{heap}", "-Xss8m", "-cp", classpath, ORACLE_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )

    def run_encoded(self, line: str) -> dict[str, Any]:
        """Send one encoded case (see :func:`encode_case`) and return the decoded answer."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(line + "\n")
        self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the Java oracle exited (rc={self._proc.poll()})")
        result: dict[str, Any] = json.loads(answer)
        return result

    def run(
        self,
        protocol: str,
        partitions_per_topic: Mapping[str, int],
        members: Sequence[MemberSubscription],
        partition_racks: PartitionRacks | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Run one case given as the assignor's own input; ``kwargs`` go to :func:`encode_case`."""
        line = encode_case(protocol, partitions_per_topic, members, partition_racks, **kwargs)
        return self.run_encoded(line)

    def close(self) -> None:
        """Close the JVM's input and wait for it to exit (killing it after 30 s)."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> JavaOracle:
        """The running oracle."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the JVM."""
        self.close()
