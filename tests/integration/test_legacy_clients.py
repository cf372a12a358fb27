"""Historical client bugs on unmodified old releases of Kafka's Java client, on the test broker.

- KAFKA-7026 on kafka-clients 2.2.2 ``StickyAssignor``: two members assigned one partition in
  one generation, by the clients' own logs; ``groupwatch analyze`` and the job raise a critical
  ``assignment_overlap`` at that generation naming both, and tell it as it happened: C1's stale
  claim is inferred (its user data carries no generation), nothing says "generation -1" or "the
  same generation", and a 2.2.2 leader is not compared with today's assignor.
- KAFKA-13406 on kafka-clients 3.0.0 cooperative-sticky: every leader refuses its assignment
  ("Assignor supporting the COOPERATIVE protocol violates its requirements"), generations pass
  and ``__consumer_offsets`` skips them.
- KAFKA-14639 on kafka-clients 3.0.1 cooperative-sticky (the same late SyncGroup; 3.0.1 no longer
  validates): the leader hands a stale claimant's partitions to another member at once, both own
  them until the first learns of it; a critical ``cooperative_revocation_violation`` at that
  generation naming both.
- Healthy groups on the same releases: nothing above info (2.2.2: nothing at all).

Then ``analyze`` and the job agree finding for finding on all of them.  The reproductions are
functions of ``tests.legacy`` and fixtures here, so a test of another finding on the same
records is one more assertion.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groupwatch import config
from tests import verdicts
from tests.legacy import (
    COOPERATIVE_VIOLATION,
    Reproduction,
    healthy_lifecycle,
    owned_twice,
    reproduce_kafka_7026,
    reproduce_kafka_13406,
    reproduce_kafka_14639,
)
from tests.realgroups import dump_consumer_offsets, make_config, run_once

pytestmark = [pytest.mark.broker, pytest.mark.spark]

#: ``rebalance_stuck``'s records signal for runs of seconds, not minutes: the default 30 s of
#: silence lowered (the generations skipped keep their default, 3).  ``analyze`` and the job
#: both run with it, so every legacy group is judged by it (the healthy ones stay quiet).
STUCK_SETTINGS = ("detect.stuck_skipped_after_seconds=10",)


@pytest.fixture(scope="module")
def legacy_work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the clients' logs and the dumps go (kept by pytest for a failed run)."""
    return tmp_path_factory.mktemp("legacy-clients")


@pytest.fixture(scope="module")
def kafka_7026(broker: str, legacy_work: Path) -> Reproduction:
    return reproduce_kafka_7026(broker, legacy_work)


@pytest.fixture(scope="module")
def kafka_13406(broker: str, legacy_work: Path) -> Reproduction:
    return reproduce_kafka_13406(broker, legacy_work)


@pytest.fixture(scope="module")
def kafka_14639(broker: str, legacy_work: Path) -> Reproduction:
    return reproduce_kafka_14639(broker, legacy_work)


@pytest.fixture(scope="module")
def legacy_healthy(broker: str, legacy_work: Path) -> list[Reproduction]:
    return [
        healthy_lifecycle(broker, legacy_work, "2.2.2", "sticky", "legacy-healthy-sticky-222"),
        healthy_lifecycle(
            broker, legacy_work, "3.0.0", "cooperative-sticky", "legacy-healthy-coop-300"
        ),
    ]


@pytest.fixture(scope="module")
def legacy_groups(
    kafka_7026: Reproduction,
    kafka_13406: Reproduction,
    kafka_14639: Reproduction,
    legacy_healthy: list[Reproduction],
) -> dict[str, Reproduction]:
    return {r.group: r for r in (kafka_7026, kafka_13406, kafka_14639, *legacy_healthy)}


@pytest.fixture(scope="module")
def legacy_analysis(
    broker: str, legacy_groups: dict[str, Reproduction], legacy_work: Path
) -> verdicts.Analysis:
    """``groupwatch analyze DUMP --bootstrap-server`` over the broker's records once every
    reproduction is over (``GROUPWATCH_KEEP_LEGACY_DUMP`` names a file to keep the dump in)."""
    dump = verdicts.write_dump(
        dump_consumer_offsets(broker), legacy_work, "GROUPWATCH_KEEP_LEGACY_DUMP"
    )
    return verdicts.analyze(dump, broker, *STUCK_SETTINGS)


