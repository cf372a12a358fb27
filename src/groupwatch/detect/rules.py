"""Per-snapshot rules: what is wrong inside one ``GroupMetadataValue`` record.

Every rule is a function of the snapshot, the partition counts and the expected assignment
only; :func:`snapshot_findings` runs them all in the catalogue's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.expected import (
    Expected,
    NoExpected,
    balance_problems,
    expected_assignment,
)
from groupwatch.detect.findings import Finding, TopicPartition, tp_list
from groupwatch.detect.model import GroupSnapshot, MemberState

TP = TopicPartition


def _name(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass
class _Facts:
    """What several rules share, computed once per snapshot."""

    snap: GroupSnapshot
    config: DetectorConfig
    counts: Mapping[str, int]
    count_sources: Mapping[str, str]
    #: tp -> members claiming it (record order, each member once)
    claimants: dict[TP, list[MemberState]] = field(default_factory=dict)
    #: tp -> members assigned it (record order, each member once)
    assignees: dict[TP, list[str]] = field(default_factory=dict)
    #: tp -> the member whose claim Kafka honours (None: nobody, equal generations)
    valid_owner: dict[TP, str | None] = field(default_factory=dict)
    highest_claim_generation: int = -1
    expected: Expected | NoExpected | None = None
    #: The group was seen withholding claimed partitions for a round and handing them out in
    #: the next: it rebalances cooperatively whatever its assignor is called (Streams).
    withholding_seen: bool = False

    @property
    def cooperative(self) -> bool:
        return (self.snap.protocol or "") in self.config.cooperative_protocols

    @property
    def sticky(self) -> bool:
        return (self.snap.protocol or "") in self.config.sticky_protocols

    def finding(self, kind: str, detail: str, **kw: object) -> Finding:
        return Finding(
            kind=kind,
            group=self.snap.group,
            generation=self.snap.generation,
            detail=detail,
            source=self.snap.source,
            **kw,  # type: ignore[arg-type]  # keyword fields of Finding, checked at runtime
        )


def _facts(
    snap: GroupSnapshot,
    config: DetectorConfig,
    counts: Mapping[str, int],
    count_sources: Mapping[str, str],
    withholding_seen: bool = False,
) -> _Facts:
    f = _Facts(snap, config, counts, count_sources, withholding_seen=withholding_seen)
    for m in snap.members:
        for tp in dict.fromkeys(m.claim):
            f.claimants.setdefault(tp, []).append(m)
        for tp in dict.fromkeys(m.assigned):
            f.assignees.setdefault(tp, []).append(m.member_id)
    f.highest_claim_generation = max((m.claim_generation for m in snap.members), default=-1)
    for tp, ms in f.claimants.items():
        top = max(m.claim_generation for m in ms)
        winners = [m for m in ms if m.claim_generation == top]
        f.valid_owner[tp] = winners[0].member_id if len(winners) == 1 else None
    if f.sticky:
        f.expected = expected_assignment(snap, counts)
    return f


def _claims_evidence(ms: list[MemberState]) -> dict[str, int]:
    return {m.member_id: m.claim_generation for m in ms}


def _decode_errors(f: _Facts) -> list[Finding]:
    out = []
    for m in f.snap.members:
        errors = {
            k: v
            for k, v in (("subscription", m.subscription_error), ("assignment", m.assignment_error))
            if v is not None
        }
        if errors:
            out.append(
                f.finding(
                    "decode_error",
                    f"member {m.member_id}: the {' and '.join(errors)} bytes did not decode",
                    member=m.member_id,
                    members=(m.member_id,),
                    evidence={"errors": errors},
                )
            )
    return out


def _assignment_overlap(f: _Facts) -> list[Finding]:
    out = []
    for tp, who in sorted(f.assignees.items()):
        if len(who) > 1:
            out.append(
                f.finding(
                    "assignment_overlap",
                    f"{_name(tp)} is assigned to {len(who)} members in generation "
                    f"{f.snap.generation}: {', '.join(who)}",
                    topic=tp[0],
                    partition=tp[1],
                    members=tuple(who),
                    partitions=(tp,),
                    evidence={"assigned_to": who},
                )
            )
    return out


def _owned_overlap(f: _Facts) -> list[Finding]:
    out = []
    for tp, ms in sorted(f.claimants.items(), key=lambda kv: kv[0]):
        if len(ms) < 2 or f.valid_owner[tp] is not None:
            continue
        top = max(m.claim_generation for m in ms)
        tied = [m.member_id for m in ms if m.claim_generation == top]
        out.append(
            f.finding(
                "owned_overlap_same_generation",
                f"{_name(tp)} is claimed by {', '.join(tied)} at the same generation {top}; "
                "Kafka's assignor invalidates it for all of them",
                topic=tp[0],
                partition=tp[1],
                members=tuple(tied),
                partitions=(tp,),
                evidence={"claims": _claims_evidence(ms), "generation": top},
            )
        )
    return out


def _cooperative_violation(f: _Facts) -> list[Finding]:
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
                f"{_name(tp)} is still validly owned by {owner} (claim generation {gen}) but "
                f"assigned to {', '.join(others)} in the same generation {f.snap.generation}",
                topic=tp[0],
                partition=tp[1],
                members=(owner, *others),
                partitions=(tp,),
                evidence={
                    "valid_owner": owner,
                    "owner_claim_generation": gen,
                    "assigned_to": f.assignees[tp],
                    "claims": _claims_evidence(f.claimants[tp]),
                },
            )
        )
    return out


def _unsubscribed(f: _Facts) -> list[Finding]:
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
                        f"{m.member_id} is assigned {_name(tp)} but does not subscribe to {tp[0]}",
                        topic=tp[0],
                        partition=tp[1],
                        member=m.member_id,
                        members=(m.member_id,),
                        partitions=(tp,),
                        evidence={"subscribed_topics": sorted(topics)},
                    )
                )
    return out


def _stale_owned(f: _Facts) -> list[Finding]:
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


def _stale_claim_honored(f: _Facts) -> list[Finding]:
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
                    f"{_name(tp)} went to {member} on a claim from generation "
                    f"{mine.claim_generation}, although {fresher[0].member_id} claimed it at "
                    f"generation {fresher[0].claim_generation}",
                    topic=tp[0],
                    partition=tp[1],
                    member=member,
                    members=(member, *(o.member_id for o in fresher)),
                    partitions=(tp,),
                    evidence={
                        "claims": _claims_evidence(ms),
                        "expected_owner": expected_owner.get(tp),
                    },
                )
            )
    return out


def _unassigned(f: _Facts) -> list[Finding]:
    if any(m.assignment_error is not None for m in f.snap.members):
        return []
    withheld: set[TP] = set()
    if f.cooperative or f.withholding_seen:
        # A correct cooperative leader leaves a partition out for one round while its
        # previous owner revokes it: it is still claimed by someone.
        withheld.update(f.claimants)
        if isinstance(f.expected, Expected):
            withheld.update(f.expected.withheld)
    topics = sorted({t for m in f.snap.members if m.subscription_error is None for t in m.topics})
    out = []
    for topic in topics:
        count = f.counts.get(topic, 0)
        missing = [
            (topic, p)
            for p in range(count)
            if (topic, p) not in f.assignees and (topic, p) not in withheld
        ]
        if not missing:
            continue
        out.append(
            f.finding(
                "unassigned_partitions",
                f"{len(missing)} of {count} partitions of {topic} are assigned to nobody",
                topic=topic,
                members=tuple(m.member_id for m in f.snap.members if topic in m.topics),
                partitions=tuple(missing),
                evidence={
                    "partition_count": count,
                    "partition_count_source": f.count_sources.get(topic, "unknown"),
                    "withheld_for_revocation": tp_list(tp for tp in withheld if tp[0] == topic),
                },
            )
        )
    return out


def _imbalanced(f: _Facts) -> list[Finding]:
    if not f.sticky or any(m.assignment_error is not None for m in f.snap.members):
        return []
    # Judge only complete rounds: partitions withheld by a cooperative leader (or missing)
    # make any intermediate assignment look unbalanced.
    for topic in {t for m in f.snap.members for t in m.topics}:
        if any((topic, p) not in f.assignees for p in range(f.counts.get(topic, 0))):
            return []
    actual = {m.member_id: list(dict.fromkeys(m.assigned)) for m in f.snap.members}
    subscriptions = {m.member_id: list(m.topics) for m in f.snap.members}
    problems = balance_problems(actual, subscriptions, f.counts)
    if not problems:
        return []
    return [
        f.finding(
            "imbalanced_assignment",
            f"the assignment of generation {f.snap.generation} is not balanced: {problems[0]}",
            members=tuple(actual),
            evidence={
                "violations": problems[:20],
                "sizes": {m: len(tps) for m, tps in actual.items()},
            },
        )
    ]


def _userdata_disagreement(m: MemberState) -> dict[str, object]:
    """Where a member's sticky user data contradicts its own subscription."""
    reasons: dict[str, object] = {}
    if (
        m.user_data_previous is not None
        and m.owned_partitions
        and set(m.user_data_previous) != set(m.owned_partitions)
    ):
        reasons["owned_partitions"] = tp_list(m.owned_partitions)
        reasons["user_data_previous_assignment"] = tp_list(m.user_data_previous)
    # Only a user-data generation *ahead* of the subscription's is wrong. Kafka's client
    # takes generation_id from the JoinGroup response but the user-data generation from
    # the last completed assignment, so a member whose sync was cut short by the next
    # rebalance rejoins with the user data one or more generations behind (seen on real
    # groups under load); a reset generation_id (-1) is no claim at all.
    if (
        m.subscription_generation is not None
        and m.user_data_generation is not None
        and m.user_data_generation > m.subscription_generation
    ):
        reasons["generation_id"] = m.subscription_generation
        reasons["user_data_generation"] = m.user_data_generation
    return reasons


