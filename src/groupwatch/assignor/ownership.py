"""Who validly owns what before the assignment: ``AbstractStickyAssignor.allSubscriptionsEqual``.

Besides answering whether every member has the same subscription (which picks the builder),
Kafka's method resolves conflicting claims per partition (KIP-341/KIP-792/KAFKA-14639): the
claim at the highest generation wins, and a partition claimed twice at the same generation
belongs to nobody.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupwatch.assignor.group import IndexedGroup


@dataclass(frozen=True, slots=True)
class ResolvedOwnership:
    """The outcome of resolving every member's claims.

    ``owned`` maps each member (in Java map order) to the partitions it validly owns, as an
    insertion-ordered set (a dict with ``None`` values) in claim order.  ``claimed_by_several``
    holds the partitions that two members claimed at the same generation.
    """

    all_subscriptions_equal: bool
    owned: dict[int, dict[int, None]]
    claimed_by_several: set[int]


def resolve_ownership(group: IndexedGroup) -> ResolvedOwnership:
    """Compare the subscriptions and resolve the claims, visiting members in Java map order."""
    equal = True
    subscribed: set[str] = set()
    previous_owner: dict[int, int] = {}
    owned: dict[int, dict[int, None]] = {}
    claimed_by_several: set[int] = set()
    generations = group.generations
    for member in group.java_map_order:
        topics = group.subscription_names[member]
        if not subscribed:
            subscribed.update(topics)
        elif equal and not (len(topics) == len(subscribed) and subscribed.issuperset(topics)):
            equal = False
        mine: dict[int, None] = {}
        owned[member] = mine
        my_generation = generations[member]
        for partition in group.claimed[member]:
            other = previous_owner.get(partition)
            if other is None:
                mine[partition] = None
                previous_owner[partition] = member
                continue
            other_generation = generations[other]
            if my_generation == other_generation:
                # same generation: neither claim is valid (the partition is up for grabs)
                claimed_by_several.add(partition)
                owned[other].pop(partition, None)
                previous_owner[partition] = member
            elif my_generation > other_generation:
                mine[partition] = None
                owned[other].pop(partition, None)
                previous_owner[partition] = member
    return ResolvedOwnership(equal, owned, claimed_by_several)
