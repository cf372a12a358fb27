"""Findings that tell the truth: one reading of every claim per generation, claims without a
generation named as such (and inferred stale from the last completed generation), and
``sticky_divergence`` only where the re-run's inputs are the leader's.

The records have the shapes the real incidents write on the project's broker (GroupMetadataValue
v3): KAFKA-7026 on kafka-clients 2.2.2 (subscription v0, StickyAssignor user data v0 with no
generation; the stalled member leaves on its poll timeout and rejoins under a new member id),
KAFKA-14639 on 3.0.1 cooperative-sticky (subscription v1 with owned partitions and no
generation_id, the generation only in the cooperative user data).
"""

from __future__ import annotations

import re
from typing import Any

from groupwatch.detect import Analyzer, DetectorConfig, GroupState
from groupwatch.detect.findings import Finding
from groupwatch_dev.scenarios.builder import decoded_lines

C1 = "consumer-1-0c7e2a4e-3f7d-4d3b-9a55-5f1c9b0f2a11"
C2 = "consumer-1-9a1b7e52-8c1e-4a5e-b1f0-6f2d0c3e4b22"
#: C1 back from its stall: the 2.2.2 client reset its member id when it left the group.
C1_BACK = "consumer-1-4e0d9f13-2b6a-4c8e-8d7f-1a2b3c4d5e66"
TOPIC = "test"


def _member(mid: str, previous: list[int] | None, assigned: list[int]) -> dict[str, Any]:
    """A 2.2.2 StickyAssignor member: subscription v0; user data v0 (no generation) once it
    has had an assignment, none before."""
    m: dict[str, Any] = {
        "id": mid,
        "client_id": "consumer-1",
        "version": 0,
        "topics": [TOPIC],
        "assigned": {TOPIC: assigned},
    }
    if previous is not None:
        m["sticky"] = {"previous": {TOPIC: previous}}
    return m


def _record(generation: int, time: int, leader: str, *members: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": "kafka-7026-222",
        "generation": generation,
        "protocol": "sticky",
        "version": 3,
        "time": time,
        "leader": leader,
        "members": list(members),
    }


def kafka_7026_records() -> list[dict[str, Any]]:
    return [
        _record(1, 0, C1, _member(C1, None, [0])),
        _record(2, 10, C1, _member(C1, [0], [0]), _member(C2, None, [])),
        # C1's poll loop stalls past max.poll.interval.ms: it leaves, C2 takes test-0.
        _record(3, 60, C2, _member(C2, [], [0])),
        # C1 is back (new member id) still listing test-0; the 2.2.2 leader gives it to both.
        _record(4, 70, C2, _member(C2, [0], [0]), _member(C1_BACK, [0], [0])),
    ]