@pytest.fixture(scope="module")
def legacy_job(
    spark,
    broker: str,
    legacy_groups: dict[str, Reproduction],
    tmp_path_factory: pytest.TempPathFactory,
) -> verdicts.JobTables:  # type: ignore[no-untyped-def]
    """``groupwatch run --once`` over the same records, fresh tables."""
    cfg: config.Config = make_config(broker, tmp_path_factory.mktemp("legacy-job"), *STUCK_SETTINGS)
    run_once(spark, cfg)
    return verdicts.read_job_tables(spark, cfg)


# -- KAFKA-7026 ------------------------------------------------------------------------------------
def overlap_generation(r: Reproduction) -> tuple[int, frozenset[str]]:
    """The clients' own account: the generation in which C1 and C2 were both assigned
    partitions, and those partitions."""
    shared = r.clients.shared()
    assert len(shared) == 1, f"one generation of shared partitions expected: {shared}"
    ((generation, owners),) = shared.items()
    assert set(owners.values()) == {frozenset({"C1", "C2"})}
    return generation, frozenset(owners)


def test_kafka_7026_two_members_consume_one_partition(kafka_7026: Reproduction) -> None:
    generation, partitions = overlap_generation(kafka_7026)
    clients = kafka_7026.clients.members
    # C1 was removed for its stalled poll loop, and came back in the generation of the overlap.
    assert kafka_7026.clients.lines_with("consumer poll timeout has expired")
    assert generation in clients["C1"].joined and generation - 1 not in clients["C1"].joined
    assert clients["C2"].assigned[generation - 1] == {f"{kafka_7026.topic}-{p}" for p in range(4)}
    # Both fetched records of the shared partitions after that assignment.
    fetched: dict[str, set[str]] = {"C1": set(), "C2": set()}
    for _, line in kafka_7026.transcript:
        words = line.split(" ", 2)
        if words[0] == "assigned" and words[1] in fetched:
            fetched[words[1]].clear()
        elif words[0] == "fetched" and words[1] in fetched:
            fetched[words[1]].add(words[2])
    assert partitions <= fetched["C1"] and partitions <= fetched["C2"]
    assert generation in kafka_7026.generations()


def test_kafka_7026_raises_assignment_overlap_naming_both(
    kafka_7026: Reproduction, legacy_analysis: verdicts.Analysis, legacy_job: verdicts.JobTables
) -> None:
    generation, partitions = overlap_generation(kafka_7026)
    for what, found in (
        ("analyze", legacy_analysis.findings[kafka_7026.group]),
        ("the job", legacy_job.findings[kafka_7026.group]),
    ):
        overlaps = [
            f for f in found if f["kind"] == "assignment_overlap" and f["severity"] == "critical"
        ]
        assert {f["generation"] for f in overlaps} == {generation}, (what, overlaps)
        assert {f"{f['topic']}-{f['partition']}" for f in overlaps} == partitions, what
        for f in overlaps:
            assert sorted(m.split("-", 1)[0] for m in f["members"]) == ["C1", "C2"], (what, f)


def test_kafka_7026_is_told_as_it_happened(
    kafka_7026: Reproduction, legacy_analysis: verdicts.Analysis, legacy_job: verdicts.JobTables
) -> None:
    """The stale claim is inferred and said to be; no claim is called "generation -1" or "the
    same generation"; the 2.2.2 leader's assignments are not compared with today's assignor."""
    back, shared = overlap_generation(kafka_7026)
    alone = back - 1  # C2 alone (test_kafka_7026_two_members_consume_one_partition)
    for what, found in (
        ("analyze", legacy_analysis.findings[kafka_7026.group]),
        ("the job", legacy_job.findings[kafka_7026.group]),
    ):
        overlaps = [f for f in found if f["kind"] == "assignment_overlap"]
        assert {f"{f['topic']}-{f['partition']}" for f in overlaps} == shared, what
        (stale,) = [f for f in found if f["kind"] == "stale_owned_partitions"]
        assert stale["generation"] == back and stale["member"].startswith("C1-"), (what, stale)
        detail = stale["detail"]
        assert "with no generation (its StickyAssignor user data v0 carries none)" in detail
        assert f"was not a member of generation {alone}, the last completed one" in detail
        evidence = stale["evidence"]
        assert evidence["inferred_from_generation"] == alone, (what, evidence)
        assert {
            f"{r['topic']}-{p}" for r in evidence["stale"] for p in r["partitions"]
        } == shared, (what, evidence)
        honored = [f for f in found if f["kind"] == "stale_claim_honored"]
        assert {f"{f['topic']}-{f['partition']}" for f in honored} == shared, what
        assert all(f["member"] == stale["member"] and "got it too" in f["detail"] for f in honored)
        assert not [f for f in found if f["kind"].startswith("owned_overlap")], what
        assert not [f["detail"] for f in found if re.search(r"generation -1\b", f["detail"])]
        assert not [f for f in found if f["kind"] == "sticky_divergence"], what


