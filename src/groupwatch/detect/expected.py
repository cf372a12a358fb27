"""The one adapter to the assignor of issue 4: what a correct, generation-aware leader assigns.

Everything the engine needs from ``groupwatch.assignor`` goes through this module, so an API
change there touches only here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from groupwatch.assignor import (
    AssignorError,
    Claims,
    MemberSubscription,
    TopicPartition,
    assign,
    read_claims,
)
from groupwatch.assignor.claims import member_generations
from groupwatch.assignor.invariants import balance_violations, can_improve_balance
from groupwatch.detect.model import GroupSnapshot, MemberState


@dataclass(frozen=True, slots=True)
class Expected:
    """The assignor's answer for one snapshot: member -> partitions, and the withheld ones."""

    assignment: Mapping[str, frozenset[TopicPartition]]
    withheld: frozenset[TopicPartition]
    #: Which of Kafka's algorithms ran (``constrained``/``general``/``empty``).
    path: str

    def owner_of(self) -> dict[TopicPartition, str]:
        return {tp: m for m, tps in self.assignment.items() for tp in tps}


@dataclass(frozen=True, slots=True)
class NoExpected:
    """Why there is no expected assignment (Kafka's own assignor fails, or bad input)."""

    reason: str


def member_input(
    m: MemberState, protocol: str, stale: Collection[TopicPartition] = ()
) -> MemberSubscription:
    """What the leader's assignor reads from this member (reference §3.1-3.3), less the
    ``stale`` claims a generation-aware leader would not take as owned.

    ``sticky`` (eager) reads only its user data: previous assignment and generation.
    ``cooperative-sticky`` reads ``owned_partitions`` and ``generation_id``, falling back to
    the generation in its user data.  Either compares other claimants with the subscription's
    ``generation_id`` (:func:`groupwatch.assignor.claims.member_generations`).
    """
    generation, rival = member_generations(
        protocol, m.subscription_generation, m.user_data_kind, m.user_data_generation
    )
    owned = (m.user_data_previous or ()) if protocol == "sticky" else m.owned_partitions
    if stale:
        owned = tuple(tp for tp in owned if tp not in stale)
    return MemberSubscription(
        member_id=m.member_id,
        topics=tuple(m.topics),
        owned_partitions=tuple(owned),
        generation=generation,
        rack_id=m.rack_id,
        rival_generation=rival,
    )


def expected_assignment(
    snapshot: GroupSnapshot,
    partitions_per_topic: Mapping[str, int],
    stale: Mapping[str, Collection[TopicPartition]] | None = None,
) -> Expected | NoExpected:
    """Re-run Kafka's assignor for ``snapshot.protocol`` on the snapshot's subscriptions.

    Members are passed in record order (the order the leader saw them); topics with no known
    partition count are left out, as Kafka leaves out topics without metadata.  ``stale``:
    member -> claims inferred stale from the records, left out of what that member owns.
    """
    protocol = snapshot.protocol or ""
    gone = stale or {}
    members = [member_input(m, protocol, gone.get(m.member_id, ())) for m in snapshot.members]
    counts = {t: n for t, n in partitions_per_topic.items() if n > 0}
    try:
        result = assign(protocol, counts, members)
    except AssignorError as exc:
        return NoExpected(f"{type(exc).__name__}: {exc}")
    return Expected(
        assignment={m: frozenset(tps) for m, tps in result.assignment.items()},
        withheld=frozenset(result.withheld),
        path=result.path,
    )


def kafka_claims(
    snapshot: GroupSnapshot,
    partitions_per_topic: Mapping[str, int],
    stale: Mapping[str, Collection[TopicPartition]] | None = None,
) -> Claims:
    """Every claim read as Kafka's assignor of ``snapshot.protocol`` reads it, on the very input
    :func:`expected_assignment` gives the re-run (so both judge each claim alike)."""
    protocol = snapshot.protocol or ""
    gone = stale or {}
    members = [member_input(m, protocol, gone.get(m.member_id, ())) for m in snapshot.members]
    counts = {t: n for t, n in partitions_per_topic.items() if n > 0}
    return read_claims(protocol, counts, members)


def balance_problems(
    assignment: Mapping[str, Sequence[TopicPartition]],
    subscriptions: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
) -> list[str]:
    """Kafka's balance definitions (reference §4.7) on an actual assignment.

    Two checks, both of which every assignment Kafka's sticky assignors produce passes: the
    test suite's ``verifyValidityAndBalance`` (members two or more apart share no assigned
    topic) and the general builder's ``isBalanced`` (no member that could take more is
    subscribed to a partition whose owner has two or more partitions more than it).
    """
    sizes = [len(tps) for tps in assignment.values()]
    if not sizes or max(sizes) - min(sizes) <= 1:
        return []  # fully balanced: neither check can fail (and both are quadratic)
    typed = {m: list(tps) for m, tps in assignment.items()}
    problems = [v.detail for v in balance_violations(typed)]
    if can_improve_balance(typed, subscriptions, partitions_per_topic):
        count = {m: len(tps) for m, tps in typed.items()}
        low = min(count, key=lambda m: count[m])
        high = max(count, key=lambda m: count[m])
        problems.append(
            f"partitions could move towards less loaded subscribers (e.g. {high} has "
            f"{count[high]}, {low} has {count[low]})"
        )
    return problems
