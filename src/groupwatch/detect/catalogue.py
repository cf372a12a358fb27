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
    #: Raised for KIP-848 consumer groups and streams groups (their own records), not classic.
    modern: bool = False
    #: Judged from lag (committed offsets against the brokers' end offsets, ``detect/lag``), not
    #: from a group's metadata records: no record scenario can raise it.
    lag: bool = False
    #: Judged from a share group's progress in ``__share_group_state`` (``detect/share``), not
    #: from ``__consumer_offsets``.
    share: bool = False


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
        "Kafka's assignor (3.5+) invalidates it for all of them. Claims that carry no "
        'generation are never "the same generation": see '
        "`owned_overlap_without_generation`.",
        ("KAFKA-14639",),
    ),
    Kind(
        "owned_overlap_without_generation",
        "critical",
        "partition",
        False,
        "Two or more members claim a partition, none of these claims carries a generation "
        "(StickyAssignor user data v0 before 2.3, cooperative-sticky before 3.0, clients that "
        "never set one) and the records do not tell which is current (every claimant was in "
        "the last completed generation, or it is not known). What a leader does with it "
        "depends on its assignor's version: Kafka's current assignor invalidates the claim "
        "for all of them, a StickyAssignor before 2.3 leaves the partition with every "
        "claimant. A claimant that was not in the last completed generation, which gave the "
        "partition to another member, is inferred stale instead (`stale_owned_partitions`).",
        ("KAFKA-12984", "aiokafka#1176"),
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
        "A member's claim on partitions is stale: Kafka's assignor (kafka-clients 4.x, the "
        "same since 3.5) clears it because another member claims them at a higher generation, "
        "or, for a claim that carries no generation, it is inferred stale because the member "
        "was not in the last completed generation, which gave them to others. The finding says "
        "what Kafka did with the claim (\"cleared: generation 5 is older than B's generation "
        '7, which holds it") or from which generation it was inferred. Claims are read as '
        "Kafka's assignor reads them, in its member order, on both of its paths (equal and "
        "unequal subscriptions): a partition nobody else claims stays its claimant's whatever "
        "its generation, so a lower or reset (-1) generation nobody contests is not stale "
        "(only kafka-clients 2.x and 3.0-3.4 cleared every claim behind the highest "
        "generation). The re-run assignor and every rule here share that one reading.",
        ("KAFKA-7026", "KAFKA-13419", "KAFKA-15106"),
    ),
    Kind(
        "stale_claim_honored",
        "warning",
        "partition",
        False,
        "A partition went to a member whose claim on it was stale (by generation, or inferred "
        "as in `stale_owned_partitions`) while another member's claim on it holds, and a "
        "correct assignor gives it elsewhere (or it went to both).",
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
        "subscribed_topic_missing",
        "info",
        "topic",
        True,
        "Members subscribe to a topic that does not exist (deleted; Kafka's Java consumer keeps "
        "a deleted topic in its subscription until restarted): the leader assigned none of its "
        "partitions while it assigned other topics, or the topic had partitions before, or the "
        "brokers list no such topic. Its partitions are not counted as unassigned; raised each "
        "generation until the subscription changes or the topic exists again (a re-created "
        "topic's partitions are counted anew).",
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
        "computes from the same subscriptions. Raised only where the re-run's inputs are known "
        "to equal the leader's: the leader sends subscription v3 the way Kafka's Java client "
        "3.5+ does (whose assignor is the one re-run; no empty rack id, cooperative user data "
        "whose generation is the subscription's), the record is the generation's own "
        "assignment (not a static member's replacement under the same generation), and no "
        "claim was inferred stale. The finding names a member, what it got and what the re-run "
        "gives.",
        ("KAFKA-15170",),
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
        "newer_record_version",
        "info",
        "record",
        False,
        "A record written by a newer Kafka: its value's version is newer than groupwatch knows "
        "for its record type. It was read by the fields groupwatch knows (the newest version it "
        "knows; the bytes after them left unread) and judged like any other record, and its raw "
        "bytes are kept in `quarantine` (error kind `newer_version`). The text and the evidence "
        "name the record type and the version; one finding per group, record type and version. "
        "A new groupwatch release reads the new fields.",
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
    Kind(
        "rebalance_stuck",
        "error",
        "group",
        True,
        "Classic group: a rebalance that does not complete. The generation named is the last "
        "completed one (its members are named); raised when the next record skips "
        "`stuck_skipped_generations` or more generations (joins whose SyncGroup never "
        "completed) after `stuck_skipped_after_ms` without a commit, or when the brokers "
        "report the group PreparingRebalance/CompletingRebalance at two looks and the records "
        "show neither a completed generation nor a commit for `stuck_after_ms`. After the "
        "group emptied (a rollout) the generation named is the empty one: raised when the next "
        "record skips generations (an Empty one again, or a completed one after more skips "
        "than `stuck_skipped_generations` plus its members), or when the brokers report "
        "members rebalancing at two looks `stuck_after_ms` after the first. Closed by a "
        "later generation, or the group's deletion.",
        ("KAFKA-13406", "KAFKA-12984", "KAFKA-15106"),
    ),
    # -- KIP-848 consumer groups and KIP-1071 streams groups (records 3-8, 16, 17-23) -------
    # Judged at quiescent points (see docs/detection.md): raised when a violation still holds
    # `modern_confirm_ms` after it was first seen, or once its own time limit has passed.
    Kind(
        "partition_owned_twice",
        "critical",
        "partition",
        False,
        "KIP-848: a partition is in two members' assigned or pending-revocation partitions at "
        'once; the coordinator\'s replay refuses such a log ("the partition is still owned").',
        ("KAFKA-16147",),
        modern=True,
    ),
    Kind(
        "partition_assigned_and_pending",
        "critical",
        "partition",
        False,
        "KIP-848: one member holds a partition both as assigned and as pending revocation.",
        ("KAFKA-16147",),
        modern=True,
    ),
    Kind(
        "handover_while_held",
        "critical",
        "partition",
        True,
        "KIP-848: a member received a partition while the previous holder's latest record still "
        "held it (assigned or pending revocation).",
        ("KAFKA-16147",),
        modern=True,
    ),
    Kind(
        "handover_epoch_not_increased",
        "critical",
        "partition",
        True,
        "KIP-848: a member received a partition at a member epoch not above the epoch at which "
        "the previous holder last held it: two owners of one partition at one epoch.",
        ("KAFKA-19974", "KAFKA-19431"),
        modern=True,
    ),
    Kind(
        "handover_epoch_not_increased_known",
        "warning",
        "partition",
        True,
        "As `handover_epoch_not_increased`, on a broker version known to do it "
        "(`broker_version` below 4.2.0, KAFKA-19974): the fix is an upgrade.",
        ("KAFKA-19974",),
        modern=True,
    ),
    Kind(
        "member_state_inconsistent",
        "error",
        "member",
        False,
        "KIP-848/streams: a member's state contradicts its partitions: UNREVOKED with nothing "
        "pending revocation (a static member away at epoch -2 excepted), or STABLE/UNRELEASED "
        "with partitions pending revocation.",
        modern=True,
    ),
    Kind(
        "member_state_unknown",
        "warning",
        "member",
        False,
        "KIP-848/streams: a member's state byte is none of STABLE, UNREVOKED, UNRELEASED.",
        modern=True,
    ),
    Kind(
        "epoch_order_violation",
        "error",
        "member",
        False,
        "KIP-848/streams: epochs out of order: a member epoch above the assignment epoch or the "
        "group epoch, or the assignment epoch above the group epoch (-2 excepted).",
        ("KAFKA-20442",),
        modern=True,
    ),
    Kind(
        "epoch_regression",
        "error",
        "group",
        True,
        "KIP-848/streams: the group epoch, the assignment epoch or a member's epoch went down "
        "with no tombstone of that key in between.",
        modern=True,
    ),
    Kind(
        "stable_member_off_target",
        "error",
        "member",
        False,
        "KIP-848: a STABLE member at the assignment epoch holds other partitions than its "
        "target restricted to its subscription.",
        modern=True,
    ),
    Kind(
        "target_overlap",
        "error",
        "partition",
        False,
        "KIP-848/streams: the target assignment gives one partition (active task) to two "
        "members; the second waits UNRELEASED for ever.",
        modern=True,
    ),
    Kind(
        "assignment_outside_subscription",
        "warning",
        "member",
        False,
        "KIP-848: a member is assigned (not merely pending revocation) partitions of a topic "
        "neither its topic list nor its regex subscribes to.",
        ("KAFKA-19431",),
        modern=True,
    ),
    Kind(
        "revocation_overdue",
        "warning",
        "member",
        False,
        "KIP-848/streams: a member has been UNREVOKED longer than its rebalance timeout plus "
        "`revocation_grace_ms`; the coordinator should have fenced it.",
        modern=True,
    ),
    Kind(
        "unreleased_too_long",
        "warning",
        "member",
        False,
        "KIP-848/streams: a member has waited UNRELEASED (for partitions another member still "
        "holds) longer than `unreleased_max_ms`.",
        modern=True,
    ),
    Kind(
        "assignment_epoch_behind",
        "warning",
        "group",
        False,
        "KIP-848/streams: a group with members has had its group epoch above its assignment "
        "epoch longer than `assignment_lag_max_ms`: no new target assignment was computed.",
        ("KAFKA-20442",),
        modern=True,
    ),
    Kind(
        "static_member_away_too_long",
        "warning",
        "member",
        False,
        "KIP-848: a static member has been away (member epoch -2) longer than "
        "`static_session_timeout_ms`; the coordinator should have removed it.",
        modern=True,
    ),
    Kind(
        "topic_id_unresolved",
        "info",
        "topic",
        False,
        "KIP-848: a check needed the name of a topic id that no record of the group (partition "
        "metadata, v4 offset commits) nor the configured names gave; the check was skipped.",
        modern=True,
    ),
    Kind(
        "share_records_archived",
        "warning",
        "partition",
        False,
        "Share group (KIP-932): the broker archived records of a share partition -- their "
        "delivery attempts ran out (`group.share.delivery.count.limit`, 5 by default) or a "
        "consumer rejected them -- so they will never be delivered again: poison records, or "
        "data a consumer threw away. Judged from `__share_group_state`; the evidence names the "
        "topic id, the archived offset ranges and their delivery counts. A healthy share group "
        "archives nothing.",
        share=True,
    ),
    Kind(
        "share_partition_stalled",
        "error",
        "partition",
        True,
        "Share group (KIP-932): a share partition's start offset (SPSO) has not moved for "
        "`share_stall_ms` while records wait past it and members are assigned the partition "
        "(their `ShareGroupCurrentMemberAssignment` records): the group's consumers are not "
        "getting through it. Records wait when the brokers' end offset is past SPSO + the "
        "delivery-complete count (`analyze --bootstrap-server`), or, from `__share_group_state` "
        "alone, when its state shows records in flight. The evidence names the topic, the "
        "partition, the SPSO, since when it stood there, the members assigned and what showed "
        "the records waiting. Resolved when the SPSO moves: a stall at the next SPSO is a "
        "finding of its own. A share partition nobody is assigned, or with nothing waiting, "
        "is idle, not stalled.",
        share=True,
    ),
    Kind(
        "share_delivery_retries",
        "warning",
        "partition",
        False,
        "Share group (KIP-932): `share_retry_records` or more in-flight records of one share "
        "partition have been delivered at least `share_delivery_count_limit` - 1 times "
        "without being acknowledged: a retry storm (consumers that time out, crash or release "
        "what they get), about to archive records in bulk. The limit is the brokers' "
        "`group.share.delivery.count.limit`, which no record states: groupwatch is told it "
        "(`detect.share_delivery_count_limit`, Kafka's default 5), and the evidence says so. "
        "A single record delivered again and again is a poison record, raised as "
        "`share_records_archived` once the broker gives up on it, never this alone. Raised "
        "once per first offset of the records retried.",
        share=True,
    ),
    Kind(
        "share_new_partition_records_skipped",
        "error",
        "partition",
        True,
        "Share group (KIP-932): a partition added to a topic the group already consumes "
        "started past its first offset, so the records produced to it before its leader "
        "loaded it were never delivered (KAFKA-20742: coordinators before Kafka 4.4.0 start a "
        "new partition with -1, resolved by `share.auto.offset.reset`, `latest` by default; "
        "the fix starts it at 0). Judged from `__share_group_state`: the partition's first "
        "record is the -1 initialisation at a state epoch above that of the topic's partitions "
        "already resolved, and its first resolved start offset S is above 0 (a new partition's "
        "log starts at 0, and S was at most its end offset then). The evidence names the "
        "topic, the partition, the skipped offsets (0 to S - 1) and the partitions that made "
        "the topic known. A new partition that starts at 0, and a topic new to the group that "
        "starts at its end offset (`latest`, as asked), are healthy.",
        ("KAFKA-20742",),
        share=True,
    ),
    Kind(
        "task_active_twice",
        "critical",
        "partition",
        False,
        "Streams group: an active task (subtopology, partition) is active or pending revocation "
        "in members of two processes at once.",
        modern=True,
    ),
    Kind(
        "task_active_and_standby",
        "error",
        "member",
        False,
        "Streams group: one process holds a task both as active and as standby or warm-up.",
        modern=True,
    ),
    Kind(
        "consumer_stopped",
        "error",
        "partition",
        True,
        "Lag (docs/lag.md): records wait on a partition and the group has not committed it for "
        "`lag.stop_seconds`, while the oldest waiting record is at least that old (judged on the "
        "brokers' answers and the commits' own times). Resolved when the group commits a new "
        "offset or nothing waits; an empty group stops alerting once retired "
        "(`lag.retire_hours`).",
        ("Burrow#740", "Burrow#338"),
        lag=True,
    ),
    Kind(
        "consumer_stalled",
        "warning",
        "partition",
        True,
        "Lag: the group keeps committing a partition but its offset has not moved for "
        "`lag.stop_seconds` while records wait that long (a paused or stuck consumer whose "
        "client commits on a timer).",
        lag=True,
    ),
    Kind(
        "offset_rewound",
        "warning",
        "partition",
        True,
        "Lag: a member moved a partition's committed offset backwards within one generation "
        "(not a rebalance, not a reset of the empty group); open until the group is back at "
        "the offset it left.",
        lag=True,
    ),
    Kind(
        "consumer_lagging",
        "warning",
        "partition",
        True,
        "Lag: the oldest waiting record of a partition has been more than `lag.warn_seconds` "
        "old in every judgement of a whole `lag.window_seconds`, and the lag did not shrink "
        "over it (a restart or rebalance that is worked off never is).",
        ("kminion#251", "kafka-lag-exporter#175"),
        lag=True,
    ),
)

KINDS: dict[str, Kind] = {k.name: k for k in CATALOGUE}
