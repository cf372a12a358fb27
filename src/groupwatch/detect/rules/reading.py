"""One reading of every claim of a snapshot: valid, stale or tied, used by every rule.

A claim is a member's statement that it owns a partition (issue 5's model).  Each claim on a
partition is read once, here, and every rule (overlaps, cooperative violations, stale claims,
the re-run's inputs) takes its verdict from this reading, so two findings of one generation
never give two accounts of the same claim.

The reading is Kafka's own per-partition rule (``AbstractStickyAssignor``, 3.5+, KAFKA-14639):
a sole claimant keeps its partition whatever its generation; among several claimants the
highest generation wins and the others are stale; claimants tied at the highest generation
cannot be told apart.  One addition, for claims that carry no generation (StickyAssignor user
data v0 before 2.3, cooperative-sticky before 3.0, clients that never set one): such a claim
is *inferred* stale when its member is absent from the last completed generation and that
generation handed the partition to another member, since a member that was not in the last
assignment cannot have received the partition since.  Nothing is inferred when the last
completed generation is not known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupwatch.assignor import TopicPartition
from groupwatch.detect.history import AssignedGeneration
from groupwatch.detect.model import GroupSnapshot, MemberState

TP = TopicPartition


def has_generation(m: MemberState) -> bool:
    """The claim carries a generation (Kafka's ``DEFAULT_GENERATION``, -1, is none)."""
    return m.claim_generation >= 0


def generation_text(m: MemberState) -> str:
    """The claim's generation in words: a claim without one is never called "generation -1"."""
    if has_generation(m):
        return f"generation {m.claim_generation}"
    if m.user_data_kind == "sticky" and m.user_data_generation is None:
        return "no generation (its StickyAssignor user data v0 carries none)"
    if m.user_data_generation is not None or m.subscription_generation is not None:
        return "no generation (it sent Kafka's DEFAULT_GENERATION, which stands for none)"
    return "no generation (neither its subscription nor its user data carries one)"


def short_generation(m: MemberState) -> str:
    return f"generation {m.claim_generation}" if has_generation(m) else "no generation"


@dataclass(frozen=True, slots=True)
class Stale:
    """Why one claim is stale; ``inferred_from`` is the completed generation it was inferred
    from (``None``: decided by the claims' own generations)."""

    reason: str
    inferred_from: int | None = None


@dataclass
class Reading:
    """The verdict on every claim of one snapshot."""

    #: tp -> members claiming it (record order, each member once)
    claimants: dict[TP, list[MemberState]] = field(default_factory=dict)
    #: tp -> the member whose claim holds (None: nobody, all stale or tied)
    valid_owner: dict[TP, str | None] = field(default_factory=dict)
    #: tp -> the claimants tied at the highest generation (only when two or more)
    tied: dict[TP, list[MemberState]] = field(default_factory=dict)
    #: (member id, tp) -> why that claim is stale
    stale: dict[tuple[str, TP], Stale] = field(default_factory=dict)
    #: The completed generation claims without a generation were checked against.
    previous: AssignedGeneration | None = None

    def stale_claims(self, member_id: str, claim: tuple[TP, ...]) -> list[TP]:
        return [tp for tp in dict.fromkeys(claim) if (member_id, tp) in self.stale]

    def inferred(self, member_id: str) -> dict[TP, Stale]:
        """The member's claims inferred stale from the last completed generation."""
        return {
            tp: s
            for (m, tp), s in self.stale.items()
            if m == member_id and s.inferred_from is not None
        }


def read_claims(snap: GroupSnapshot, previous: AssignedGeneration | None) -> Reading:
    """Read every claim of ``snap``; ``previous`` is the last completed generation before it."""
    r = Reading(previous=previous)
    for m in snap.members:
        for tp in dict.fromkeys(m.claim):
            r.claimants.setdefault(tp, []).append(m)
    in_previous = frozenset(previous.members) if previous is not None else frozenset()
    for tp, ms in r.claimants.items():
        if previous is None and len(ms) == 1:
            r.valid_owner[tp] = ms[0].member_id  # the common case: one claim, nothing to infer
            continue
        live: list[MemberState] = []
        for m in ms:
            holder = previous.owner(tp) if previous is not None else None
            if (
                previous is not None
                and holder is not None
                and not has_generation(m)
                and m.member_id not in in_previous
            ):
                r.stale[(m.member_id, tp)] = Stale(
                    f"inferred: {m.member_id} was not a member of generation "
                    f"{previous.generation}, the last completed one, which gave "
                    f"{tp[0]}-{tp[1]} to {holder}",
                    inferred_from=previous.generation,
                )
            else:
                live.append(m)
        if not live:
            r.valid_owner[tp] = None
            continue
        top = max(m.claim_generation for m in live)
        winners = [m for m in live if m.claim_generation == top]
        if len(winners) > 1:
            r.valid_owner[tp] = None
            r.tied[tp] = winners
            continue
        owner = winners[0]
        r.valid_owner[tp] = owner.member_id
        for m in live:
            if m is not owner:
                r.stale[(m.member_id, tp)] = Stale(
                    f"{owner.member_id} claims it at the higher {short_generation(owner)}"
                )
    return r
