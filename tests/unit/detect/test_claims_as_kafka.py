"""The rules judge claims by Kafka's own reading (``groupwatch.assignor.claims``), the one the
re-run assignor uses: a reset generation nobody contests is kept, and a claim Kafka compares by
its subscription's generation is judged so (the rule per partition alone would call it a tie)."""

from __future__ import annotations

from typing import Any

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch_dev.scenarios.builder import decoded_lines


def _run(members: list[dict[str, Any]], generation: int = 8) -> list[Finding]:
    record = {
        "group": "g",
        "generation": generation,
        "protocol": "cooperative-sticky",
        "version": 3,
        "time": 0,
        "leader": members[0]["id"],
        "members": members,
    }
    analyzer = Analyzer(DetectorConfig(partitions_per_topic={"t": 4}))
    lines = decoded_lines({"records": [record]})
    return [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()


def _m(mid: str, version: int, gen: int, owned: list[int], assigned: list[int]) -> dict[str, Any]:
    return {
        "id": mid,
        "version": version,
        "topics": ["t"],
        "owned": {"t": owned},
        "generation_id": gen,
        "coop": gen,
        "assigned": {"t": assigned},
    }


def test_a_reset_generation_nobody_contests_is_kept() -> None:
    found = _run([_m("A-1", 2, -1, [0, 1], [0, 1]), _m("B-1", 2, 7, [2, 3], [2, 3])])
    assert [f for f in found if f.severity in ("warning", "critical")] == []


def test_a_contested_reset_claim_says_what_kafka_did() -> None:
    found = _run([_m("A-1", 2, -1, [0, 1], [0]), _m("B-1", 2, 7, [1, 2, 3], [1, 2, 3])])
    (stale,) = [f for f in found if f.kind == "stale_owned_partitions"]
    assert stale.member == "A-1"
    assert stale.detail.endswith(
        "stale: t-1, cleared: no generation is older than B-1's generation 7, which holds it"
    )


def test_generations_only_in_user_data_are_no_tie_for_kafka() -> None:
    """Subscriptions v1 carry no generationId, so Kafka compares the member holding t-1 at -1:
    the later member in its map order takes it, and there is no same-generation overlap."""
    found = _run([_m("A-1", 1, 5, [0, 1], [0, 1]), _m("B-1", 1, 5, [1, 2, 3], [2, 3])])
    assert not [f for f in found if f.kind == "owned_overlap_same_generation"]
    (stale,) = [f for f in found if f.kind == "stale_owned_partitions"]
    assert "t-1, cleared: " in stale.detail
    assert "Kafka compares the claim A-1 held by its subscription's generation: none" in (
        stale.detail
    )
