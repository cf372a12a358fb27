"""The modern-group scenario library (``tests/scenarios/modern``) through analyze.

Each scenario's raw records -- Kafka's own bytes, built by :mod:`tests.scenarios.modern_records`
-- are fed to :class:`groupwatch.detect.Analyzer` one line at a time, and the input is closed with
``Analyzer.finish()``: the end of analyze's input is its quiescent point, where what has waited
out the confirmation window (``modern_confirm_ms``) or its own time threshold on the group's
``__consumer_offsets`` partition is raised. Every scenario ends with a clock record late enough
for that (checked below), and is judged with the same expect / forbid / exhaustive rules as the
classic library (``tests/scenarios/test_scenarios.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from groupwatch.detect import Analyzer, DetectorConfig, analyze_lines
from groupwatch.detect.catalogue import CATALOGUE
from tests.scenarios.modern_records import build, groups, load_all
from tests.scenarios.test_scenarios import check, matches

pytestmark = pytest.mark.oracle  # the records come from Kafka's serialisers (one JVM run)

DOCS = load_all()

#: The modern kinds (their names and severities are pinned, with every other kind's, by
#: tests/unit/detect/test_docs.py::test_catalogue_is_the_contract).
MODERN_KINDS = {k.name for k in CATALOGUE if k.modern}

#: The contract's defaults (ms): the confirmation window and the time-based thresholds.
MODERN_CONFIRM_MS = 10_000
REVOCATION_GRACE_MS = 30_000
THRESHOLDS_MS = {
    "unreleased_too_long": 300_000,
    "assignment_epoch_behind": 300_000,
    "static_member_away_too_long": 45_000,
}


@pytest.fixture(scope="module")
def raw() -> dict[str, list[dict[str, Any]]]:
    return build(DOCS)


def detector_config(doc: Mapping[str, Any]) -> DetectorConfig:
    """The scenario's settings (``config``, e.g. ``broker_version``) over the defaults."""
    return DetectorConfig(
        partitions_per_topic=doc.get("partitions") or {}, **(doc.get("config") or {})
    )


def findings_of(doc: Mapping[str, Any], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What analyze raises over the scenario: every line fed, then the end of the input."""
    analyzer = Analyzer(detector_config(doc))
    found = [f for line in lines for f in analyzer.feed(line)]
    found.extend(analyzer.finish())
    return [f.to_dict() for f in found]


@pytest.mark.parametrize("name", sorted(DOCS))
def test_modern_scenario(name: str, raw: dict[str, list[dict[str, Any]]]) -> None:
    doc = DOCS[name]
    found = findings_of(doc, raw[name])
    check(doc, found)
    assert {f["group"] for f in found} <= groups(doc), "a finding outside the scenario's groups"


EXPECTING = sorted(name for name, doc in DOCS.items() if doc["expect"])
TIME_KINDS = {"revocation_overdue", *THRESHOLDS_MS}


@pytest.mark.parametrize("name", EXPECTING)
def test_nothing_is_raised_before_the_clock(
    name: str, raw: dict[str, list[dict[str, Any]]]
) -> None:
    """Without its final clock record, a scenario's violations are still awaiting
    confirmation when the input ends (each began less than ``modern_confirm_ms`` before the
    last write), so none of what it expects is raised yet."""
    doc = DOCS[name]
    found = findings_of(doc, raw[name][:-1])
    early = [p for p in doc["expect"] if any(matches(f, p) for f in found)]
    assert not early, f"raised before the confirmation window was over: {early}"


@pytest.fixture(scope="module")
def clock_before_time_limits() -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The scenarios that expect a time-based kind, with their clock moved to just past the
    confirmation window after their last write: well before the kind's own time limit."""
    docs = {}
    for name, doc in DOCS.items():
        if TIME_KINDS & {p["kind"] for p in doc["expect"]}:
            early = copy.deepcopy(doc)
            latest = max(float(w["at"]) for w in early["writes"][:-1])
            early["writes"][-1]["at"] = latest + MODERN_CONFIRM_MS / 1000 + 1
            docs[name] = early
    raw = build(docs)
    return {name: (docs[name], raw[name]) for name in docs}


def test_time_based_kinds_wait_for_their_own_limit(
    clock_before_time_limits: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]],
) -> None:
    assert len(clock_before_time_limits) >= 4
    for name, (doc, lines) in sorted(clock_before_time_limits.items()):
        found = findings_of(doc, lines)
        for pattern in doc["expect"]:
            if pattern["kind"] in TIME_KINDS:
                assert not any(matches(f, pattern) for f in found), (name, pattern)


def test_analyze_lines_closes_the_input_the_same_way(
    raw: dict[str, list[dict[str, Any]]],
) -> None:
    """``analyze_lines`` (the ``analyze`` command's driver) ends with ``finish()`` too."""
    for name, doc in sorted(DOCS.items()):
        direct = sorted(f["finding_id"] for f in findings_of(doc, raw[name]))
        driven = sorted(f.finding_id for f in analyze_lines(raw[name], detector_config(doc)))
        assert driven == direct, name


def test_every_modern_kind_is_proven_by_some_scenario() -> None:
    expected = {p["kind"] for doc in DOCS.values() for p in doc["expect"]}
    assert len(MODERN_KINDS) == 19
    assert expected >= MODERN_KINDS


def test_the_modern_incidents_have_scenarios() -> None:
    incidents = {doc.get("incident") for doc in DOCS.values()}
    assert incidents >= {"KAFKA-16147", "KAFKA-19974", "KAFKA-20442"}


def test_healthy_scenarios_expect_nothing_and_are_exhaustive() -> None:
    healthy = {n: d for n, d in DOCS.items() if n.startswith("healthy/")}
    assert len(healthy) >= 7
    for name, doc in healthy.items():
        assert doc["expect"] == [] and doc["exhaustive"] is True, name


def test_each_scenario_has_its_own_partition_and_groups() -> None:
    """So the whole library can go through one job: another scenario's later records must not
    move a scenario's partition clock past its end."""
    partitions = [doc["partition"] for doc in DOCS.values()]
    assert len(partitions) == len(set(partitions))
    assert all(0 <= p < 50 for p in partitions)
    seen: set[str] = set()
    for name, doc in DOCS.items():
        mine = groups(doc)
        assert not mine & seen, name
        seen |= mine


def _rebalance_timeouts_ms(doc: Mapping[str, Any]) -> list[int]:
    out = []
    for w in doc["writes"]:
        for spec in (w.get("members") or {}).values():
            if isinstance(spec, dict):
                out.append(int(spec.get("rebalance_timeout_ms", 300_000)))
    return out or [300_000]


@pytest.mark.parametrize("name", sorted(DOCS))
def test_scenario_ends_with_a_late_enough_clock(name: str) -> None:
    """The last write is a clock, at least the confirmation window after every other write,
    and past each time threshold the scenario expects (counted from its last other write,
    which is no earlier than the state that started the clock)."""
    doc = DOCS[name]
    *body, last = doc["writes"]
    assert last.get("clock") is True, "the last write must be the clock"
    end = float(last["at"]) * 1000
    latest = max(float(w["at"]) for w in body) * 1000
    assert end - latest >= MODERN_CONFIRM_MS
    for pattern in doc["expect"]:
        kind = pattern["kind"]
        if kind == "revocation_overdue":
            needed = max(_rebalance_timeouts_ms(doc)) + REVOCATION_GRACE_MS
        else:
            needed = THRESHOLDS_MS.get(kind, MODERN_CONFIRM_MS)
        assert end - latest > needed, f"{kind} needs the clock {needed} ms after the last write"
