"""Rules on completeness and balance: partitions nobody got, Kafka's balance definition, and
the distance to what Kafka's assignor computes."""

from __future__ import annotations

from groupwatch.detect.expected import Expected, balance_problems
from groupwatch.detect.findings import Finding, tp_list
from groupwatch.detect.rules.facts import TP, Facts


def unassigned(f: Facts) -> list[Finding]:
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


def missing_topic(f: Facts) -> list[Finding]:
    out = []
    for topic, m in sorted(f.missing.items()):
        out.append(
            f.finding(
                "subscribed_topic_missing",
                f"{len(m.subscribers)} member(s) subscribe to {topic}, which did not exist for "
                f"the leader of generation {f.snap.generation} (missing since generation "
                f"{m.since_generation}): nothing of it is assigned",
                topic=topic,
                members=m.subscribers,
                evidence={"since_generation": m.since_generation, "reasons": list(m.reasons)},
            )
        )
    return out


def imbalanced(f: Facts) -> list[Finding]:
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


#: The first consumer-protocol subscription version only Kafka 3.5+ Java clients write (v3,
#: rack ids, KIP-881): the leader's assignor is then the per-partition generation-aware one the
#: re-run implements.  Older leaders (v0: before 2.4; v1: 2.4-3.3; v2: 3.4) run assignors that
#: break ties and judge generations differently (KAFKA-7026, KAFKA-14639), so a difference from
#: the re-run says nothing about the group.
CURRENT_ASSIGNOR_SUBSCRIPTION_VERSION = 3


def rerun_comparable(f: Facts) -> str | None:
    """Why the re-run's inputs are not known to equal the leader's (``None``: they are)."""
    if f.repeated_generation:
        return (
            "the record repeats a completed generation (a static member replaced): its "
            "assignment was made on the earlier members' subscriptions"
        )
    if f.inferred_stale:
        return "claims inferred stale were left out of the re-run's inputs"
    leader = next((m for m in f.snap.members if m.member_id == f.snap.leader), None)
    if leader is None:
        return "the leader is not among the record's members"
    version = leader.subscription_version
    if version is None or version < CURRENT_ASSIGNOR_SUBSCRIPTION_VERSION:
        return (
            f"the leader's subscription v{version} comes from a client older than 3.5, whose "
            "assignor is not the one re-run"
        )
    # Other clients write v3 too, with assignors of their own (librdkafka's port, franz-go's
    # balancer); what they write beside it tells them from Kafka's Java client.
    if leader.rack_id == "":
        return "the leader sends an empty rack id, which Kafka's Java client never does"
    if f.cooperative:
        if leader.user_data_kind != "cooperative-sticky":
            return "the leader's user data is not the CooperativeStickyAssignor's"
        if (
            leader.subscription_generation is not None
            and leader.user_data_generation != leader.subscription_generation
        ):
            # Java sets both from the generation it last synced; a cut-short sync (rare) is
            # skipped with the clients that keep their own count.
            return "the leader's user-data generation differs from its subscription's"
    return None


def sticky_divergence(f: Facts) -> list[Finding]:
    if not isinstance(f.expected, Expected) or rerun_comparable(f) is not None:
        return []
    differs: dict[str, dict[str, object]] = {}
    changed: set[TP] = set()
    example = ""
    for m in f.snap.members:
        actual = set(m.assigned)
        expected = set(f.expected.assignment.get(m.member_id, frozenset()))
        if actual != expected:
            differs[m.member_id] = {
                "actual_only": tp_list(actual - expected),
                "expected_only": tp_list(expected - actual),
            }
            changed |= actual ^ expected
            if not example:
                got = ", ".join(f"{t}-{p}" for t, p in sorted(actual - expected))
                want = ", ".join(f"{t}-{p}" for t, p in sorted(expected - actual))
                example = f"{m.member_id} got [{got}] where the re-run gives [{want}]"
    if not differs:
        return []
    leader = f.snap.leader
    return [
        f.finding(
            "sticky_divergence",
            f"{len(changed)} partition(s) of {len(differs)} member(s) differ from what Kafka's "
            f"current {f.snap.protocol} assignor computes from the subscriptions the leader "
            f"{leader} read (its subscription v3 says a 3.5+ client, the assignor re-run): "
            f"{example}",
            members=tuple(differs),
            partitions=tuple(sorted(changed)),
            evidence={
                "members": differs,
                "expected_withheld": tp_list(f.expected.withheld),
                "assignor_path": f.expected.path,
                "leader": leader,
            },
        )
    ]
