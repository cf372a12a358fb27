"""Kafka's own Java consumers as group members: every assignor, stalls and rejoins."""

from __future__ import annotations

import pytest

from groupwatch_dev.demo.java_members import JavaGroupMembers
from groupwatch_dev.demo.traffic import create_topic

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_members_share_the_partitions(broker: str, assignor: str) -> None:
    topic = f"jm-{assignor}"
    create_topic(broker, topic, 4)
    with JavaGroupMembers(broker) as members:
        members.join("m1", f"jm-{assignor}", [topic], assignor)
        members.wait_covered(["m1"], 4)
        members.join("m2", f"jm-{assignor}", [topic], assignor)
        owned = members.wait_covered(["m1", "m2"], 4)
        assert len(owned["m1"]) == len(owned["m2"]) == 2


def test_stalled_member_is_kicked_out_and_rejoins(broker: str) -> None:
    create_topic(broker, "jm-stall", 4)
    with JavaGroupMembers(broker) as members:
        members.join("a", "jm-stall", ["jm-stall"], "cooperative-sticky")
        members.join("b", "jm-stall", ["jm-stall"], "cooperative-sticky")
        members.wait_covered(["a", "b"], 4)
        members.stall("a", 9000)  # past max.poll.interval.ms (5 s): the group moves on without a
        members.wait_covered(["b"], 4, timeout=30)
        owned = members.wait_covered(["a", "b"], 4, timeout=30)
        assert owned["a"] and owned["b"]
