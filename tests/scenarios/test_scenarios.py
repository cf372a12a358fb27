"""The scenario library: every real incident (and every kind) as records, with the findings it
must and must not produce."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch_dev.scenarios.builder import decoded_lines, load, scenario_files

FILES = scenario_files()
SERIOUS = {"critical", "warning", "error"}


def matches(finding: Mapping[str, Any], pattern: Mapping[str, Any]) -> bool:
    return all(finding.get(k) == v for k, v in pattern.items())


def findings_of(scenario: Mapping[str, Any], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What analyze raises over the scenario, whose last state then persists: stream time
    moves on past every confirmation deadline (as the job's mirror test makes it)."""
    config = DetectorConfig(partitions_per_topic=scenario.get("partitions") or {})
    analyzer = Analyzer(config)
    found = [f for line in lines for f in analyzer.feed(line)]
    times = [line["timestamp"] for line in lines if isinstance(line.get("timestamp"), int)]
    if times:
        later = max(times) + config.confirm_after_ms
        for partition in sorted({line.get("partition") for line in lines}, key=str):
            found += analyzer.advance(later, partition)
    return [f.to_dict() for f in found]


def check(scenario: Mapping[str, Any], found: list[dict[str, Any]]) -> None:
    summary = [
        (f["kind"], f["group"], f["generation"], f["topic"], f["partition"], f["member"])
        for f in found
    ]
    for pattern in scenario["expect"]:
        assert any(matches(f, pattern) for f in found), f"missing {pattern}; found {summary}"
    for pattern in scenario.get("forbid", []):
        bad = [f for f in found if matches(f, pattern)]
        assert not bad, f"forbidden {pattern} found: {bad[0]['detail']}"
    if scenario.get("exhaustive"):
        extra = [
            f
            for f in found
            if f["severity"] in SERIOUS and not any(matches(f, p) for p in scenario["expect"])
        ]
        assert not extra, f"unexpected: {[(f['kind'], f['detail']) for f in extra]}"
    ids = [f["finding_id"] for f in found]
    assert len(ids) == len(set(ids)), "a finding was raised twice"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_decoded(path: Path) -> None:
    scenario = load(path)
    check(scenario, findings_of(scenario, decoded_lines(scenario)))


def test_every_incident_of_the_reference_has_a_scenario() -> None:
    incidents = {load(p).get("incident") for p in FILES}
    assert incidents >= {
        "KAFKA-7026",
        "KAFKA-12984",
        "KAFKA-13406",
        "KAFKA-13419",
        "KAFKA-14016",
        "KAFKA-14639",
        "KAFKA-15106",
        "KAFKA-15170",
        "aiokafka#1176",
    }


def test_every_kind_is_proven_by_some_scenario() -> None:
    from groupwatch.detect.catalogue import CATALOGUE

    # Modern groups' kinds have their own library, built with Kafka's serialisers
    # (tests/scenarios/modern/, proven by test_modern_scenarios.py); lag kinds are judged from
    # offsets against end offsets, not records (tests/unit/lag/test_judge.py proves each);
    # share kinds are judged from __share_group_state (tests/scenarios/test_share_scenarios.py).
    expected = {p["kind"] for f in FILES for p in load(f)["expect"]}
    proven_here = {
        k.name for k in CATALOGUE if k.severity != "info" and not (k.modern or k.lag or k.share)
    }
    assert expected >= proven_here | {"protocol_version_mix"}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_raw(path: Path) -> None:
    """The same scenario as bytes: encoded, then decoded by the real decoder, same verdict."""
    import json

    from groupwatch.protocol.command import decode_line
    from groupwatch_dev.scenarios.builder import raw_records

    scenario = load(path)
    lines = [decode_line(json.dumps(r)) for r in raw_records(scenario)]
    found = findings_of(scenario, lines)
    check(scenario, found)

    def key(f: Mapping[str, Any]) -> str:
        return json.dumps([f["kind"], f["generation"], f["topic"], f["partition"], f["member"]])

    decoded = findings_of(scenario, decoded_lines(scenario))
    assert sorted(map(key, found)) == sorted(map(key, decoded))


def test_no_two_scenarios_share_a_group() -> None:
    """The job's scenario tests mirror every scenario into one topic (topics are namespaced,
    groups are not): a group name used by two scenarios would make one group of both."""
    owner: dict[str, str] = {}
    clashes = []
    for path in scenario_files():
        doc = load(path)
        names = {
            rec.get("group") or (rec.get("commit") or {}).get("group")
            for rec in doc["records"]
            for rec in (rec, rec.get("record") or {})
        }
        for group in sorted(g for g in names if g):
            if owner.setdefault(group, path.stem) != path.stem:
                clashes.append((group, owner[group], path.stem))
    assert not clashes
