"""A healthy group of Kafka's Java ``StickyAssignor`` with static members, one restarted: no
``sticky_divergence``, and the re-run is exact on every generation the leader assigned.

A restarted static member rejoins under its ``group.instance.id`` with a new member id; the
group is stable, so the coordinator does not rebalance: it stores the group again under the same
generation, the new member id in place of the old, with the new process's subscription (no user
data yet) next to the assignment the earlier leader made.  That record is not a leader's
assignment on those subscriptions, and the re-run must not be compared with it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic
from tests.realgroups import dump_consumer_offsets

pytestmark = pytest.mark.broker

GROUP = "static-sticky"
TOPIC = "static-sticky-orders"
PARTITIONS = 6


@pytest.fixture(scope="module")
def run(broker: str) -> dict[str, Any]:
    create_topic(broker, TOPIC, PARTITIONS)
    with JavaGroupMembers(broker) as members:
        names = [f"pod-{i}" for i in range(3)]
        for i, name in enumerate(names):
            members.join(name, GROUP, [TOPIC], "sticky", instance_id=f"{GROUP}-pod-{i}")
            members.wait_covered(names[: i + 1], PARTITIONS)
        first_id = members.wait_member_id("pod-1")
        members.leave("pod-1")  # a static member closes without leaving the group
        time.sleep(1.0)
        members.join("pod-1-restarted", GROUP, [TOPIC], "sticky", instance_id=f"{GROUP}-pod-1")
        restarted_id = members.wait_member_id("pod-1-restarted")
        members.wait_covered(["pod-0", "pod-1-restarted", "pod-2"], PARTITIONS)
        time.sleep(1.0)
        # One more rebalance, with the restarted member's own user data in it.
        members.join("pod-3", GROUP, [TOPIC], "sticky", instance_id=f"{GROUP}-pod-3")
        members.wait_covered(["pod-0", "pod-1-restarted", "pod-2", "pod-3"], PARTITIONS)
        time.sleep(1.0)
        errors = members.errors()
    return {
        "raw": dump_consumer_offsets(broker),
        "ids": (first_id, restarted_id),
        "errors": errors,
    }


def test_restarted_static_member_raises_no_sticky_divergence(run: dict[str, Any]) -> None:
    from groupwatch.detect import Analyzer, DetectorConfig
    from groupwatch.detect.decoded import decode_raw
    from groupwatch.detect.expected import Expected, expected_assignment
    from groupwatch.detect.model import GroupSnapshot

    first_id, restarted_id = run["ids"]
    assert first_id != restarted_id, "the client's log shows no new member id on restart"
    assert run["errors"] == []
    lines = [decode_raw(x) for x in run["raw"]]
    ours = [x for x in lines if x.get("group") == GROUP and x["record_type"] == "group_metadata"]
    # Ground truth from the records: the replacement is stored under the generation it joins.
    gens = [x["value"]["generation"] for x in ours if x["value"]]
    replaced = [
        x
        for x in ours
        if x["value"] and restarted_id in {m["member_id"] for m in x["value"]["members"]}
    ]
    assert replaced and gens.count(replaced[0]["value"]["generation"]) == 2, gens
    judged = 0
    for config in (DetectorConfig(partitions_per_topic={TOPIC: PARTITIONS}), DetectorConfig()):
        analyzer = Analyzer(config)
        found = [f for line in run["raw"] for f in analyzer.feed(line)] + analyzer.finish()
        mine = [f for f in found if f.group == GROUP]
        assert [f for f in mine if f.kind == "sticky_divergence"] == []
        assert [f for f in mine if f.severity != "info"] == []
    # The re-run is exact (not merely silenced) on each generation's own assignment.
    from groupwatch.detect.engine import event_from_line

    seen: set[int] = set()
    for line in run["raw"]:
        event = event_from_line(line)
        if not isinstance(event, GroupSnapshot) or event.group != GROUP or not event.members:
            continue
        if event.generation in seen or event.awaiting_assignment:
            continue  # the replacement's record repeats a generation: not a leader's output
        seen.add(event.generation)
        expected = expected_assignment(event, {TOPIC: PARTITIONS})
        assert isinstance(expected, Expected)
        actual = {m.member_id: frozenset(m.assigned) for m in event.members}
        assert {m: expected.assignment.get(m, frozenset()) for m in actual} == actual, (
            event.generation
        )
        judged += 1
    assert judged >= 4
