"""The KIP-848 / streams checks on hand-built records (``tests.modern_log``; milliseconds; the
scenario library builds the same kinds with Kafka's own serialisers).  Each run goes through
both of the engine's readings of a record, the typed one (raw bytes, as the job reads them) and
the ``groupwatch decode`` JSON one, and they must agree."""

from __future__ import annotations

import pytest

from groupwatch.detect import Analyzer, DetectorConfig, GroupState
from groupwatch.detect.findings import Finding
from tests.modern_log import BASE, ORDERS, G, Log

T = ORDERS


def healthy_start() -> Log:
    """Two members, A then B joining: A revokes 2-3 (UNREVOKED at epoch 1), B gets them at 2."""
    log = Log().names(0)
    log.member("A", 1).epoch(1, 1).target("A", [0, 1, 2, 3], 1).assignment_epoch(1, 1)
    log.current("A", 1, 0, [0, 1, 2, 3], 1)
    log.member("B", 5).epoch(2, 5).target("A", [0, 1], 5).target("B", [2, 3], 5)
    log.assignment_epoch(2, 5).current("B", 2, 2, [], 5)  # B waits UNRELEASED
    log.current("A", 1, 1, [0, 1], 6, pending=[2, 3])  # A told to revoke
    log.current("A", 2, 0, [0, 1], 7)  # A revoked
    log.current("B", 2, 0, [2, 3], 8)  # B receives them
    return log


def run(log: Log, config: DetectorConfig | None = None) -> list[Finding]:
    """The findings over the log's raw records; over its decoded lines they are the same."""
    found = {}
    for form, lines in (("raw", log.raw()), ("decoded", log.lines)):
        analyzer = Analyzer(config)
        found[form] = [f for line in lines for f in analyzer.feed(line)] + analyzer.finish()
    assert found["raw"] == found["decoded"]
    return found["raw"]


def kinds(found: list[Finding]) -> set[str]:
    return {f.kind for f in found if f.severity != "info"}


def test_a_healthy_revocation_round_raises_nothing() -> None:
    assert kinds(run(healthy_start().clock(60))) == set()


def test_double_ownership_is_raised_once_it_has_held_the_confirmation_time() -> None:
    log = healthy_start()
    log.current("A", 2, 0, [0, 1, 2], 20)  # A takes 2 back while B holds it
    found = run(log.clock(40))
    owned = [f for f in found if f.kind == "partition_owned_twice"]
    assert [(f.topic, f.partition, f.members) for f in owned] == [("orders", 2, ("A", "B"))]
    assert owned[0].evidence["since_ms"] == BASE + 20_000
    # Judged before the confirmation time has passed: not yet.
    assert "partition_owned_twice" not in kinds(
        run(healthy_start().current("A", 2, 0, [0, 1, 2], 20).clock(25))
    )


def test_a_violation_that_a_later_write_repairs_is_not_raised() -> None:
    log = healthy_start()
    log.current("A", 2, 0, [0, 1, 2], 20).current("A", 2, 0, [0, 1], 21)
    assert "partition_owned_twice" not in kinds(run(log.clock(60)))


def test_records_of_one_write_are_judged_together() -> None:
    # One write moves partition 1 from A's target to B's: B's new target comes first, so
    # between the two records the target gives 1 to both; only the write as a whole counts.
    log = healthy_start()
    log.epoch(3, 10).target("B", [1, 2, 3], 10).target("A", [0], 10).assignment_epoch(3, 10)
    log.current("A", 2, 1, [0], 10, pending=[1])
    log.current("A", 3, 0, [0], 11)
    log.current("B", 3, 0, [1, 2, 3], 12)
    assert kinds(run(log.clock(60))) == set()
    # The same two target records written apart (one second) overlap for that second only:
    # under the confirmation time, still nothing.
    apart = healthy_start()
    apart.epoch(3, 10).target("B", [1, 2, 3], 10).target("A", [0], 11).assignment_epoch(3, 11)
    assert kinds(run(apart.clock(60))) == set()


def test_kafka_19974_same_epoch_handover() -> None:
    log = healthy_start()
    # A is UNREVOKED at epoch 2 holding 1 pending; its epoch is bumped to 3 while still
    # pending (the bug), it releases at 3, and B receives 1 at 3.
    log.epoch(3, 10).target("A", [0], 10).target("B", [1, 2, 3], 10).assignment_epoch(3, 10)
    log.current("A", 3, 1, [0], 10, pending=[1])
    log.current("A", 3, 0, [0], 11)
    log.current("B", 3, 0, [1, 2, 3], 12)
    found = run(log.clock(60))
    assert kinds(found) == {"handover_epoch_not_increased"}
    known = run(log, DetectorConfig(broker_version="4.1.1"))
    assert kinds(known) == {"handover_epoch_not_increased_known"}


def test_handover_while_the_previous_holder_still_holds_it() -> None:
    log = healthy_start()
    log.epoch(3, 10).target("A", [0], 10).target("B", [1, 2, 3], 10).assignment_epoch(3, 10)
    log.current("B", 3, 0, [1, 2, 3], 10)  # before A revoked 1
    log.current("A", 3, 0, [0], 11)
    found = run(log.clock(60))
    assert "handover_while_held" in kinds(found)


