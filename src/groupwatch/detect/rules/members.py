"""Rules on what each member sent: its user data against its subscription, protocol versions,
bytes that did not decode."""

from __future__ import annotations

from dataclasses import replace

from groupwatch.detect.expected import Expected, expected_assignment
from groupwatch.detect.findings import Finding, tp_list
from groupwatch.detect.model import MemberState
from groupwatch.detect.rules.facts import Facts


def decode_errors(f: Facts) -> list[Finding]:
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


def userdata_mismatch(f: Facts) -> list[Finding]:
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
    other = expected_assignment(alternative, f.counts, f.inferred_stale)
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


def version_mix(f: Facts) -> list[Finding]:
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
