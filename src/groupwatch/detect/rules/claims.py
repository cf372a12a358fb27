"""Rules on claims and the leader's assignment: one owner per partition, claims judged as
Kafka's assignor judges them, the cooperative two-phase hand-over, subscriptions."""

from __future__ import annotations

from groupwatch.detect.expected import Expected
from groupwatch.detect.findings import Finding, tp_list
from groupwatch.detect.rules.facts import Facts, claims_evidence, name
from groupwatch.detect.rules.reading import generation_text, has_generation, short_generation


def assignment_overlap(f: Facts) -> list[Finding]:
    out = []
    for tp, who in sorted(f.assignees.items()):
        if len(who) > 1:
            out.append(
                f.finding(
                    "assignment_overlap",
                    f"{name(tp)} is assigned to {len(who)} members in generation "
                    f"{f.snap.generation}: {', '.join(who)}",
                    topic=tp[0],
                    partition=tp[1],
                    members=tuple(who),
                    partitions=(tp,),
                    evidence={"assigned_to": who},
                )
            )
    return out


def owned_overlap(f: Facts) -> list[Finding]:
    out = []
    for tp, tied in sorted(f.reading.tied.items(), key=lambda kv: kv[0]):
        if not has_generation(tied[0]):
            continue  # owned_overlap_without_generation
        top = tied[0].claim_generation
        names = [m.member_id for m in tied]
        out.append(
            f.finding(
                "owned_overlap_same_generation",
                f"{name(tp)} is claimed by {', '.join(names)} at the same generation {top}; "
                "Kafka's assignor (3.5+) invalidates it for all of them",
                topic=tp[0],
                partition=tp[1],
                members=tuple(names),
                partitions=(tp,),
                evidence={"claims": claims_evidence(f.claimants[tp]), "generation": top},
            )
        )
    return out


def owned_overlap_without_generation(f: Facts) -> list[Finding]:
    out = []
    for tp, tied in sorted(f.reading.tied.items(), key=lambda kv: kv[0]):
        if has_generation(tied[0]):
            continue  # owned_overlap_same_generation
        names = [m.member_id for m in tied]
        previous = f.reading.previous
        if previous is None:
            known = "; the last completed generation is not known"
        elif previous.owner(tp) is None:
            known = (
                f"; generation {previous.generation}, the last completed one, gave it to "
                "nobody, so it does not tell either"
            )
        else:
            known = (
                f"; generation {previous.generation}, the last completed one, had all of them "
                "as members, so it does not tell either"
            )
        out.append(
            f.finding(
                "owned_overlap_without_generation",
                f"{name(tp)} is claimed by {', '.join(names)}, and none of these claims "
                f"carries a generation, so nothing tells which is current{known}. What a "
                "leader does with it depends on its assignor's version: Kafka's current "
                "assignor invalidates the claim for all of them, a StickyAssignor before 2.3 "
                "leaves the partition with every claimant (KAFKA-7026)",
                topic=tp[0],
                partition=tp[1],
                members=tuple(names),
                partitions=(tp,),
                evidence={
                    "claims": claims_evidence(f.claimants[tp]),
                    "claimants_without_generation": [
                        {"member": m.member_id, "generation": generation_text(m)} for m in tied
                    ],
                    "last_completed_generation": None if previous is None else previous.generation,
                },
            )
        )
    return out


def cooperative_violation(f: Facts) -> list[Finding]:
    if not f.cooperative:
        return []
    out = []
    for tp, owner in sorted(f.valid_owner.items(), key=lambda kv: kv[0]):
        if owner is None:
            continue
        others = [m for m in f.assignees.get(tp, []) if m != owner]
        if not others:
            continue
        claimants = f.claimants[tp]
        mine = next(m for m in claimants if m.member_id == owner)
        why = (
            "the only claim on it"
            if len(claimants) == 1
            else f"the one of {len(claimants)} claims Kafka's assignor keeps"
        )
        out.append(
            f.finding(
                "cooperative_revocation_violation",
                f"{name(tp)} is still validly owned by {owner} (claim with "
                f"{short_generation(mine)}, {why}) but assigned to {', '.join(others)} in the "
                f"same generation {f.snap.generation}",
                topic=tp[0],
                partition=tp[1],
                members=(owner, *others),
                partitions=(tp,),
                evidence={
                    "valid_owner": owner,
                    "owner_claim_generation": mine.claim_generation
                    if has_generation(mine)
                    else None,
                    "assigned_to": f.assignees[tp],
                    "claims": claims_evidence(claimants),
                },
            )
        )
    return out


