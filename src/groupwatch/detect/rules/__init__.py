"""Per-snapshot rules: what is wrong inside one classic ``GroupMetadataValue`` record.

Every rule is a function of the snapshot, the partition counts and the expected assignment
only; :func:`snapshot_findings` runs them all in the catalogue's order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.expected import NoExpected
from groupwatch.detect.findings import Finding
from groupwatch.detect.history import AssignedGeneration
from groupwatch.detect.model import GroupSnapshot
from groupwatch.detect.rules import balance, claims, members
from groupwatch.detect.rules.facts import Facts, facts
from groupwatch.detect.topic_counts import Missing


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule and whether it judges the leader's assignment (such rules are silent while a
    generation awaits its SyncGroup: the record says nothing about the assignment yet)."""

    check: Callable[[Facts], list[Finding]]
    judges_assignment: bool


RULES: tuple[Rule, ...] = (
    Rule(claims.assignment_overlap, True),
    Rule(claims.owned_overlap, False),
    Rule(claims.owned_overlap_without_generation, False),
    Rule(claims.cooperative_violation, True),
    Rule(claims.unsubscribed, True),
    Rule(claims.stale_owned, False),
    Rule(claims.stale_claim_honored, True),
    Rule(balance.unassigned, True),
    Rule(balance.missing_topic, True),
    Rule(balance.imbalanced, True),
    Rule(members.userdata_mismatch, False),
    Rule(balance.sticky_divergence, True),
    Rule(members.version_mix, False),
    Rule(members.decode_errors, False),
)


def snapshot_findings(
    snap: GroupSnapshot,
    config: DetectorConfig,
    counts: Mapping[str, int],
    count_sources: Mapping[str, str] | None = None,
    withholding_seen: bool = False,
    missing: Mapping[str, Missing] | None = None,
    previous: AssignedGeneration | None = None,
    repeated_generation: bool = False,
) -> list[Finding]:
    """All per-snapshot findings of one consumer-group snapshot.

    ``missing``: subscribed topics the leader found no partition of (judged across snapshots by
    :func:`groupwatch.detect.topic_counts.missing_topics`); ``counts`` leaves them out.
    ``unassigned_partitions`` and ``imbalanced_assignment`` come out unconfirmed: the caller
    (:mod:`groupwatch.detect.confirm`) holds them until the state persists.  ``previous`` is
    the last completed generation before ``snap`` (claims without a generation are checked
    against it); ``repeated_generation``: ``snap`` repeats the last completed generation.
    """
    if snap.protocol_type != "consumer" or not snap.members:
        return []
    f = facts(
        snap,
        config,
        counts,
        count_sources or {},
        withholding_seen,
        missing or {},
        previous,
        repeated_generation,
    )
    out: list[Finding] = []
    for rule in RULES:
        if snap.awaiting_assignment and rule.judges_assignment:
            continue
        out.extend(rule.check(f))
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