def _subscription_view(m: MemberState) -> MemberState:
    """The member as its subscription tells it, in the user-data fields the leader reads."""
    return replace(
        m,
        user_data_previous=m.owned_partitions or m.user_data_previous,
        user_data_generation=(
            m.subscription_generation
            if m.subscription_generation is not None
            else m.user_data_generation
        ),
    )


def _userdata_mismatch(f: _Facts) -> list[Finding]:
    # Of Kafka's assignors only the eager StickyAssignor reads partitions and generation from
    # the user data; CooperativeStickyAssignor reads a generation from it only when the
    # subscription carries none (and then there is nothing to disagree with); range,
    # roundrobin and Streams never read it.  librdkafka and the Go clients fill the field
    # their own way, so a disagreement Kafka never reads is their bookkeeping, not a fault,
    # and one that changes nothing a correct leader assigns is not worth a warning either.
    if (f.snap.protocol or "") != "sticky" or not isinstance(f.expected, Expected):
        return []
    reasons = {m.member_id: _userdata_disagreement(m) for m in f.snap.members}
    reasons = {m: r for m, r in reasons.items() if r}
    if not reasons:
        return []
    alternative = replace(
        f.snap,
        members=tuple(
            _subscription_view(m) if m.member_id in reasons else m for m in f.snap.members
        ),
    )
    other = expected_assignment(alternative, f.counts)
    if not isinstance(other, Expected) or other.assignment == f.expected.assignment:
        return []
    moved = sorted(
        {
            tp
            for m in f.expected.assignment.keys() | other.assignment.keys()
            for tp in f.expected.assignment.get(m, frozenset())
            ^ other.assignment.get(m, frozenset())
        }
    )
    out = []
    for m in f.snap.members:
        if m.member_id not in reasons:
            continue
        what = " and ".join(
            w
            for w, k in (("partitions", "owned_partitions"), ("generation", "generation_id"))
            if k in reasons[m.member_id]
        )
        out.append(
            f.finding(
                "userdata_mismatch",
                f"{m.member_id}: the sticky user data the leader reads disagrees with the "
                f"subscription on {what}, and that changes the assignment of "
                f"{len(moved)} partition(s)",
                member=m.member_id,
                members=(m.member_id,),
                evidence={**reasons[m.member_id], "partitions_that_would_move": tp_list(moved)},
            )
        )
    return out


