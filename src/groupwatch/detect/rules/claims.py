"""Rules on claims and the leader's assignment: one owner per partition, claims judged as
Kafka's assignor judges them, the cooperative two-phase hand-over, subscriptions."""

from __future__ import annotations

from groupwatch.detect.expected import Expected
from groupwatch.detect.findings import Finding, tp_list
from groupwatch.detect.rules.facts import Facts, claims_evidence, name


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
    for tp, ms in sorted(f.claimants.items(), key=lambda kv: kv[0]):
        if len(ms) < 2 or f.valid_owner[tp] is not None:
            continue
        top = max(m.claim_generation for m in ms)
        tied = [m.member_id for m in ms if m.claim_generation == top]
        out.append(
            f.finding(
                "owned_overlap_same_generation",
                f"{name(tp)} is claimed by {', '.join(tied)} at the same generation {top}; "
                "Kafka's assignor invalidates it for all of them",
                topic=tp[0],
                partition=tp[1],
                members=tuple(tied),
                partitions=(tp,),
                evidence={"claims": claims_evidence(ms), "generation": top},
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
        gen = next(m.claim_generation for m in f.claimants[tp] if m.member_id == owner)
        out.append(
            f.finding(
                "cooperative_revocation_violation",
                f"{name(tp)} is still validly owned by {owner} (claim generation {gen}) but "
                f"assigned to {', '.join(others)} in the same generation {f.snap.generation}",
                topic=tp[0],
                partition=tp[1],
                members=(owner, *others),
                partitions=(tp,),
                evidence={
                    "valid_owner": owner,
                    "owner_claim_generation": gen,
                    "assigned_to": f.assignees[tp],
                    "claims": claims_evidence(f.claimants[tp]),
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
        if not m.claim or m.claim_generation >= top:
            continue
        claim = list(dict.fromkeys(m.claim))
        contested = [tp for tp in claim if len(f.claimants[tp]) > 1]
        lost = [tp for tp in contested if f.valid_owner[tp] != m.member_id]
        rivals = sorted({o.member_id for tp in contested for o in f.claimants[tp] if o is not m})
        absent = " (absent)" if m.claim_generation == -1 else ""
        out.append(
            f.finding(
                "stale_owned_partitions",
                f"{m.member_id} claims {len(claim)} partition(s) from generation "
                f"{m.claim_generation}{absent} while the highest claim generation is {top}; "
                f"{len(contested)} contested",
                member=m.member_id,
                members=(m.member_id, *rivals),
                partitions=tuple(claim),
                evidence={
                    "claim_generation": m.claim_generation,
                    "highest_claim_generation": top,
                    "contested": tp_list(contested),
                    "lost_to_fresher_claims": tp_list(lost),
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
            mine = next((m for m in ms if m.member_id == member), None)
            if mine is None:
                continue
            fresher = [o for o in ms if o.claim_generation > mine.claim_generation]
            if not fresher or expected_owner.get(tp) == member:
                continue
            out.append(
                f.finding(
                    "stale_claim_honored",
                    f"{name(tp)} went to {member} on a claim from generation "
                    f"{mine.claim_generation}, although {fresher[0].member_id} claimed it at "
                    f"generation {fresher[0].claim_generation}",
                    topic=tp[0],
                    partition=tp[1],
                    member=member,
                    members=(member, *(o.member_id for o in fresher)),
                    partitions=(tp,),
                    evidence={
                        "claims": claims_evidence(ms),
                        "expected_owner": expected_owner.get(tp),
                    },
                )
            )
    return out
