"""Hypothesis properties of the sticky assignors (deterministic: derandomized, fixed examples)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.assignor import AssignmentResult, MemberSubscription, TopicPartition, assign
from groupwatch.assignor.invariants import (
    can_improve_balance,
    is_balanced,
    moved_partitions,
    validity_violations,
)

PROPS = settings(derandomize=True, max_examples=150, deadline=None, database=None)

protocols = st.sampled_from(["sticky", "cooperative-sticky"])


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, int], list[MemberSubscription]]:
    n_topics = draw(st.integers(1, 5))
    ppt = {f"t{i}": draw(st.integers(0, 8)) for i in range(n_topics)}
    topics = list(ppt)
    n = draw(st.integers(1, 8))
    equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    members = []
    for i in range(n):
        subs = common if equal else draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        members.append(MemberSubscription(f"m{i}", tuple(subs)))
    order = draw(st.permutations(members))
    return ppt, list(order)


def _subs(members: list[MemberSubscription]) -> dict[str, tuple[str, ...]]:
    return {m.member_id: m.topics for m in members}


def _feed_back(
    members: list[MemberSubscription], result: AssignmentResult, generation: int
) -> list[MemberSubscription]:
    return [
        MemberSubscription(m.member_id, m.topics, result.assignment[m.member_id], generation)
        for m in members
    ]


def _settle(
    protocol: str, ppt: dict[str, int], members: list[MemberSubscription]
) -> AssignmentResult:
    """Rebalance until nothing is withheld (cooperative follow-up rebalances, at most 4)."""
    result = assign(protocol, ppt, members)
    generation = 1
    while result.withheld and generation < 5:
        members = _feed_back(members, result, generation)
        result = assign(protocol, ppt, members)
        generation += 1
    return result


@PROPS
@given(protocols, groups())
def test_every_subscribed_partition_assigned_exactly_once_to_a_subscriber(
    protocol: str, group: tuple[dict[str, int], list[MemberSubscription]]
) -> None:
    ppt, members = group
    result = assign(protocol, ppt, members)
    assert set(result.assignment) == {m.member_id for m in members}
    assert validity_violations(result.assignment, _subs(members), ppt, result.withheld) == []
    assert result.withheld == ()  # a fresh group owns nothing, so nothing changes owner


@PROPS
@given(protocols, groups())
def test_balanced_by_kafkas_definition(
    protocol: str, group: tuple[dict[str, int], list[MemberSubscription]]
) -> None:
    ppt, members = group
    first = _settle(protocol, ppt, members)
    assert is_balanced(first.assignment)
    assert not can_improve_balance(first.assignment, _subs(members), ppt)
    # and after a member leaves
    if len(members) > 1:
        rest = _feed_back(members[1:], first, 7)
        again = _settle(protocol, ppt, rest)
        assert is_balanced(again.assignment)


@PROPS
@given(protocols, groups())
def test_no_partition_moves_when_nothing_changed(
    protocol: str, group: tuple[dict[str, int], list[MemberSubscription]]
) -> None:
    ppt, members = group
    settled = _settle(protocol, ppt, members)
    again = assign(protocol, ppt, _feed_back(members, settled, 9))
    assert moved_partitions(settled.assignment, again.assignment) == {}
    assert {m: set(v) for m, v in again.assignment.items()} == {
        m: set(v) for m, v in settled.assignment.items()
    }
    assert again.withheld == ()


@PROPS
@given(groups(), st.data())
def test_cooperative_never_hands_over_a_partition_its_valid_owner_still_claims(
    group: tuple[dict[str, int], list[MemberSubscription]], data: st.DataObject
) -> None:
    ppt, members = group
    first = assign("cooperative-sticky", ppt, members)
    # churn: drop some members, add one, change a subscription; survivors claim at generation 1
    keep = [m for m in members if data.draw(st.booleans())] or members[:1]
    claimed = _feed_back(keep, first, 1)
    claimed.append(MemberSubscription("newcomer", tuple(ppt)))
    second = assign("cooperative-sticky", ppt, claimed)
    valid_owner: dict[TopicPartition, str] = {}
    for m in claimed:
        for tp in m.owned_partitions:
            valid_owner[tp] = m.member_id
    for member_id, tps in second.assignment.items():
        for tp in tps:
            owner = valid_owner.get(tp)
            assert owner is None or owner == member_id, (
                f"{tp} given to {member_id}, {owner} owns it"
            )
    assert validity_violations(second.assignment, _subs(claimed), ppt, second.withheld) == []