def _sticky_divergence(f: _Facts) -> list[Finding]:
    if not isinstance(f.expected, Expected):
        return []
    differs: dict[str, dict[str, object]] = {}
    changed: set[TP] = set()
    for m in f.snap.members:
        actual = set(m.assigned)
        expected = set(f.expected.assignment.get(m.member_id, frozenset()))
        if actual != expected:
            differs[m.member_id] = {
                "actual_only": tp_list(actual - expected),
                "expected_only": tp_list(expected - actual),
            }
            changed |= actual ^ expected
    if not differs:
        return []
    return [
        f.finding(
            "sticky_divergence",
            f"{len(changed)} partition(s) of {len(differs)} member(s) differ from what Kafka's "
            f"current {f.snap.protocol} assignor computes",
            members=tuple(differs),
            partitions=tuple(sorted(changed)),
            evidence={
                "members": differs,
                "expected_withheld": tp_list(f.expected.withheld),
                "assignor_path": f.expected.path,
            },
        )
    ]


def _version_mix(f: _Facts) -> list[Finding]:
    versions: dict[int, list[str]] = {}
    for m in f.snap.members:
        if m.subscription_version is not None:
            versions.setdefault(m.subscription_version, []).append(m.member_id)
    if len(versions) < 2:
        return []
    return [
        f.finding(
            "protocol_version_mix",
            "members send subscription versions "
            + ", ".join(f"v{v} ({len(ms)})" for v, ms in sorted(versions.items())),
            members=tuple(m.member_id for m in f.snap.members),
            evidence={"versions": {str(v): ms for v, ms in sorted(versions.items())}},
        )
    ]


