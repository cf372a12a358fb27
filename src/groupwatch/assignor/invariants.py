"""Checks on an assignment, with Kafka's own definitions (reference §4.4, §4.7).

The findings engine reuses these: they take plain mappings (member -> partitions, member ->
subscribed topics), so they work on an observed assignment as well as on a computed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from groupwatch.assignor.model import TopicPartition

Assignment = Mapping[str, Sequence[TopicPartition]]
Subscriptions = Mapping[str, Iterable[str]]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: ``kind`` is a short code, ``detail`` says who and what."""

    kind: str
    detail: str


def is_fully_balanced(assignment: Assignment) -> bool:
    """``isFullyBalanced``: every member's count within one of every other's."""
    sizes = [len(tps) for tps in assignment.values()]
    return not sizes or max(sizes) - min(sizes) <= 1


def validity_violations(
    assignment: Assignment,
    subscriptions: Subscriptions,
    partitions_per_topic: Mapping[str, int],
    withheld: Iterable[TopicPartition] = (),
) -> list[Violation]:
    """Each subscribed partition assigned exactly once (or withheld), only to a subscriber."""
    out: list[Violation] = []
    subs = {m: set(ts) for m, ts in subscriptions.items()}
    owner: dict[TopicPartition, str] = {}
    for member, tps in assignment.items():
        for tp in tps:
            if tp.topic not in subs.get(member, ()):
                out.append(Violation("not-subscribed", f"{member} got {tp} without subscribing"))
            if not 0 <= tp.partition < partitions_per_topic.get(tp.topic, 0):
                out.append(Violation("no-such-partition", f"{member} got {tp}"))
            other = owner.get(tp)
            if other is not None:
                out.append(Violation("duplicate", f"{tp} assigned to {other} and {member}"))
            owner[tp] = member
    held = set(withheld)
    for tp in held & owner.keys():
        out.append(Violation("withheld-assigned", f"{tp} is withheld but assigned to {owner[tp]}"))
    subscribed_topics = {t for ts in subs.values() for t in ts}
    for topic in sorted(subscribed_topics):
        for p in range(partitions_per_topic.get(topic, 0)):
            tp = TopicPartition(topic, p)
            if tp not in owner and tp not in held:
                out.append(Violation("unassigned", f"{tp} has a subscriber but no owner"))
    return out


def balance_violations(assignment: Assignment) -> list[Violation]:
    """Kafka's test definition (``verifyValidityAndBalance``): two members whose counts differ
    by two or more must not share any topic in what they were assigned (otherwise a partition
    could have moved to the less loaded one)."""
    out: list[Violation] = []
    members = list(assignment)
    topics = {m: {tp.topic for tp in assignment[m]} for m in members}
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            la, lb = len(assignment[a]), len(assignment[b])
            if abs(la - lb) <= 1:
                continue
            shared = topics[a] & topics[b]
            if shared:
                more, less = (a, b) if la > lb else (b, a)
                out.append(
                    Violation(
                        "unbalanced",
                        f"{more} ({max(la, lb)}) and {less} ({min(la, lb)}) share "
                        f"{sorted(shared)}: a partition could move to {less}",
                    )
                )
    return out


def is_balanced(assignment: Assignment) -> bool:
    """Balanced by the definition of Kafka's ``AbstractStickyAssignorTest``."""
    return not balance_violations(assignment)


def can_improve_balance(
    assignment: Assignment, subscriptions: Subscriptions, partitions_per_topic: Mapping[str, int]
) -> bool:
    """The negation of ``GeneralAssignmentBuilder.isBalanced``: some member that does not hold
    every partition it could hold is subscribed to a partition whose owner has at least two
    partitions more than it."""
    sizes = {m: len(tps) for m, tps in assignment.items()}
    if not sizes or min(sizes.values()) >= max(sizes.values()) - 1:
        return False
    top: dict[str, int] = {}
    for m, tps in assignment.items():
        for tp in tps:
            top[tp.topic] = max(top.get(tp.topic, 0), sizes[m])
    for m, size in sizes.items():
        topics = [t for t in dict.fromkeys(subscriptions.get(m, ())) if t in partitions_per_topic]
        if size == sum(partitions_per_topic[t] for t in topics):
            continue
        if any(top.get(t, 0) > size + 1 for t in topics):
            return True
    return False


def moved_partitions(
    before: Assignment, after: Assignment
) -> dict[TopicPartition, tuple[str, str]]:
    """Partitions whose owner changed between two assignments: tp -> (old owner, new owner)."""
    old = {tp: m for m, tps in before.items() for tp in tps}
    new = {tp: m for m, tps in after.items() for tp in tps}
    return {tp: (old[tp], new[tp]) for tp in old.keys() & new.keys() if old[tp] != new[tp]}
