"""Thresholds and switches of the findings engine, with documented defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


def _doc(text: str) -> dict[str, str]:
    return {"doc": text}


@dataclass(frozen=True)
class DetectorConfig:
    """Everything the engine can be tuned with.  Defaults are the documented ones
    (``docs/findings.md`` is generated from the ``doc`` metadata below).
    """

    cooperative_protocols: tuple[str, ...] = field(
        default=("cooperative-sticky",),
        metadata=_doc(
            "protocols that follow KIP-429's two-phase hand-over: "
            "`cooperative_revocation_violation` applies, and partitions still claimed by "
            "someone may be withheld for a round"
        ),
    )
    sticky_protocols: tuple[str, ...] = field(
        default=("sticky", "cooperative-sticky"),
        metadata=_doc(
            "protocols whose expected assignment is re-computed (issue 4's assignor) and for "
            "which balance is a goal (`imbalanced_assignment`, `sticky_divergence`, "
            "`stale_claim_honored`)"
        ),
    )
    storm_generations: int = field(
        default=20,
        metadata=_doc("`rebalance_storm` fires when MORE than this many generations fall ..."),
    )
    storm_window_ms: int = field(
        default=300_000,
        metadata=_doc("... within this event-time window (ms, record timestamps)"),
    )
    churn_generations: int = field(
        default=4,
        metadata=_doc(
            "`generation_churn_stable_membership` fires once this many consecutive "
            "generations have the same members, subscriptions and assignment"
        ),
    )
    confirm_after_ms: int = field(
        default=60_000,
        metadata=_doc(
            "`unassigned_partitions` and `imbalanced_assignment` describe states a healthy group "
            "passes through (a cooperative first round, a leader without topic metadata yet); "
            "they are raised only when the group's next generation still shows them, or when "
            "this much stream time (ms) passes on the group's `__consumer_offsets` partition "
            "without a new generation"
        ),
    )
    modern_confirm_ms: int = field(
        default=10_000,
        metadata=_doc(
            "KIP-848 and streams groups: a violation of the group's state is raised at a "
            "quiescent point (the end of `analyze`'s input; the end of a job batch that read "
            "everything available) once it has held this much stream time (ms) on the group's "
            "`__consumer_offsets` partition, so half-written record groups do not alarm"
        ),
    )
    revocation_grace_ms: int = field(
        default=30_000,
        metadata=_doc(
            "`revocation_overdue`: slack (ms) beyond the member's rebalance timeout before an "
            "UNREVOKED member is overdue"
        ),
    )
    default_rebalance_timeout_ms: int = field(
        default=300_000,
        metadata=_doc("rebalance timeout (ms) of a member whose record does not state one"),
    )
    unreleased_max_ms: int = field(
        default=300_000,
        metadata=_doc(
            "`unreleased_too_long`: how long (ms) a member may wait UNRELEASED (at least the "
            "group's longest rebalance timeout plus `revocation_grace_ms`: it waits for "
            "members that may take that long to revoke)"
        ),
    )
    assignment_lag_max_ms: int = field(
        default=300_000,
        metadata=_doc(
            "`assignment_epoch_behind`: how long (ms) a group with members may have its group "
            "epoch above its assignment epoch (4.3 brokers batch assignments on purpose)"
        ),
    )
    static_session_timeout_ms: int = field(
        default=45_000,
        metadata=_doc(
            "`static_member_away_too_long`: the session timeout (ms) after which a static "
            "member away at epoch -2 should be gone (the broker's "
            "`group.consumer.session.timeout.ms`)"
        ),
    )
    stuck_skipped_generations: int = field(
        default=3,
        metadata=_doc(
            "`rebalance_stuck` from the records: this many generations or more missing between "
            "two group-metadata records (joins whose SyncGroup never completed; a healthy "
            "rolling restart skips one or two) ..."
        ),
    )
    stuck_skipped_after_ms: int = field(
        default=30_000,
        metadata=_doc(
            "... after at least this long (ms, record time) without a commit or a completed "
            "generation of the group, which had members and committed offsets before (a "
            "KAFKA-13406 incident on kafka-clients 3.0.0 went from generation 7 to 13 in 162 s)"
        ),
    )
    stuck_after_ms: int = field(
        default=300_000,
        metadata=_doc(
            "`rebalance_stuck` from the brokers' view: how long (ms) a group the brokers report "
            "PreparingRebalance/CompletingRebalance may have gone without a completed "
            "generation or a commit (the default is the Java client's default rebalance "
            "timeout: a rebalance within it does not alarm)"
        ),
    )
    share_stall_ms: int = field(
        default=300_000,
        metadata=_doc(
            "`share_partition_stalled`: how long (ms) a share partition's start offset may stay "
            "where it is while records wait past it and members are assigned the partition "
            "(ten times the brokers' default acquisition lock, 30 s: a record held that long has "
            "been handed out and taken back many times)"
        ),
    )
    share_delivery_count_limit: int = field(
        default=5,
        metadata=_doc(
            "the brokers' `group.share.delivery.count.limit` (Kafka's default 5): no record of "
            "either coordinator states it, so the engine is told it (`share_delivery_retries`)"
        ),
    )
    share_retry_records: int = field(
        default=3,
        metadata=_doc(
            "`share_delivery_retries`: how many in-flight records of one share partition at a "
            "delivery count of the limit minus one or more make a retry storm (a single poison "
            "record is `share_records_archived`'s, and does not trip it alone)"
        ),
    )
    max_named_members: int = field(
        default=100,
        metadata=_doc("state bound: members of the last completed generation kept by name"),
    )
    broker_version: str | None = field(
        default=None,
        metadata=_doc(
            "the brokers' Apache Kafka version, e.g. `4.1.1`; below 4.2.0 a handover at an "
            "unchanged epoch is the known KAFKA-19974 and raised as a warning"
        ),
    )
    topic_names: Mapping[str, str] = field(
        default_factory=dict,
        metadata=_doc(
            "topic id -> name known beforehand (the job asks the brokers' Admin API); the "
            "groups' own records (partition metadata, v4 offset commits) add to it"
        ),
    )
    max_inferred_topics: int = field(
        default=10_000,
        metadata=_doc("state bound: topics per group whose partition count is inferred"),
    )
    max_remembered_findings: int = field(
        default=10_000,
        metadata=_doc("state bound: recent finding ids per group kept to never repeat one"),
    )
    partitions_per_topic: Mapping[str, int] = field(
        default_factory=dict,
        metadata=_doc(
            "configured partition counts (`--partitions`, `detect.partitions`); they judge "
            "the generations written from `partitions_as_of_ms` on; other topics, and earlier "
            "generations, are judged by what the group's records show"
        ),
    )
    partitions_as_of_ms: int | None = field(
        default=None,
        metadata=_doc(
            "when the configured counts were stated (epoch ms: `analyze` uses the file's "
            "`as_of`, else the time it runs; the job `detect.partitions_since`, else the time "
            "it starts); `None`: they held for every record"
        ),
    )
    broker_partitions: Mapping[str, int] = field(
        default_factory=dict,
        metadata=_doc(
            "every topic's partition count as the brokers listed it at "
            "`broker_partitions_as_of_ms` (`analyze --bootstrap-server`): it judges the "
            "generations written from then on, and a subscribed topic not listed is gone "
            "from then on"
        ),
    )
    broker_partitions_as_of_ms: int | None = field(
        default=None,
        metadata=_doc("when the brokers were asked (epoch ms)"),
    )

    def __post_init__(self) -> None:
        if self.storm_generations < 1 or self.storm_window_ms < 1:
            raise ValueError("rebalance storm thresholds must be positive")
        if self.confirm_after_ms < 0:
            raise ValueError("confirm_after_ms must not be negative")
        if self.churn_generations < 2:
            raise ValueError("churn_generations must be at least 2")
        if (
            min(
                self.modern_confirm_ms,
                self.revocation_grace_ms,
                self.unreleased_max_ms,
                self.assignment_lag_max_ms,
                self.static_session_timeout_ms,
            )
            < 0
        ):
            raise ValueError("KIP-848 time limits must not be negative")
        if self.share_stall_ms < 0 or self.share_delivery_count_limit < 2:
            raise ValueError("share_stall_ms must not be negative, the delivery limit >= 2")
        if self.share_retry_records < 2:
            raise ValueError("share_retry_records must be at least 2 (one is a poison record)")
        if self.stuck_skipped_generations < 1:
            raise ValueError("stuck_skipped_generations must be at least 1")
        if min(self.stuck_skipped_after_ms, self.stuck_after_ms, self.max_named_members) < 0:
            raise ValueError("rebalance_stuck thresholds must not be negative")
        counts = (*self.partitions_per_topic.values(), *self.broker_partitions.values())
        if any(n < 0 for n in counts):
            raise ValueError("partition counts must not be negative")
