"""Differential test: our sticky assignors against Kafka's own Java classes, member by member.

A seeded generator builds random groups and runs several consecutive rebalances, feeding each
round's assignment back as the next round's owned partitions (with members joining, leaving,
changing subscriptions, missing a generation, or claiming a partition twice).  Every round is
sent to ``groupwatch.oracle.AssignOracle`` (one JVM for the whole run) and compared with
:func:`groupwatch.assignor.assign`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from groupwatch.assignor import (
    KafkaAssignorFailure,
    MemberSubscription,
    TopicPartition,
    assign,
)
from tests.jvm import java, kafka_classpath
from tests.oracle.assign_client import JavaOracle

pytestmark = pytest.mark.oracle

DEFAULT_GROUPS = 120  # × rounds ≈ 300 compared assignments
SLOW_GROUPS = 4300  # × rounds ≥ 10,000


@dataclass
class Case:
    protocol: str
    partitions_per_topic: dict[str, int]
    members: list[MemberSubscription]
    partition_racks: dict[str, list[list[str | None]]] | None
    label: str = ""


@dataclass
class Tally:
    compared: int = 0
    errors_both: int = 0
    order_differences: int = 0
    by_path: dict[str, int] = field(default_factory=dict)


def _member_ids(rng: random.Random, n: int) -> list[str]:
    style = rng.randrange(5)
    if style == 0:
        ids = [f"C{i}" for i in range(n)]
    elif style == 1:
        ids = [f"consumer{i + 1}" for i in range(n)]
    elif style == 2:
        ids = [f"consumer-grp-{i}-{rng.getrandbits(40):010x}" for i in range(n)]
    elif style == 3:
        width = len(str(n))
        ids = [f"c{i:0{width}d}" for i in range(n)]
    else:
        alphabet = "abcxyzABZ019-_.é"
        ids = list(
            {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(n)}
        )
    rng.shuffle(ids)
    return ids


def _topics(rng: random.Random, big: bool) -> dict[str, int]:
    n = rng.randint(1, 12 if not big else 40)
    names = [f"t{i}" if rng.random() < 0.7 else f"topic-{rng.getrandbits(20):x}" for i in range(n)]
    cap = 300 if big else 12
    ppt = {}
    for name in names:
        r = rng.random()
        ppt[name] = 0 if r < 0.04 else rng.randint(1, cap if r > 0.9 else max(2, cap // 4))
    return ppt


def _racks(rng: random.Random, ppt: dict[str, int]) -> dict[str, list[list[str | None]]]:
    pool = ["a", "b", "c", "d"][: rng.randint(2, 4)]
    out: dict[str, list[list[str | None]]] = {}
    for topic, count in ppt.items():
        rows: list[list[str | None]] = []
        for _ in range(count):
            rf = rng.randint(1, len(pool))
            row: list[str | None] = list(rng.sample(pool, rf))
            if rng.random() < 0.05:
                row.append(None)
            rows.append(row)
        out[topic] = rows
    return out


def _subscription(
    rng: random.Random, topics: list[str], mode: str, common: list[str]
) -> tuple[str, ...]:
    if mode == "equal":
        return tuple(common)
    if rng.random() < 0.03:
        return ()
    k = rng.randint(1, len(topics))
    sub = rng.sample(topics, k)
    if rng.random() < 0.05:
        sub.append("no-such-topic")
    return tuple(sub)


def _group_rounds(seed: int) -> Iterator[Case]:
    rng = random.Random(seed)
    protocol = rng.choice(["sticky", "cooperative-sticky"])
    big = rng.random() < 0.15
    ppt = _topics(rng, big)
    topics = list(ppt)
    n = rng.choice([1, 2, 3, rng.randint(2, 12), rng.randint(2, 40)])
    if big or rng.random() < 0.05:
        n = rng.randint(20, 300)
    ids = _member_ids(rng, n)
    mode = "equal" if rng.random() < 0.5 else "mixed"
    common = rng.sample(topics, rng.randint(1, len(topics)))
    use_racks = rng.random() < 0.3
    racks = _racks(rng, ppt) if use_racks else None
    rack_pool = ["a", "b", "c", "d", "e"]

    subs = {m: _subscription(rng, topics, mode, common) for m in ids}
    rack_of = {
        m: (rng.choice(rack_pool) if use_racks and rng.random() < 0.8 else None) for m in ids
    }
    owned: dict[str, tuple[TopicPartition, ...]] = {m: () for m in ids}
    gen: dict[str, int | None] = {m: None for m in ids}
    if rng.random() < 0.3:
        # start from random (possibly conflicting) claims at random generations
        all_tps = [TopicPartition(t, p) for t, c in ppt.items() for p in range(c)]
        for m in ids:
            if all_tps and rng.random() < 0.7:
                owned[m] = tuple(rng.sample(all_tps, rng.randint(0, min(len(all_tps), 6))))
                gen[m] = rng.choice([None, 1, 2, 3])
    generation = 3
    rounds = rng.randint(1, 4)
    for r in range(rounds):
        members = [MemberSubscription(m, subs[m], owned[m], gen[m], rack_of[m]) for m in ids]
        case = Case(protocol, dict(ppt), members, racks, f"seed={seed} round={r}")
        yield case
        try:
            result = assign(
                case.protocol, case.partitions_per_topic, case.members, case.partition_racks
            )
        except KafkaAssignorFailure:
            return  # Kafka fails here too (checked by the comparison); nothing to feed back
        generation += 1
        # feed back, with churn
        next_owned: dict[str, tuple[TopicPartition, ...]] = dict(owned)
        next_gen: dict[str, int | None] = dict(gen)
        for m in ids:
            if rng.random() < 0.08:
                continue  # missed this rebalance: keeps its stale claims and generation
            next_owned[m] = result.assignment[m]
            next_gen[m] = generation
        if rng.random() < 0.1 and len(ids) > 1:
            a, b = rng.sample(ids, 2)
            if next_owned[a]:
                # a same-generation double claim
                next_owned[b] = next_owned[b] + (rng.choice(next_owned[a]),)
                next_gen[b] = next_gen[a]
        owned, gen = next_owned, next_gen
        if rng.random() < 0.3 and len(ids) > 1:
            for m in rng.sample(ids, rng.randint(1, max(1, len(ids) // 10))):
                ids.remove(m)
        if rng.random() < 0.3:
            for m in _member_ids(rng, rng.randint(1, 3)):
                if m not in owned:
                    ids.insert(rng.randint(0, len(ids)), m)
                    subs[m] = _subscription(rng, topics, mode, common)
                    rack_of[m] = rng.choice(rack_pool) if use_racks else None
                    owned[m] = ()
                    gen[m] = None
        if mode == "mixed" and rng.random() < 0.2 and ids:
            m = rng.choice(ids)
            subs[m] = _subscription(rng, topics, mode, common)
        if rng.random() < 0.1:
            t = rng.choice(topics)
            ppt[t] += rng.randint(1, 3)
            if racks is not None:
                racks = _racks(rng, ppt)
        rng.shuffle(ids) if rng.random() < 0.2 else None


def _compare(oracle: JavaOracle, case: Case, tally: Tally) -> None:
    java_answer = oracle.run(
        case.protocol, case.partitions_per_topic, case.members, case.partition_racks
    )
    try:
        ours = assign(case.protocol, case.partitions_per_topic, case.members, case.partition_racks)
    except KafkaAssignorFailure as exc:
        assert "error" in java_answer, f"{case.label}: we failed ({exc}) but Kafka answered"
        tally.errors_both += 1
        tally.compared += 1
        return
    assert "error" not in java_answer, f"{case.label}: Kafka failed: {java_answer['error']}"
    assert java_answer["path"] == ours.path, case.label
    for m in case.members:
        theirs = [TopicPartition(t, p) for t, p in java_answer["assignment"][m.member_id]]
        mine = list(ours.assignment[m.member_id])
        assert sorted(mine) == sorted(theirs), (
            f"{case.label} [{case.protocol}, {ours.path}] member {m.member_id}: "
            f"ours {sorted(mine)} vs Kafka {sorted(theirs)}"
        )
        if mine != theirs:
            tally.order_differences += 1
    unassigned = sorted(TopicPartition(t, p) for t, p in java_answer["unassigned"])
    assigned = {tp for tps in ours.assignment.values() for tp in tps}
    ours_unassigned = sorted(
        TopicPartition(t, p)
        for t, c in ours.partitions_per_topic.items()
        for p in range(c)
        if TopicPartition(t, p) not in assigned
    )
    assert ours_unassigned == unassigned, f"{case.label}: unassigned differ"
    if case.protocol == "cooperative-sticky":
        assert sorted(ours.withheld) == unassigned, f"{case.label}: withheld differ"
    tally.compared += 1
    tally.by_path[ours.path] = tally.by_path.get(ours.path, 0) + 1


@pytest.fixture(scope="module")
def oracle() -> Iterator[JavaOracle]:
    with JavaOracle(java(), kafka_classpath()) as running:
        yield running


def _run(oracle: JavaOracle, seeds: range) -> Tally:
    tally = Tally()
    for seed in seeds:
        for case in _group_rounds(seed):
            _compare(oracle, case, tally)
    return tally


def test_parity_with_kafka_on_seeded_groups(oracle: JavaOracle) -> None:
    tally = _run(oracle, range(DEFAULT_GROUPS))
    print(f"\ncompared {tally.compared} assignments with Kafka: {tally}")
    assert tally.compared >= 250


@pytest.mark.slow
def test_parity_with_kafka_large_run(oracle: JavaOracle) -> None:
    tally = _run(oracle, range(10_000, 10_000 + SLOW_GROUPS))
    print(f"\ncompared {tally.compared} assignments with Kafka: {tally}")
    assert tally.compared >= 10_000
