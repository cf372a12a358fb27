"""One reading of every claim of a snapshot: valid, stale or tied, used by every rule.

A claim is a member's statement that it owns a partition (issue 5's model).  Each claim on a
partition is read once, here, and every rule (overlaps, cooperative violations, stale claims,
the re-run's inputs) takes its verdict from this reading, so two findings of one generation
never give two accounts of the same claim.

For the protocols of Kafka's sticky assignors the verdicts are Kafka's own:
:func:`groupwatch.assignor.claims.read_claims`, the reading the re-run assignor builds on
(``AbstractStickyAssignor.allSubscriptionsEqual`` of kafka-clients 4.x), on the same inputs as
the re-run.  For other protocols, and claims that reading does not see (topics without a known
partition count), the same rule is applied per partition without Kafka's member order: a sole
claimant keeps its partition whatever its generation; among several claimants the highest
generation wins and the others are stale; claimants tied at the highest generation cannot be
told apart.

One addition, for claims that carry no generation (StickyAssignor user data v0 before 2.3,
cooperative-sticky before 3.0, clients that never set one): such a claim is *inferred* stale
when its member is absent from the last completed generation and that generation handed the
partition to another member, since a member that was not in the last assignment cannot have
received the partition since.  Nothing is inferred when the last completed generation is not
known.  Inferred claims are left out of Kafka's reading, as they are left out of the re-run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from groupwatch.assignor import Claims, TopicPartition
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


#: Kafka's reading of the snapshot's claims, given the claims inferred stale (member -> claims).
KafkaReader = Callable[[Mapping[str, set[TP]]], Claims]


def read_claims(
    snap: GroupSnapshot, previous: AssignedGeneration | None, kafka: KafkaReader | None = None
) -> Reading:
    """Read every claim of ``snap``; ``previous`` is the last completed generation before it;
    ``kafka``: Kafka's reading, for the protocols of its sticky assignors."""
    r = Reading(previous=previous)
    for m in snap.members:
        for tp in dict.fromkeys(m.claim):
            r.claimants.setdefault(tp, []).append(m)
    in_previous = frozenset(previous.members) if previous is not None else frozenset()
    live_claims: dict[TP, list[MemberState]] = {}
    inferred: dict[str, set[TP]] = {}
    for tp, ms in r.claimants.items():
        holder = previous.owner(tp) if previous is not None else None
        live: list[MemberState] = []
        for m in ms:
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
                inferred.setdefault(m.member_id, set()).add(tp)
            else:
                live.append(m)
        live_claims[tp] = live
    claims = kafka(inferred) if kafka is not None else None
    for tp, live in live_claims.items():
        if claims is not None and any((m.member_id, tp) in claims.verdicts for m in live):
            _read_as_kafka(r, tp, live, claims)
        else:
            _read_per_partition(r, tp, live)
    return r


def _read_as_kafka(r: Reading, tp: TP, live: list[MemberState], claims: Claims) -> None:
    """Kafka's verdicts on ``tp``'s claims.  A claim Kafka's assignor does not read (a sticky
    member's ``owned_partitions`` beside its user data) is neither valid nor stale."""
    owner = claims.owner.get(tp)
    r.valid_owner[tp] = owner
    tied = []
    for m in live:
        verdict = claims.verdicts.get((m.member_id, tp))
        if verdict is None or verdict.kept:
            continue
        if verdict.dropped == "tied":
            tied.append(m)
        else:
            r.stale[(m.member_id, tp)] = Stale(verdict.text())
    if owner is None and len(tied) > 1:
        r.tied[tp] = tied


def _read_per_partition(r: Reading, tp: TP, live: list[MemberState]) -> None:
    """The rule without Kafka's member order (module docstring)."""
    if not live:
        r.valid_owner[tp] = None
        return
    top = max(m.claim_generation for m in live)
    winners = [m for m in live if m.claim_generation == top]
    if len(winners) > 1:
        r.valid_owner[tp] = None
        r.tied[tp] = winners
        return
    owner = winners[0]
    r.valid_owner[tp] = owner.member_id
    for m in live:
        if m is not owner:
            r.stale[(m.member_id, tp)] = Stale(
                f"cleared: {short_generation(m)} is older than {owner.member_id}'s "
                f"{short_generation(owner)}, which holds it"
            )
