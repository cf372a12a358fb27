"""Partition counts as a timeline: each generation is judged against the count that held when
its record was written, whoever tells the count (the group's records, the brokers, a file), and
a deleted topic is missing, not unassigned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.detect import Analyzer, DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.partitions import PartitionsError, parse_since, parse_stated
from groupwatch.detect.topic_counts import counts_at
from groupwatch_dev.scenarios.builder import BASE_TIME_MS, decoded_lines

EXPANDED_AT = 300  # seconds into the scenario: partitions 4 -> 8


def _member(mid: str, owned: list[int], assigned: list[int], gen: int) -> dict[str, Any]:
    return {
        "id": mid,
        "version": 3,
        "topics": ["t"],
        "owned": {"t": owned} if owned else {},
        "generation_id": gen,
        "coop": gen,
        "assigned": {"t": assigned},
    }


def _expansion(protocol: str) -> dict[str, Any]:
    """Two members share t's 4 partitions from generation 3; t grows to 8 and generation 5
    hands the new partitions out, generation 6 keeps them: a healthy group's life."""
    records: list[dict[str, Any]] = [
        {
            "group": "grows",
            "generation": 1,
            "protocol": protocol,
            "version": 3,
            "time": 0,
            "members": [_member("A-1", [], [0, 1, 2, 3], -1)],
        }
    ]
    for gen in (2, 3, 4):
        records.append(
            {
                "group": "grows",
                "generation": gen,
                "protocol": protocol,
                "version": 3,
                "time": gen * 20,
                "members": [  # B joins at 2: A revokes 2 and 3 first (KIP-429)
                    _member("A-1", [0, 1] if gen > 2 else [0, 1, 2, 3], [0, 1], gen - 1),
                    _member("B-1", [2, 3] if gen > 3 else [], [2, 3] if gen > 2 else [], gen - 1),
                ],
            }
        )
        records.append(
            {"commit": {"group": "grows", "topic": "t", "partition": 3}, "time": gen * 20 + 5}
        )
    for gen, time in ((5, EXPANDED_AT + 10), (6, EXPANDED_AT + 100)):
        records.append(
            {
                "group": "grows",
                "generation": gen,
                "protocol": protocol,
                "version": 3,
                "time": time,
                "members": [
                    _member("A-1", [0, 1] if gen == 5 else [0, 1, 4, 6], [0, 1, 4, 6], gen - 1),
                    _member("B-1", [2, 3] if gen == 5 else [2, 3, 5, 7], [2, 3, 5, 7], gen - 1),
                ],
            }
        )
    # Other groups' commits move stream time past every confirmation deadline.
    records.append({"commit": {"group": "grows", "topic": "t", "partition": 7}, "time": 900})
    return {"records": records}


def _run(scenario: dict[str, Any], config: DetectorConfig) -> list[Finding]:
    analyzer = Analyzer(config)
    found = [f for line in decoded_lines(scenario) for f in analyzer.feed(line)]
    return found + analyzer.finish()


def _at(seconds: int) -> int:
    return BASE_TIME_MS + seconds * 1000


NOW = _at(100_000)  # analyze run long after the records: what --bootstrap-server observes


@pytest.mark.parametrize("protocol", ["range", "cooperative-sticky"])
def test_an_expansion_is_judged_by_the_count_of_each_generation(protocol: str) -> None:
    scenario = _expansion(protocol)
    verdicts = {
        "records only": DetectorConfig(),
        "brokers asked now": DetectorConfig(
            broker_partitions={"t": 8}, broker_partitions_as_of_ms=NOW
        ),
        "file read now": DetectorConfig(partitions_per_topic={"t": 8}, partitions_as_of_ms=NOW),
    }
    found = {name: [f.to_dict() for f in _run(scenario, c)] for name, c in verdicts.items()}
    assert found["records only"] == found["brokers asked now"] == found["file read now"]
    assert not [f for f in found["records only"] if f["severity"] != "info"]
    assert not [f for f in found["records only"] if f["kind"] == "sticky_divergence"]


def test_a_count_observed_before_a_generation_judges_it() -> None:
    """The brokers asked before the records: 8 partitions held from then on, so generations
    that hand out only 4 of them leave 4 unassigned (the observation really is applied)."""
    early = DetectorConfig(broker_partitions={"t": 8}, broker_partitions_as_of_ms=_at(30))
    found = [f for f in _run(_expansion("range"), early) if f.kind == "unassigned_partitions"]
    assert [f.generation for f in found] == [3, 4]  # 2 was a round of a join
    assert found[0].detail == "4 of 8 partitions of t are assigned to nobody"
    source = found[0].evidence["partition_count_source"]
    assert source == "brokers at 2023-11-14T22:13:50Z"


