"""What groupwatch says about real KAFKA-7026 on kafka-clients 2.2.2, checked against the
clients' own logs: the stale claim is inferred and said to be, no claim is called
"generation -1" or "the same generation", and a 2.2.2 leader's assignments are never compared
with today's assignor (healthy 2.2.2 groups raise no ``sticky_divergence`` either).

The release comes from Maven Central through scripts/setup (``.groupwatch/jars/legacy``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic
from groupwatch_dev.legacy_clients import LegacyMembers, available
from tests.realgroups import dump_consumer_offsets

pytestmark = pytest.mark.broker

VERSION = "2.2.2"
STALLED = "truth-7026"
HEALTHY = "truth-222-healthy"


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.2)


def _covered(m: LegacyMembers, names: list[str], partitions: int) -> None:
    """Until ``names`` together own ``partitions`` distinct partitions, each exactly once."""

    def check(owned: dict[str, frozenset[str]]) -> bool:
        parts = [p for n in names for p in owned.get(n, frozenset())]
        return len(parts) == partitions == len(set(parts)) and all(owned.get(n) for n in names)

    m.wait_for(check, 60.0, f"{names} to cover {partitions} partitions")


@pytest.fixture(scope="module")
def run(broker: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    assert available(VERSION), "scripts/setup fetches kafka-clients 2.2.2 and builds the host"
    work: Path = tmp_path_factory.mktemp("legacy-truth")
    for topic in (f"{STALLED}-orders", f"{HEALTHY}-orders"):
        create_topic(broker, topic, 4)
    opts: dict[str, Any] = {"max_poll_interval_ms": 4000, "session_timeout_ms": 6000}
    with LegacyMembers(broker, VERSION, work / "clients.log") as m:
        # A healthy 2.2.2 StickyAssignor group: three join one by one, one leaves.
        for i, name in enumerate(("H1", "H2", "H3")):
            m.join(name, HEALTHY, [f"{HEALTHY}-orders"], "sticky")
            _covered(m, ["H1", "H2", "H3"][: i + 1], 4)
        m.leave("H2")
        _covered(m, ["H1", "H3"], 4)
        # KAFKA-7026: C1's poll loop stalls past max.poll.interval.ms, C2 takes everything, C1
        # comes back with user data v0 still listing its old partitions.
        m.join("C1", STALLED, [f"{STALLED}-orders"], "sticky", **opts)
        _covered(m, ["C1"], 4)
        m.join("C2", STALLED, [f"{STALLED}-orders"], "sticky", **opts)
        m.wait_for(lambda o: len(o.get("C1", ())) == 2 and len(o.get("C2", ())) == 2)
        m.stall("C1", 9000)
        m.wait_for(lambda o: len(o.get("C2", ())) == 4, what="C2 to take all 4 partitions")
        alone = max(m.client_log().members["C2"].assigned)
        _until(
            lambda: all(
                max(m.client_log().members[n].assigned, default=0) > alone for n in ("C1", "C2")
            ),
            "C1 and C2 to be assigned after C1's return",
        )
        log = m.client_log()
        m.leave("C1")
        m.leave("C2")
        m.leave("H1")
        m.leave("H3")
    return {"raw": dump_consumer_offsets(broker), "alone": alone, "log": log}


def _findings(raw: list[dict[str, Any]]) -> list[Any]:
    from groupwatch.detect import Analyzer, DetectorConfig

    analyzer = Analyzer(DetectorConfig())
    return [f for line in raw for f in analyzer.feed(line)] + analyzer.finish()


def test_kafka_7026_on_2_2_2_is_told_as_it_happened(run: dict[str, Any]) -> None:
    alone, log = run["alone"], run["log"]
    back = max(log.members["C1"].assigned)
    shared = log.members["C1"].assigned[back] & log.members["C2"].assigned[back]
    assert shared, "the 2.2.2 leader gave no partition to both (the clients' own account)"
    found = [f for f in _findings(run["raw"]) if f.group == STALLED]
    overlaps = [f for f in found if f.kind == "assignment_overlap"]
    assert {f"{f.topic}-{f.partition}" for f in overlaps} == set(shared)
    (stale,) = [f for f in found if f.kind == "stale_owned_partitions"]
    assert stale.generation == back and stale.member.startswith("C1-")
    assert "with no generation (its StickyAssignor user data v0 carries none)" in stale.detail
    assert f"was not a member of generation {alone}, the last completed one" in stale.detail
    assert stale.evidence["inferred_from_generation"] == alone
    assert {f"{r['topic']}-{p}" for r in stale.evidence["stale"] for p in r["partitions"]} == set(
        shared
    )
    honored = [f for f in found if f.kind == "stale_claim_honored"]
    assert {f"{f.topic}-{f.partition}" for f in honored} == set(shared)
    assert all(f.member == stale.member and "got it too" in f.detail for f in honored)
    assert not [f for f in found if f.kind.startswith("owned_overlap")]
    assert not [f.detail for f in found if re.search(r"generation -1\b", f.detail)]
    assert not [f for f in found if f.kind == "sticky_divergence"]


def test_a_healthy_2_2_2_sticky_group_raises_no_sticky_divergence(run: dict[str, Any]) -> None:
    found = [f for f in _findings(run["raw"]) if f.group == HEALTHY]
    assert found == [], [(f.kind, f.generation, f.detail) for f in found]
    gens = {
        line["value"]["generation"]
        for line in map(_decode, run["raw"])
        if line.get("group") == HEALTHY and line["record_type"] == "group_metadata"
        if line["value"]
    }
    assert len(gens) >= 4, gens


def _decode(line: dict[str, Any]) -> dict[str, Any]:
    from groupwatch.detect.decoded import decode_raw

    return decode_raw(line)