#: Rules that judge the leader's assignment; silent while a generation awaits its SyncGroup.
_ASSIGNMENT_RULES = frozenset(
    {
        "_assignment_overlap",
        "_cooperative_violation",
        "_unsubscribed",
        "_stale_claim_honored",
        "_unassigned",
        "_imbalanced",
        "_sticky_divergence",
    }
)

_RULES = (
    _assignment_overlap,
    _owned_overlap,
    _cooperative_violation,
    _unsubscribed,
    _stale_owned,
    _stale_claim_honored,
    _unassigned,
    _imbalanced,
    _userdata_mismatch,
    _sticky_divergence,
    _version_mix,
    _decode_errors,
)


def snapshot_findings(
    snap: GroupSnapshot,
    config: DetectorConfig,
    counts: Mapping[str, int],
    count_sources: Mapping[str, str] | None = None,
    withholding_seen: bool = False,
) -> list[Finding]:
    """All per-snapshot findings of one consumer-group snapshot.

    ``unassigned_partitions`` and ``imbalanced_assignment`` come out unconfirmed: the caller
    (:mod:`groupwatch.detect.confirm`) holds them until the state persists.
    """
    if snap.protocol_type != "consumer" or not snap.members:
        return []
    f = _facts(snap, config, counts, count_sources or {}, withholding_seen)
    out: list[Finding] = []
    for rule in _RULES:
        if snap.awaiting_assignment and rule.__name__ in _ASSIGNMENT_RULES:
            continue
        out.extend(rule(f))
    if isinstance(f.expected, NoExpected) and out:
        # Say why the expected-assignment rules were silent.
        reason = f.expected.reason
        out = [
            x.with_evidence(expected_assignment_unavailable=reason)
            if x.kind == "stale_owned_partitions"
            else x
            for x in out
        ]
    return out
