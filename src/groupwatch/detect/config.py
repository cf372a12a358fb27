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
            "known partition counts (`--partitions`, the broker); other topics are inferred"
        ),
    )

    def __post_init__(self) -> None:
        if self.storm_generations < 1 or self.storm_window_ms < 1:
            raise ValueError("rebalance storm thresholds must be positive")
        if self.confirm_after_ms < 0:
            raise ValueError("confirm_after_ms must not be negative")
        if self.churn_generations < 2:
            raise ValueError("churn_generations must be at least 2")
        if any(n < 0 for n in self.partitions_per_topic.values()):
            raise ValueError("partition counts must not be negative")