def test_state_shape_and_epoch_order() -> None:
    log = healthy_start()
    log.current("B", 2, 1, [2, 3], 10)  # UNREVOKED with nothing pending
    log.current("A", 5, 0, [0, 1], 10)  # above the assignment epoch 2 and group epoch 2
    assert kinds(run(log.clock(60))) >= {"member_state_inconsistent", "epoch_order_violation"}


def test_unknown_state_byte_and_regression() -> None:
    log = healthy_start()
    log.current("B", 2, 127, [2, 3], 10).epoch(1, 11)
    found = run(log.clock(60))
    assert {"member_state_unknown", "epoch_regression"} <= kinds(found)


def test_stable_member_off_target_and_outside_subscription() -> None:
    log = healthy_start()
    log.current("A", 2, 0, [0], 10)  # STABLE at epoch 2 without partition 1 of its target
    found = run(log.clock(60))
    assert kinds(found) == {"stable_member_off_target"}
    log2 = healthy_start().member("A", 10, topics=("payments",))
    found2 = run(log2.clock(60))
    assert "assignment_outside_subscription" in kinds(found2)


def test_unnamed_topics_are_said_not_guessed() -> None:
    log = healthy_start()
    log.lines = [line for line in log.lines if line["record_type_id"] != 1]
    found = run(log.clock(60))
    assert kinds(found) == set()
    assert [f.topic for f in found if f.kind == "topic_id_unresolved"] == [T]
    named = run(log.clock(61), DetectorConfig(topic_names={T: "orders"}))
    assert not [f for f in named if f.kind == "topic_id_unresolved"]


def test_target_overlap() -> None:
    log = healthy_start().target("B", [1, 2, 3], 10)
    assert "target_overlap" in kinds(run(log.clock(60)))


@pytest.mark.parametrize(
    ("stuck", "kind", "within"),
    [
        ("unrevoked", "revocation_overdue", 60 + 30),
        ("unreleased", "unreleased_too_long", 300),
        ("away", "static_member_away_too_long", 45),
        ("behind", "assignment_epoch_behind", 300),
    ],
)
def test_stuck_states_are_raised_after_their_time_only(stuck: str, kind: str, within: int) -> None:
    def build() -> Log:
        log = healthy_start()
        if stuck == "unrevoked":
            log.epoch(3, 10).target("A", [0], 10).target("B", [1, 2, 3], 10)
            log.assignment_epoch(3, 10).current("A", 2, 1, [0], 10, pending=[1])
        elif stuck == "unreleased":
            log.current("B", 2, 2, [2], 10)  # waits for 3, which nobody holds
        elif stuck == "away":
            log.member("B", 10, instance_id="b-1").current("B", -2, 0, [2, 3], 10)
        else:
            log.epoch(3, 10)
        return log

    early = run(build().clock(10 + within - 1))
    late = run(build().clock(10 + within + 1))
    assert kind not in kinds(early)
    assert kind in kinds(late)


def test_a_static_member_replaced_at_its_epoch_is_a_healthy_handover() -> None:
    log = healthy_start().member("B", 9, instance_id="b-1").current("B", 2, 0, [2, 3], 9)
    log.current("B", -2, 0, [2, 3], 10)
    # Back within the session timeout under a new member id: old id's tombstones, then the
    # new member inherits the assignment at the same epoch.
    log.gone("B", 20).member("B2", 20, instance_id="b-1").target("B2", [2, 3], 20)
    log.current("B2", 2, 0, [2, 3], 20)
    assert kinds(run(log.clock(80))) == set()


def test_the_state_round_trips_and_batching_does_not_matter() -> None:
    log = healthy_start().current("A", 2, 0, [0, 1, 2], 20).clock(40)
    whole = run(log)
    analyzer = Analyzer()
    found: list[Finding] = []
    for i, line in enumerate(log.lines):
        found += analyzer.feed(line)
        if i % 3 == 0:  # save and restore, as the job does between batches
            states = {g: GroupState.loads(s.dumps()) for g, s in analyzer.states.items()}
            clocks = analyzer.clocks
            analyzer = Analyzer(states=states)
            analyzer.clocks = clocks
    found += analyzer.finish()
    assert sorted(f.finding_id for f in found) == sorted(f.finding_id for f in whole)
    assert any(f.kind == "partition_owned_twice" for f in whole)


def test_group_deletion_starts_over() -> None:
    log = healthy_start().current("A", 2, 0, [0, 1, 2], 20)
    log.gone("A", 21).gone("B", 21).add(6, {"group_id": G}, None, 21).add(
        3, {"group_id": G}, None, 21
    )
    analyzer = Analyzer()
    for line in log.clock(60).lines:
        analyzer.feed(line)
    assert analyzer.finish() == []
    modern = analyzer.states[G].modern
    assert modern is not None and not modern.members and modern.group_epoch is None