# -- KAFKA-13406 -----------------------------------------------------------------------------------
def stuck_generations(r: Reproduction) -> list[int]:
    """The clients' own account: the generations whose leader refused its assignment."""
    return sorted({g for m in r.clients.members.values() for g in m.refused})


def test_kafka_13406_every_leader_refuses_and_generations_skip(kafka_13406: Reproduction) -> None:
    refused = stuck_generations(kafka_13406)
    assert len(refused) >= 4, refused
    assert kafka_13406.errors(COOPERATIVE_VIOLATION), "no leader threw"
    # A's SyncGroup came after the next rebalance had begun: its stale claim is the cause.
    assert kafka_13406.clients.lines_with("SyncGroup failed: The group began another rebalance")
    written = kafka_13406.generations()
    assert written == sorted(written)
    # No record of any refused generation; the first record after them jumps past all.
    assert not set(refused) & set(written), (refused, written)
    before = [g for g in written if g < refused[0]]
    after = [g for g in written if g > refused[-1]]
    assert before and after, written
    assert after[0] - before[-1] > len(refused), (before[-1], after[0], refused)
    # Taken while the group was stuck: the newest record is older than the refused generations.
    assert kafka_13406.records_during is not None
    assert max(kafka_13406.generations(kafka_13406.records_during)) < refused[0]
    # The broker's own view then: a rebalance in progress, with members.
    assert kafka_13406.broker_during is not None
    view = kafka_13406.broker_during
    assert view["group_state"] in ("PreparingRebalance", "CompletingRebalance"), view
    assert view["members"], view
    joined = kafka_13406.clients.generations()
    assert set(range(before[-1], after[0] + 1)) <= set(joined), "the clients saw every generation"


def stuck_span(r: Reproduction) -> tuple[int, int, list[str]]:
    """The clients' own account: the last generation completed before the refused ones, the
    first completed after them, and the members (client ids) that joined the former."""
    refused = stuck_generations(r)
    synced = sorted({g for m in r.clients.members.values() for g in m.synced})
    last = max(g for g in synced if g < refused[0])
    following = min(g for g in synced if g > refused[-1])
    members = sorted(n for n, m in r.clients.members.items() if last in m.joined)
    return last, following, members


def test_kafka_13406_raises_rebalance_stuck_naming_generations_and_members(
    kafka_13406: Reproduction, legacy_analysis: verdicts.Analysis, legacy_job: verdicts.JobTables
) -> None:
    last, following, members = stuck_span(kafka_13406)
    refused = stuck_generations(kafka_13406)
    assert len(refused) >= 4 and set(refused) <= set(range(last + 1, following)), refused
    # Nobody consumed meanwhile: no commit and no completed generation from the last completed
    # one to the records taken during the incident.
    during = kafka_13406.records_during
    assert during is not None and max(kafka_13406.generations(during)) == last
    raised: dict[str, tuple[object, ...]] = {}
    for what, found in (
        ("analyze", legacy_analysis.findings[kafka_13406.group]),
        ("the job", legacy_job.findings[kafka_13406.group]),
    ):
        stuck = [f for f in found if f["kind"] == "rebalance_stuck"]
        assert len(stuck) == 1, (what, [verdicts.describe(f) for f in found])
        (f,) = stuck
        assert f["severity"] == "error" and f["generation"] == last, (what, f)
        evidence = f["evidence"]
        assert evidence["confirmed_by"] == "skipped_generations", (what, evidence)
        assert evidence["skipped_generations"] == {
            "first": last + 1,
            "last": following - 1,
            "count": following - last - 1,
        }, (what, evidence)
        assert evidence["next_generation"] == following, (what, evidence)
        assert evidence["stuck_for_ms"] >= 10_000, (what, evidence)
        assert sorted(m.split("-", 1)[0] for m in f["members"]) == members, (what, f)
        assert f"{last + 1}..{following - 1}" in f["detail"], (what, f["detail"])
        raised[what] = (f["finding_id"], f["generation"], tuple(f["members"]), f["detail"])
    assert raised["analyze"] == raised["the job"], raised


