"""Differential test: static members of Java's ``StickyAssignor`` against Kafka's own classes.

Static members' ids are ``<group.instance.id>-<uuid>``; a restarted one comes back with a new
uuid and no user data (a new process has had no assignment), claiming nothing until its first
``onAssignment``.  The leader fills its ``HashMap`` of subscriptions in JoinGroup-response
order, so every round is also run with the members in shuffled orders: whatever the order the
leader saw them in, the re-run must give what Kafka gives for that order.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator

import pytest

from groupwatch.assignor import MemberSubscription, TopicPartition, assign
from tests.jvm import java, kafka_classpath
from tests.oracle.assign_client import JavaOracle
from tests.oracle.test_assign_differential import Case, Tally, _compare

pytestmark = pytest.mark.oracle

GROUPS = 40


def _id(rng: random.Random, instance: str) -> str:
    return f"{instance}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def _rounds(seed: int) -> Iterator[Case]:
    """A static group's life: members join one by one, some restart (new member id, no user
    data), some join later; each round's assignment is the next round's user data."""
    rng = random.Random(seed)
    topics = {f"orders-{i}": rng.randint(1, 12) for i in range(rng.randint(1, 3))}
    instances = [f"static-{seed}-pod-{i}" for i in range(rng.randint(2, 8))]
    ids = {i: _id(rng, i) for i in instances}
    owned: dict[str, tuple[TopicPartition, ...]] = {}
    gen: dict[str, int | None] = {}
    order: list[str] = []
    generation = 0
    for r in range(rng.randint(3, 7)):
        if r < len(instances) or rng.random() < 0.3:
            for inst in instances:
                if ids[inst] not in order:
                    order.append(ids[inst])
                    owned[ids[inst]], gen[ids[inst]] = (), None
                    break
        if rng.random() < 0.5 and order:
            # A restart: the same instance under a new member id, with no user data.
            old = rng.choice(order)
            inst = next(i for i, m in ids.items() if m == old)
            ids[inst] = _id(rng, inst)
            order[order.index(old)] = ids[inst]
            owned[ids[inst]], gen[ids[inst]] = (), None
        members = [MemberSubscription(m, tuple(topics), owned[m], gen[m], None) for m in order]
        yield Case("sticky", dict(topics), members, None, f"seed={seed} round={r}")
        shuffled = members[:]
        rng.shuffle(shuffled)
        yield Case("sticky", dict(topics), shuffled, None, f"seed={seed} round={r} shuffled")
        generation += 1
        result = assign("sticky", topics, members)
        for m in order:
            owned[m], gen[m] = tuple(result.assignment[m]), generation


@pytest.fixture(scope="module")
def oracle() -> Iterator[JavaOracle]:
    with JavaOracle(java(), kafka_classpath()) as running:
        yield running


def test_static_members_restarts_and_member_order_match_kafka(oracle: JavaOracle) -> None:
    tally = Tally()
    for seed in range(GROUPS):
        for case in _rounds(seed):
            _compare(oracle, case, tally)
    print(f"\ncompared {tally.compared} static-member assignments with Kafka: {tally}")
    assert tally.compared >= 200