def unsubscribed(f: Facts) -> list[Finding]:
    out = []
    for m in f.snap.members:
        if m.subscription_error is not None:
            continue
        topics = set(m.topics)
        for tp in sorted(dict.fromkeys(m.assigned)):
            if tp[0] not in topics:
                out.append(
                    f.finding(
                        "unsubscribed_assignment",
                        f"{m.member_id} is assigned {name(tp)} but does not subscribe to {tp[0]}",
                        topic=tp[0],
                        partition=tp[1],
                        member=m.member_id,
                        members=(m.member_id,),
                        partitions=(tp,),
                        evidence={"subscribed_topics": sorted(topics)},
                    )
                )
    return out


def stale_owned(f: Facts) -> list[Finding]:
    out = []
    top = f.highest_claim_generation
    for m in f.snap.members:
        if not m.claim:
            continue
        claim = list(dict.fromkeys(m.claim))
        stale = f.reading.stale_claims(m.member_id, m.claim)
        if not stale:
            continue  # every claim holds (Kafka keeps a lower generation nobody contests)
        inferred = f.reading.inferred(m.member_id)
        contested = [tp for tp in claim if len(f.claimants[tp]) > 1]
        rivals = sorted({o.member_id for tp in contested for o in f.claimants[tp] if o is not m})
        first = f.reading.stale[(m.member_id, stale[0])]
        more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
        out.append(
            f.finding(
                "stale_owned_partitions",
                f"{m.member_id} claims {len(claim)} partition(s) with {generation_text(m)}; "
                f"its claim on {len(stale)} of them is stale: {name(stale[0])}{more}, "
                f"{first.reason}",
                member=m.member_id,
                members=(m.member_id, *rivals),
                partitions=tuple(claim),
                evidence={
                    "claim_generation": m.claim_generation,
                    "claim_has_generation": has_generation(m),
                    "highest_claim_generation": top,
                    "contested": tp_list(contested),
                    "stale": tp_list(stale),
                    "lost_to_fresher_claims": tp_list(tp for tp in stale if tp not in inferred),
                    "inferred_stale": tp_list(inferred),
                    "inferred_from_generation": first.inferred_from,
                    "snapshot_generation": f.snap.generation,
                },
            )
        )
    return out


def stale_claim_honored(f: Facts) -> list[Finding]:
    if not isinstance(f.expected, Expected):
        return []
    expected_owner = f.expected.owner_of()
    out = []
    for tp, who in sorted(f.assignees.items()):
        ms = f.claimants.get(tp, [])
        for member in who:
            why = f.reading.stale.get((member, tp))
            if why is None:
                continue
            holders = [
                o for o in ms if o.member_id != member and (o.member_id, tp) not in f.reading.stale
            ]
            if not holders:
                continue  # nobody's claim holds: the partition was free to give
            owner = f.valid_owner.get(tp)
            also_given = owner is not None and owner in who
            if expected_owner.get(tp) == member and not also_given:
                continue  # a correct leader gives it to this member too (for balance)
            rival = holders[0]
            mine = next(m for m in ms if m.member_id == member)
            if why.inferred_from is None:
                detail = (
                    f"{name(tp)} went to {member} on a claim from {short_generation(mine)}, "
                    f"although {rival.member_id} claimed it at {short_generation(rival)}"
                )
            else:
                detail = (
                    f"{name(tp)} went to {member} on a stale claim, {why.reason}; "
                    f"{rival.member_id} claims it with {short_generation(rival)}"
                    + (" and got it too" if rival.member_id in who else "")
                )
            out.append(
                f.finding(
                    "stale_claim_honored",
                    detail,
                    topic=tp[0],
                    partition=tp[1],
                    member=member,
                    members=(member, *(o.member_id for o in holders)),
                    partitions=(tp,),
                    evidence={
                        "claims": claims_evidence(ms),
                        "expected_owner": expected_owner.get(tp),
                        "inferred_from_generation": why.inferred_from,
                    },
                )
            )
    return out