def test_counts_at_takes_the_largest_lower_bound_that_holds() -> None:
    cfg = DetectorConfig(
        partitions_per_topic={"t": 6, "u": 2},
        partitions_as_of_ms=1_000,
        broker_partitions={"t": 8},
        broker_partitions_as_of_ms=5_000,
    )
    inferred = {"t": 4, "u": 3}
    assert counts_at(inferred, {}, cfg, 999) == (
        {"t": 4, "u": 3},
        {"t": "inferred", "u": "inferred"},
    )
    counts, sources = counts_at(inferred, {}, cfg, 1_000)
    assert counts == {"t": 6, "u": 3} and sources["t"] == "configured at 1970-01-01T00:00:01Z"
    counts, sources = counts_at(inferred, {}, cfg, 5_000)
    assert counts["t"] == 8 and sources["t"] == "brokers at 1970-01-01T00:00:05Z"
    # t deleted and re-created at 6 s: what anyone saw before holds no more.
    assert counts_at({}, {"t": 6_000}, cfg, 7_000)[0] == {"u": 2}
    assert counts_at({}, {"t": 500}, cfg, 7_000)[0] == {"t": 8, "u": 2}
    # No time: the counts held for every record, even one without a time.
    always = DetectorConfig(partitions_per_topic={"t": 6})
    assert counts_at({"t": 4}, {}, always, None) == ({"t": 6}, {"t": "configured"})
    assert counts_at({"t": 4}, {}, cfg, None)[0] == {"t": 4}


def test_stated_counts_say_from_when_they_hold() -> None:
    assert parse_stated({"t": 3}, 42) == parse_stated({"partitions_per_topic": {"t": 3}}, 42)
    assert parse_stated({"t": 3}, 42).as_of_ms == 42
    doc = {"partitions_per_topic": {"t": 3}, "as_of": "1970-01-01T00:00:02Z"}
    assert parse_stated(doc, 42).as_of_ms == 2_000
    assert parse_since("always", 42) is None
    assert parse_since("1970-01-01T00:00:01", 42) == 1_000  # UTC unless it says otherwise
    with pytest.raises(PartitionsError, match="ISO-8601"):
        parse_since("yesterday", 42)


def _deleted(brokers: DetectorConfig) -> list[Finding]:
    lines = {
        "records": [
            {
                "group": "keeps",
                "generation": 1,
                "protocol": "range",
                "version": 3,
                "time": 0,
                "members": [_member("K-1", [], [], -1)],
            },
        ]
    }
    return _run(lines, brokers)


def test_the_brokers_listing_no_topic_makes_it_missing_from_then_on() -> None:
    """A group that never had a partition of its topic: only the brokers, asked before the
    generation, can say the topic does not exist; asked later, they cannot."""
    before = DetectorConfig(broker_partitions={"other": 1}, broker_partitions_as_of_ms=_at(-1))
    found = [f for f in _deleted(before) if f.kind == "subscribed_topic_missing"]
    assert len(found) == 1 and found[0].topic == "t"
    assert "the brokers list no such topic" in found[0].evidence["reasons"][0]
    after = DetectorConfig(broker_partitions={"other": 1}, broker_partitions_as_of_ms=NOW)
    assert not [f for f in _deleted(after) if f.kind == "subscribed_topic_missing"]


def test_analyze_with_a_partitions_file_judges_each_generation_by_its_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from groupwatch.cli import main

    dump = tmp_path / "in.jsonl"
    dump.write_text("".join(json.dumps(x) + "\n" for x in decoded_lines(_expansion("range"))))
    today = tmp_path / "today.json"
    today.write_text('{"t": 8}')
    assert main(["analyze", str(dump), "--partitions", str(today)]) == 0
    assert "unassigned_partitions" not in capsys.readouterr().out
    stated = tmp_path / "stated.json"
    stated.write_text('{"partitions_per_topic": {"t": 8}, "as_of": "2023-11-14T22:13:50Z"}')
    assert main(["analyze", str(dump), "--partitions", str(stated)]) == 0
    found = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    unassigned = [f for f in found if f["kind"] == "unassigned_partitions"]
    assert [f["generation"] for f in unassigned] == [3, 4]
    assert unassigned[0]["evidence"]["partition_count_source"] == (
        "configured at 2023-11-14T22:13:50Z"
    )


def test_the_jobs_configured_counts_hold_from_its_start_unless_told() -> None:
    from groupwatch import config

    def detector(*extra: str) -> DetectorConfig:
        overrides = ['detect.partitions={"t": 8}', *extra]
        return config.load(None, env={}, overrides=overrides).detect.detector(now_ms=7)

    assert detector().partitions_as_of_ms == 7
    assert detector("detect.partitions_since=always").partitions_as_of_ms is None
    since = detector("detect.partitions_since=1970-01-01T00:00:01Z")
    assert since.partitions_as_of_ms == 1_000
    with pytest.raises(config.ConfigError, match="partitions_since"):
        detector("detect.partitions_since=soon")
