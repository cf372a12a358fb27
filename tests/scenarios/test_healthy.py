"""No false positives: healthy groups of every protocol and record version raise nothing
above info, whether partition counts are configured or inferred."""

from __future__ import annotations

from typing import Any

import pytest

from groupwatch.detect import DetectorConfig, analyze_lines
from groupwatch_dev.scenarios.builder import decoded_lines
from tests.scenarios.healthy import PARTITIONS, healthy_scenarios

SCENARIOS = healthy_scenarios()


def serious(scenario: dict[str, Any], config: DetectorConfig) -> list[str]:
    found = analyze_lines(decoded_lines(scenario), config)
    return [f"{f.kind} g{f.generation}: {f.detail}" for f in found if f.severity != "info"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_healthy_group_raises_nothing(scenario: dict[str, Any]) -> None:
    assert serious(scenario, DetectorConfig(partitions_per_topic=PARTITIONS)) == []
    assert serious(scenario, DetectorConfig()) == []


def test_the_simulation_covers_what_it_claims() -> None:
    protocols = {s["records"][0]["protocol"] for s in SCENARIOS}
    assert protocols == {"range", "roundrobin", "sticky", "cooperative-sticky"}
    record_versions = {r.get("version") for s in SCENARIOS for r in s["records"]}
    assert record_versions >= {0, 1, 2, 3, 4}
    coop = next(s for s in SCENARIOS if s["name"] == "healthy-cooperative-sticky-s3-r4")
    gens = [r["generation"] for r in coop["records"] if "generation" in r]
    # cooperative hand-overs take follow-up rounds; a static restart keeps the generation
    assert len(gens) > len(set(gens)) and len(gens) >= 10