def run(records: list[dict[str, Any]], partitions: dict[str, int] | None = None) -> list[Finding]:
    analyzer = Analyzer(DetectorConfig(partitions_per_topic=partitions or {TOPIC: 1}))
    lines = decoded_lines({"records": records})
    return [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()


def of(found: list[Finding], kind: str) -> list[Finding]:
    return [f for f in found if f.kind == kind]


def test_kafka_7026_on_2_2_2_infers_the_stale_claim_and_names_no_generation() -> None:
    found = run(kafka_7026_records())
    assert {f.generation for f in found} == {4}
    (overlap,) = of(found, "assignment_overlap")
    assert set(overlap.members) == {C2, C1_BACK}
    (stale,) = of(found, "stale_owned_partitions")
    assert stale.member == C1_BACK
    assert "with no generation (its StickyAssignor user data v0 carries none)" in stale.detail
    assert (
        f"inferred: {C1_BACK} was not a member of generation 3, the last completed one, "
        f"which gave test-0 to {C2}"
    ) in stale.detail
    assert stale.evidence["inferred_from_generation"] == 3
    assert stale.evidence["claim_has_generation"] is False
    assert stale.evidence["inferred_stale"] == [{"topic": TOPIC, "partitions": [0]}]
    (honored,) = of(found, "stale_claim_honored")
    assert (honored.member, honored.topic, honored.partition) == (C1_BACK, TOPIC, 0)
    assert honored.detail.endswith(f"{C2} claims it with no generation and got it too")
    # Not "the same generation", and no claim is called "generation -1".
    assert not of(found, "owned_overlap_same_generation")
    assert not of(found, "owned_overlap_without_generation")
    assert not [f.detail for f in found if re.search(r"generation -1\b", f.detail)]
    # A 2.2.2 leader runs another assignor than the re-run: no sticky_divergence.
    assert not of(found, "sticky_divergence")


def test_kafka_7026_seen_from_the_rejoin_on_cannot_order_the_claims() -> None:
    """Without the last completed generation nothing is inferred: a claim overlap without a
    generation, said as such, not "the same generation -1"."""
    found = run(kafka_7026_records()[3:])
    (tie,) = of(found, "owned_overlap_without_generation")
    assert set(tie.members) == {C2, C1_BACK}
    assert "none of these claims carries a generation" in tie.detail
    assert "the last completed generation is not known" in tie.detail
    assert "StickyAssignor before 2.3 leaves the partition with every claimant" in tie.detail
    assert tie.evidence["claims"] == {C2: None, C1_BACK: None}
    assert not of(found, "owned_overlap_same_generation")
    assert not of(found, "stale_owned_partitions")
    assert not re.search(r"generation -1\b", tie.detail)


def test_a_claimant_that_was_in_the_last_generation_is_not_inferred_stale() -> None:
    """C1 keeps its member id (it never left): both were in generation 3, which does not tell
    which claim is current."""
    records = kafka_7026_records()
    records[2] = _record(3, 60, C2, _member(C2, [], [0]), _member(C1, [0], []))
    records[3] = _record(4, 70, C2, _member(C2, [0], [0]), _member(C1, [0], [0]))
    found = run(records)
    (tie,) = of(found, "owned_overlap_without_generation")
    assert "generation 3, the last completed one, had all of them as members" in tie.detail
    assert not of(found, "stale_owned_partitions")


def test_a_partition_the_last_generation_gave_to_nobody_is_not_inferred() -> None:
    records = kafka_7026_records()
    records[2] = _record(3, 60, C2, _member(C2, [], []))
    found = run(records)
    (tie,) = of(found, "owned_overlap_without_generation")
    assert "generation 3, the last completed one, gave it to nobody" in tie.detail
    assert not of(found, "stale_owned_partitions")


def test_the_state_keeps_the_last_completed_generations_as_json() -> None:
    analyzer = Analyzer(DetectorConfig(partitions_per_topic={TOPIC: 1}))
    for line in decoded_lines({"records": kafka_7026_records()[:3]}):
        analyzer.feed(line)
    state = analyzer.states["kafka-7026-222"]
    assert state.assigned is not None and state.assigned_before is not None
    assert (state.assigned.generation, state.assigned.members) == (3, (C2,))
    assert state.assigned.owner((TOPIC, 0)) == C2
    assert state.assigned_before.generation == 2
    back = GroupState.loads(state.dumps())
    assert back == state
    # Carried across batches as JSON, the rejoin is still judged against generation 3.
    resumed = Analyzer(analyzer.config, {"kafka-7026-222": back})
    (line,) = decoded_lines({"records": kafka_7026_records()[3:]})
    line.update(offset=3)
    assert [f.kind for f in resumed.feed(line)].count("stale_owned_partitions") == 1


# -- KAFKA-14639 on 3.0.1 cooperative-sticky ---------------------------------------------------


def _coop(mid: str, generation: int, owned: list[int], assigned: list[int]) -> dict[str, Any]:
    """A 3.0.1 member: subscription v1 (owned partitions, no generation_id), the generation
    only in its cooperative user data."""
    return {
        "id": mid,
        "version": 1,
        "topics": ["t"],
        "owned": {"t": owned},
        "coop": generation,
        "assigned": {"t": assigned},
    }


def _coop_record(generation: int, *members: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": "kafka-14639-301",
        "generation": generation,
        "protocol": "cooperative-sticky",
        "version": 3,
        "time": generation * 10,
        "leader": "B-1",
        "members": list(members),
    }


def _consistent(found: list[Finding]) -> None:
    """No claim is read two ways in one generation: a partition named validly owned by X is
    never X's stale claim in another finding of that generation."""
    valid = {
        (f.generation, f.evidence["valid_owner"], f.topic, f.partition)
        for f in of(found, "cooperative_revocation_violation")
    }
    for f in of(found, "stale_owned_partitions"):
        for row in f.evidence["stale"]:
            for p in row["partitions"]:
                assert (f.generation, f.member, row["topic"], p) not in valid, f.detail
    for f in of(found, "stale_claim_honored"):
        assert (f.generation, f.member, f.topic, f.partition) not in valid, f.detail


def test_kafka_14639_on_3_0_1_gives_one_account_of_each_claim() -> None:
    """A was late for generation 6's SyncGroup and rejoins generation 7 claiming t-0 and t-1
    from generation 5; nobody else claims them, yet the 3.0.1 assignor (which keeps only the
    highest generation's claims) hands t-0 to B in the same round."""
    records = [
        _coop_record(
            6, _coop("A-1", 5, [0, 1], [0, 1]), _coop("B-1", 5, [2], [2]), _coop("C-1", 5, [3], [3])
        ),
        _coop_record(
            7,
            _coop("B-1", 6, [2], [0, 2]),
            _coop("C-1", 6, [3], [3]),
            _coop("A-1", 5, [0, 1], [1]),
        ),
    ]
    found = run(records, {"t": 4})
    (violation,) = of(found, "cooperative_revocation_violation")
    assert violation.detail == (
        "t-0 is still validly owned by A-1 (claim with generation 5, the only claim on it) "
        "but assigned to B-1 in the same generation 7"
    )
    # The claim is valid, so nothing calls it stale.
    assert not of(found, "stale_owned_partitions")
    assert not of(found, "stale_claim_honored")
    _consistent(found)
    # A 3.0.1 leader (subscription v1) runs another assignor than the re-run.
    assert not of(found, "sticky_divergence")


def test_kafka_14639_on_3_0_1_a_contested_claim_is_stale_everywhere() -> None:
    """The same, but B claims t-0 at generation 6 too: A's claim on t-0 is stale (B's holds),
    on t-1 it holds; every finding of the generation says so."""
    records = [
        _coop_record(
            6, _coop("A-1", 5, [0, 1], [0, 1]), _coop("B-1", 5, [2], [2]), _coop("C-1", 5, [3], [3])
        ),
        _coop_record(
            7,
            _coop("B-1", 6, [0, 2], [2]),
            _coop("C-1", 6, [3], [3, 1]),
            _coop("A-1", 5, [0, 1], [0]),
        ),
    ]
    found = run(records, {"t": 4})
    (stale,) = of(found, "stale_owned_partitions")
    assert stale.member == "A-1"
    assert stale.detail == (
        "A-1 claims 2 partition(s) with generation 5; its claim on 1 of them is stale: t-0, "
        "cleared: B-1 claims it at generation 6, and Kafka compares the claim A-1 held by its "
        "subscription's generation: none"
    )
    assert stale.evidence["stale"] == [{"topic": "t", "partitions": [0]}]
    violations = of(found, "cooperative_revocation_violation")
    assert {(v.partition, v.evidence["valid_owner"]) for v in violations} == {
        (0, "B-1"),
        (1, "A-1"),
    }
    (honored,) = of(found, "stale_claim_honored")
    assert (honored.member, honored.partition) == ("A-1", 0)
    assert honored.detail == (
        "t-0 went to A-1 on a claim from generation 5, although B-1 claimed it at generation 6"
    )
    _consistent(found)


# -- sticky_divergence: only where the re-run's inputs are the leader's ------------------------


def _sticky(
    mid: str, version: int, previous: list[int] | None, generation: int | None, assigned: list[int]
) -> dict[str, Any]:
    m: dict[str, Any] = {
        "id": mid,
        "instance": mid.split("-")[0],
        "version": version,
        "topics": ["t"],
        "assigned": {"t": assigned},
    }
    if previous is not None:
        m["sticky"] = {"previous": {"t": previous}, "generation": generation}
    return m


def _sticky_records(version: int, a_gets: list[int], b_gets: list[int]) -> list[dict[str, Any]]:
    def rec(generation: int, *members: dict[str, Any]) -> dict[str, Any]:
        return {
            "group": "static-sticky",
            "generation": generation,
            "protocol": "sticky",
            "version": 3,
            "time": generation * 10,
            "leader": "A-1",
            "members": list(members),
        }

    return [
        rec(1, _sticky("A-1", version, None, None, [0, 1, 2, 3])),
        rec(
            2,
            _sticky("A-1", version, [0, 1, 2, 3], 1, a_gets),
            _sticky("B-1", version, None, None, b_gets),
        ),
    ]


def test_sticky_divergence_says_what_differs_for_a_current_leader() -> None:
    found = run(_sticky_records(3, [2, 3], [0, 1]), {"t": 4})
    (div,) = of(found, "sticky_divergence")
    assert div.generation == 2
    assert "the subscriptions the leader A-1 read (its subscription v3 says a 3.5+ client" in (
        div.detail
    )
    assert "A-1 got [t-2, t-3] where the re-run gives [t-0, t-1]" in div.detail
    # The same leader assigning as Kafka does: nothing.
    assert not of(run(_sticky_records(3, [0, 1], [2, 3]), {"t": 4}), "sticky_divergence")


def test_sticky_divergence_is_silent_for_an_older_leader() -> None:
    """A subscription v1 leader (2.4-3.3) runs an assignor that breaks ties its own way."""
    assert not of(run(_sticky_records(1, [2, 3], [0, 1]), {"t": 4}), "sticky_divergence")


def test_a_static_replacement_under_the_same_generation_is_not_compared() -> None:
    """The shape a 4.3.1 broker wrote for a real Java StickyAssignor group (6 partitions):
    pod-1 restarts under its group.instance.id, and the coordinator stores generation 3 again
    with pod-1's new member id, no user data, and the assignment generation 3's leader made."""

    def rec(generation: int, time: int, *members: dict[str, Any]) -> dict[str, Any]:
        return {
            "group": "static-sticky",
            "generation": generation,
            "protocol": "sticky",
            "version": 3,
            "time": time,
            "leader": "P0-1",
            "members": list(members),
        }

    first = rec(
        3,
        20,
        _sticky("P0-1", 3, [0, 1, 2], 2, [0, 1]),
        _sticky("P2-1", 3, None, None, [2, 5]),
        _sticky("P1-1", 3, [3, 4, 5], 2, [3, 4]),
    )
    again = rec(
        3,
        30,
        _sticky("P0-1", 3, [0, 1, 2], 2, [0, 1]),
        _sticky("P1-2", 3, None, None, [3, 4]),
        _sticky("P2-1", 3, None, None, [2, 5]),
    )
    records = [
        rec(1, 0, _sticky("P0-1", 3, None, None, [0, 1, 2, 3, 4, 5])),
        rec(
            2,
            10,
            _sticky("P0-1", 3, [0, 1, 2, 3, 4, 5], 1, [0, 1, 2]),
            _sticky("P1-1", 3, None, None, [3, 4, 5]),
        ),
        first,
    ]
    exact = run(records, {"t": 6})
    assert not of(exact, "sticky_divergence")  # the leader's own records: the re-run is exact
    found = run([*records, again], {"t": 6})
    assert not of(found, "sticky_divergence")
    # On the replacement's inputs the re-run differs: it is the comparison that is skipped.
    from groupwatch.detect.engine import event_from_line
    from groupwatch.detect.expected import Expected, expected_assignment
    from groupwatch.detect.model import GroupSnapshot

    snap = event_from_line(decoded_lines({"records": [again]})[0])
    assert isinstance(snap, GroupSnapshot)
    expected = expected_assignment(snap, {"t": 6})
    assert isinstance(expected, Expected)
    assert dict(expected.assignment) != {m.member_id: frozenset(m.assigned) for m in snap.members}


def _coop_v3(mid: str, rack: str | None, ud_generation: int, assigned: list[int]) -> dict[str, Any]:
    return {
        "id": mid,
        "version": 3,
        "topics": ["t"],
        "owned": {},
        "generation_id": 4,
        "coop": ud_generation,
        "rack": rack,
        "assigned": {"t": assigned},
    }


def test_sticky_divergence_tells_other_clients_writing_v3_from_java() -> None:
    """librdkafka sends an empty rack id, franz-go keeps its own user-data generation: their
    assignors are their own, so a difference says nothing about the group."""

    def records(rack: str | None, ud_generation: int) -> list[dict[str, Any]]:
        return [
            {
                "group": "coop-v3",
                "generation": 5,
                "protocol": "cooperative-sticky",
                "version": 3,
                "time": 0,
                "leader": "A-1",
                "members": [
                    _coop_v3("A-1", rack, ud_generation, [2, 3]),
                    _coop_v3("B-1", rack, ud_generation, [0, 1]),
                ],
            }
        ]

    java = of(run(records(None, 4), {"t": 4}), "sticky_divergence")
    assert len(java) == 1  # Java-like: compared, and it differs
    assert not of(run(records("", 4), {"t": 4}), "sticky_divergence")
    assert not of(run(records(None, 2), {"t": 4}), "sticky_divergence")
