"""Which owned partitions count, for whom: the claims as kafka-clients 4.x's assignor reads them.

This is the one definition of a valid claim: the re-run assignor builds on it and the findings
engine judges claims by it (``groupwatch.detect.rules.reading``).  It is
``AbstractStickyAssignor.allSubscriptionsEqual`` of kafka-clients 4.3 (the same since 3.5,
KAFKA-14639), which besides telling whether every member subscribes alike reads every claim:

* members are visited in the leader's ``HashMap`` order, each member's claims in the order its
  member data lists them (claims on topics without metadata are skipped);
* a partition nobody claimed before is the claimant's, **whatever its generation**: a lower
  generation nobody contests is kept, on both the constrained and the general path;
* a partition claimed before is compared with the member holding the partition so far, or the
  last one to tie on it: the claimant's *member-data* generation against the holder's
  *subscription* ``generationId`` (absent or negative: -1).  Equal: the partition is nobody's
  (``partitionsWithMultiplePreviousOwners``); higher: the claimant takes it from the holder;
  lower: the claim is dropped;
* a partition once tied and then taken by a higher claimant still counts as owned for the
  general builder, but the constrained builder skips it (it "was claimed by multiple consumers
  already in the same generation").

Older clients did otherwise: kafka-clients 3.0-3.4 (``membersOfCurrentHighestGeneration``) and
2.x (``membersWithOldGeneration``) cleared every claim of a member behind the highest generation
seen, contested or not.  That is not what a 4.x leader does, so it is not the reading here.

The member data's generation (:func:`member_generations`): ``StickyAssignor`` takes partitions
and generation from its user data only (V1; V0 carries no generation); ``CooperativeSticky``
takes the subscription's ``generationId`` when it is >= 0, else the 4-byte generation of its
user data (unreadable user data: -1; no user data: none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from groupwatch.assignor.group import IndexedGroup
from groupwatch.assignor.model import (
    DEFAULT_GENERATION,
    MemberSubscription,
    TopicPartition,
)

#: Why Kafka drops a claim: ``tied`` (another claim at the same generation made the partition
#: nobody's), ``older`` (a claim at a higher generation holds it), ``tied_before`` (the claim
#: holds, but the partition was tied earlier, so the constrained builder skips it).
DropKind = Literal["tied", "older", "tied_before"]


@dataclass(frozen=True, slots=True)
class Dropped:
    """One claim Kafka does not count: the member whose claim beat or tied it, and the two
    generations Kafka compared (``generation``: this claim's, ``against``: the other's; the
    holder of a partition is compared by its subscription's generation)."""

    kind: DropKind
    by: int
    generation: int
    against: int
    #: it held the partition and a later claim took it (compared by its subscription's)
    displaced: bool = False


@dataclass(frozen=True, slots=True)
class ClaimReading:
    """Every member's claims read, in member and partition numbers of an :class:`IndexedGroup`.

    ``owned`` is Kafka's ``consumerToOwnedPartitions``: each member (Java map order) to its
    owned partitions (an insertion-ordered set, a dict with ``None`` values) in claim order;
    ``claimed_by_several`` its ``partitionsWithMultiplePreviousOwners``.  ``dropped``: (member,
    partition) -> why that claim does not count.  ``max_generation``: the highest member-data
    generation seen (-1 when none).
    """

    all_subscriptions_equal: bool
    owned: dict[int, dict[int, None]]
    claimed_by_several: set[int]
    dropped: dict[tuple[int, int], Dropped]
    max_generation: int

    @property
    def path(self) -> Literal["constrained", "general"]:
        """The builder Kafka runs next."""
        return "constrained" if self.all_subscriptions_equal else "general"

    def valid(self, member: int) -> list[int]:
        """The member's claims the builder Kafka runs next keeps as owned, in claim order."""
        mine = self.owned[member]
        if self.all_subscriptions_equal and self.claimed_by_several:
            return [p for p in mine if p not in self.claimed_by_several]
        return list(mine)


def read_group_claims(group: IndexedGroup) -> ClaimReading:
    """``allSubscriptionsEqual`` over ``group``: compare subscriptions, read every claim."""
    equal = True
    subscribed: set[str] = set()
    holder: dict[int, int] = {}  # allPreviousPartitionsToOwner
    owned: dict[int, dict[int, None]] = {}
    several: set[int] = set()
    dropped: dict[tuple[int, int], Dropped] = {}
    last_tie: dict[int, int] = {}  # partition -> the last member to tie on it
    generations = group.generations
    rivals = group.rival_generations
    for member in group.java_map_order:
        topics = group.subscription_names[member]
        if not subscribed:
            subscribed.update(topics)
        elif equal and not (len(topics) == len(subscribed) and subscribed.issuperset(topics)):
            equal = False
        mine: dict[int, None] = {}
        owned[member] = mine
        mine_generation = generations[member]
        for partition in group.claimed[member]:
            other = holder.get(partition)
            if other is None:
                mine[partition] = None
                holder[partition] = member
                continue
            other_generation = rivals[other]
            if mine_generation == other_generation:
                several.add(partition)
                last_tie[partition] = member
                owned[other].pop(partition, None)
                holder[partition] = member
                dropped[(member, partition)] = Dropped(
                    "tied", other, mine_generation, other_generation
                )
                if other != member:
                    dropped[(other, partition)] = Dropped(
                        "tied", member, other_generation, mine_generation
                    )
            elif mine_generation > other_generation:
                # Java appends, then removes the holder's copy; for the member's own repeated
                # claim that removes the first copy, so the partition moves to the end
                owned[other].pop(partition, None)
                mine[partition] = None
                if other != member:
                    dropped[(other, partition)] = Dropped(
                        "older", member, other_generation, mine_generation, displaced=True
                    )
                holder[partition] = member
            elif other != member:
                dropped[(member, partition)] = Dropped(
                    "older", other, mine_generation, other_generation
                )
    for partition in several:
        member = holder[partition]
        if partition in owned[member]:
            # the last claimant took it at a higher generation after a tie: the general
            # builder keeps it, the constrained builder skips it
            tied = last_tie[partition]
            dropped[(member, partition)] = Dropped(
                "tied_before", tied, generations[member], generations[tied]
            )
    max_generation = max([DEFAULT_GENERATION, *generations])
    return ClaimReading(equal, owned, several, dropped, max_generation)


# -- the reading in topic-partition terms, for the findings ------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimVerdict:
    """Kafka's verdict on one member's claim on one partition.

    ``kept``: the builder Kafka runs next counts it as owned.  Otherwise ``dropped`` says why,
    ``by`` names the member whose claim beat or tied it, ``generation`` and ``against`` the two
    generations compared.
    """

    member_id: str
    partition: TopicPartition
    kept: bool
    dropped: DropKind | None = None
    by: str | None = None
    generation: int = DEFAULT_GENERATION
    against: int = DEFAULT_GENERATION
    displaced: bool = False

    def text(self) -> str:
        """What Kafka did with the claim, in words (generation -1 said as "no generation")."""
        mine = _generation_words(self.generation)
        theirs = _generation_words(self.against)
        if self.kept:
            return f"kept: Kafka's assignor counts it as {self.member_id}'s ({mine})"
        if self.dropped == "older" and self.displaced:
            held = f"generation {self.generation}" if self.generation >= 0 else "none"
            return (
                f"cleared: {self.by} claims it at {theirs}, and Kafka compares the claim "
                f"{self.member_id} held by its subscription's generation: {held}"
            )
        if self.dropped == "older":
            return f"cleared: {mine} is older than {self.by}'s {theirs}, which holds it"
        if self.dropped == "tied":
            return f"cleared: {self.by} claims it at the same {mine}, so it is nobody's"
        return (
            f"cleared: it was claimed at one generation by several members ({self.by} among "
            "them) before this claim took it, so Kafka's constrained assignment skips it"
        )


def _generation_words(generation: int) -> str:
    return f"generation {generation}" if generation >= 0 else "no generation"


@dataclass(frozen=True, slots=True)
class Claims:
    """Every claim of a group read as Kafka reads it (see :func:`read_claims`)."""

    path: Literal["constrained", "general", "empty"]
    #: (member id, partition) -> the verdict, for every claim on a topic with metadata
    verdicts: Mapping[tuple[str, TopicPartition], ClaimVerdict]
    #: partition -> the member whose claim Kafka keeps (absent: nobody's)
    owner: Mapping[TopicPartition, str]
    #: the partitions claimed at one generation by several members
    claimed_by_several: frozenset[TopicPartition]
    max_generation: int

    def dropped(self, member_id: str) -> list[ClaimVerdict]:
        return [v for (m, _), v in self.verdicts.items() if m == member_id and not v.kept]


def read_claims(
    protocol: str,
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
) -> Claims:
    """Read every member's claims as Kafka's assignor of ``protocol`` does (module docstring).

    ``members`` in the leader's order, as for :func:`groupwatch.assignor.assign`.
    """
    group = IndexedGroup(partitions_per_topic, members, None, protocol)
    if group.member_count == 0:
        return Claims("empty", {}, {}, frozenset(), DEFAULT_GENERATION)
    reading = read_group_claims(group)
    verdicts: dict[tuple[str, TopicPartition], ClaimVerdict] = {}
    owner: dict[TopicPartition, str] = {}
    ids = group.member_ids
    for member in group.java_map_order:
        kept = set(reading.valid(member))
        for partition in group.claimed[member]:
            tp = group.topic_partition(partition)
            key = (ids[member], tp)
            if partition in kept:
                generation = group.generations[member]
                verdicts[key] = ClaimVerdict(ids[member], tp, True, generation=generation)
                owner[tp] = ids[member]
                continue
            why = reading.dropped.get((member, partition))
            if why is None:  # a repeated claim the member already lost
                continue
            verdicts[key] = ClaimVerdict(
                ids[member],
                tp,
                False,
                why.kind,
                ids[why.by],
                why.generation,
                why.against,
                # worth saying only where the subscription's generation is not the claim's
                why.displaced and why.generation != group.generations[member],
            )
    return Claims(
        reading.path,
        verdicts,
        owner,
        frozenset(group.topic_partition(p) for p in reading.claimed_by_several),
        reading.max_generation,
    )


def member_generations(
    protocol: str,
    subscription_generation: int | None,
    user_data_kind: str | None,
    user_data_generation: int | None,
) -> tuple[int | None, int]:
    """(member-data generation, generation as a rival) Kafka reads for one member.

    ``subscription_generation``: the subscription's ``generationId`` when >= 0 (v2+), else
    ``None``; ``user_data_kind``: ``sticky``/``cooperative-sticky``/``raw``/``None`` (no user
    data); ``user_data_generation``: the generation decoded from it (``None``: none).  The
    member-data generation is ``None`` when the member data carries none (Kafka's -1).
    """
    rival = subscription_generation if subscription_generation is not None else DEFAULT_GENERATION
    if protocol == "sticky":
        # StickyAssignor: user data V1 only; V0, raw or no user data carry no generation
        own = user_data_generation if user_data_kind == "sticky" else None
    elif subscription_generation is not None:
        own = subscription_generation
    elif user_data_kind is None:
        own = None
    elif user_data_generation is None:
        own = DEFAULT_GENERATION  # Kafka could not read the 4 bytes: DEFAULT_GENERATION
    else:
        own = user_data_generation
    return own, rival
