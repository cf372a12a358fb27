"""The findings catalogue: every kind the engine can raise, in one table.

This table is the single source of truth.  ``docs/findings.md`` is generated from it
(``python -m groupwatch.detect.docs``), and dashboards and alert rules can be generated the
same way; the kind names and severities are a contract with everything downstream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["critical", "error", "warning", "info"]
#: Most severe first.
SEVERITIES: tuple[Severity, ...] = ("critical", "error", "warning", "info")
Scope = Literal["partition", "member", "topic", "snapshot", "record", "group"]


@dataclass(frozen=True, slots=True)
class Kind:
    """One finding kind: its contract name, severity, what one finding covers, and why."""

    name: str
    severity: Severity
    #: What one finding is about: a partition, a member, a topic, a whole snapshot, a record.
    scope: Scope
    #: Per snapshot (``False``) or judged across a group's snapshots (``True``).
    cross_snapshot: bool
    explanation: str
    incidents: tuple[str, ...] = ()


CATALOGUE: tuple[Kind, ...] = (
    Kind(
        "assignment_overlap",
        "critical",
        "partition",
        False,
        "A partition is in two or more members' assignments in the same generation: "
        "both consume it.",
        ("KAFKA-7026", "KAFKA-16147", "sarama#1500"),
    ),
    Kind(
        "owned_overlap_same_generation",
        "critical",
        "partition",
        False,
        "Two or more members claim a partition with the same, highest, claim generation; "
        "Kafka's assignor invalidates it for all of them.",
        ("KAFKA-12984", "KAFKA-14639", "aiokafka#1176"),
    ),
    Kind(
        "cooperative_revocation_violation",
        "critical",
        "partition",
        False,
        "Cooperative protocol: a partition validly claimed by one member is assigned to another "
        "in the same generation, without a revocation round in between.",
        ("KAFKA-13406", "KAFKA-14016", "KAFKA-14639", "KAFKA-15170"),
    ),
    Kind(
        "unsubscribed_assignment",
        "critical",
        "partition",
        False,
        "A member is assigned a partition of a topic it does not subscribe to.",
    ),
    Kind(
        "stale_owned_partitions",
        "warning",
        "member",
        False,
        "A member claims partitions with a claim generation below the highest in the snapshot "
        "(absent counts as -1); lists which of them are contested.",
        ("KAFKA-7026", "KAFKA-13419", "KAFKA-14016", "KAFKA-15106"),
    ),
    Kind(
        "stale_claim_honored",
        "warning",
        "partition",
        False,
        "A partition went to a member whose claim on it was stale, while a fresher claimant "
        "existed and a correct assignor gives it elsewhere.",
        ("KAFKA-7026", "KAFKA-13419"),
    ),
    Kind(
        "unassigned_partitions",
        "warning",
        "topic",
        False,
        "Partitions of a subscribed topic are assigned to nobody, beyond those a correct "
        "cooperative leader withholds for one round; raised once confirmed (still so in the "
        "next generation, or after `confirm_after_ms` of stream time).",
        ("KAFKA-14016",),
    ),
    Kind(
        "imbalanced_assignment",
        "warning",
        "snapshot",
        False,
        "The actual assignment breaks Kafka's balance definition (sticky protocols, complete "
        "rounds): members two or more apart share a topic, or a partition could move to a "
        "member that subscribes to it and has two fewer; raised once confirmed, as "
        "`unassigned_partitions`.",
        ("KAFKA-15170",),
    ),
    Kind(
        "userdata_mismatch",
        "warning",
        "member",
        False,
        "`sticky` protocol: the user data Kafka's StickyAssignor reads (previous assignment, "
        "generation) disagrees with the member's subscription (owned_partitions, or a "
        "generation_id behind the user data's), and re-running the assignor on the "
        "subscription's view assigns differently. Disagreements no Kafka assignor reads "
        "(cooperative-sticky with a generation_id, range, roundrobin, Streams) are the "
        "client's own bookkeeping and raise nothing.",
    ),
    Kind(
        "sticky_divergence",
        "info",
        "snapshot",
        False,
        "Sticky protocols: the actual assignment differs from what Kafka's current assignor "
        "computes from the same subscriptions.",
        ("KAFKA-14016", "KAFKA-15170"),
    ),
    Kind(
        "protocol_version_mix",
        "info",
        "snapshot",
        False,
        "Members send different subscription versions: an upgrade is in progress.",
    ),
    Kind(
        "decode_error",
        "error",
        "record",
        False,
        "A record, or one member's subscription or assignment, could not be decoded.",
    ),
    Kind(
        "generation_regression",
        "warning",
        "group",
        True,
        "A generation lower than the last one seen for the group, with no tombstone in between.",
    ),
    Kind(
        "rebalance_storm",
        "warning",
        "group",
        True,
        "More than the configured number of generations within the configured event-time window.",
        ("KAFKA-15106", "librdkafka#4783", "confluent-kafka-python#1090"),
    ),
    Kind(
        "generation_churn_stable_membership",
        "warning",
        "group",
        True,
        "Several consecutive generations with the same members, subscriptions and assignment: "
        "a rebalance loop.",
        ("KAFKA-15106", "KAFKA-13406"),
    ),
)

KINDS: dict[str, Kind] = {k.name: k for k in CATALOGUE}


def severity_of(kind: str) -> Severity:
    """The catalogue severity of ``kind`` (``KeyError`` for a kind not in the catalogue)."""
    return KINDS[kind].severity