# -- KAFKA-14639 -----------------------------------------------------------------------------------
def handed_over(r: Reproduction) -> tuple[int, frozenset[str]]:
    """The clients' own account: the partitions A and C owned at one moment, and the generation
    in which C was first assigned them."""
    twice = owned_twice(r.transcript)
    assert twice and set(twice.values()) == {frozenset({"A", "C"})}, twice
    partitions = frozenset(twice)
    c = r.clients.members["C"]
    return min(g for g, tps in c.assigned.items() if partitions <= tps), partitions


def test_kafka_14639_a_partition_revoked_and_assigned_in_one_rebalance(
    kafka_14639: Reproduction,
) -> None:
    generation, partitions = handed_over(kafka_14639)
    a = kafka_14639.clients.members["A"]
    # A's SyncGroup of the generation before came after the next rebalance began, so A went
    # into this one still holding what it synced last, and nobody refused anything (3.0.1).
    assert generation - 1 in a.joined and generation - 1 not in a.synced
    last = max(g for g in a.synced if g < generation)
    assert partitions <= a.assigned[last]
    assert not kafka_14639.errors() and not stuck_generations(kafka_14639)
    assert generation in kafka_14639.generations()


def test_kafka_14639_raises_cooperative_revocation_violation_naming_both(
    kafka_14639: Reproduction, legacy_analysis: verdicts.Analysis, legacy_job: verdicts.JobTables
) -> None:
    generation, partitions = handed_over(kafka_14639)
    for what, found in (
        ("analyze", legacy_analysis.findings[kafka_14639.group]),
        ("the job", legacy_job.findings[kafka_14639.group]),
    ):
        violations = [
            f
            for f in found
            if f["kind"] == "cooperative_revocation_violation" and f["severity"] == "critical"
        ]
        assert {f["generation"] for f in violations} == {generation}, (what, violations)
        assert {f"{f['topic']}-{f['partition']}" for f in violations} == partitions, what
        for f in violations:
            assert sorted(m.split("-", 1)[0] for m in f["members"]) == ["A", "C"], (what, f)


# -- healthy groups on the old releases ----------------------------------------------------------
def test_healthy_old_clients_raise_nothing_above_info(
    legacy_healthy: list[Reproduction],
    legacy_analysis: verdicts.Analysis,
    legacy_job: verdicts.JobTables,
) -> None:
    for r in legacy_healthy:
        about = f"kafka-clients {r.version}"
        assert r.clients.shared() == {}, "the clients shared no partition"
        assert r.errors() == [] and len(r.generations()) >= 5, r.group
        verdicts.verdict(r.group, about, legacy_analysis.findings.get(r.group, []), "analyze")
        verdicts.job_verdict(r.group, about, legacy_job)
        if r.version == "2.2.2":
            # A 2.2.2 leader's assignments are never compared with today's assignor: a healthy
            # 2.2.2 group raises nothing at all, not even sticky_divergence.
            for what, found in (
                ("analyze", legacy_analysis.findings.get(r.group, [])),
                ("the job", legacy_job.findings.get(r.group, [])),
            ):
                assert found == [], (what, [verdicts.describe(f) for f in found])


def test_analyze_and_the_job_agree_on_every_legacy_group(
    legacy_groups: dict[str, Reproduction],
    legacy_analysis: verdicts.Analysis,
    legacy_job: verdicts.JobTables,
) -> None:
    for group in legacy_groups:
        ours = {f["finding_id"]: f["kind"] for f in legacy_analysis.findings.get(group, [])}
        theirs = {f["finding_id"]: f["kind"] for f in legacy_job.findings.get(group, [])}
        assert ours == theirs, (group, sorted(ours.values()), sorted(theirs.values()))
    assert legacy_analysis.findings[next(iter(legacy_groups))], "KAFKA-7026 found nothing"
