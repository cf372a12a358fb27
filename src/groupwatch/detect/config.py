"""Thresholds and switches of the findings engine, with documented defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DetectorConfig:
    """Everything the engine can be tuned with.  Defaults are the documented ones.

    ``partitions_per_topic`` holds partition counts known from configuration or from the
    broker; topics missing from it are inferred from the records (see ``docs/findings.md``).
    """

    #: Protocols that follow KIP-429's two-phase hand-over (cooperative_revocation_violation,
    #: and the partitions a correct leader withholds for a round).
    cooperative_protocols: tuple[str, ...] = ("cooperative-sticky",)
    #: Protocols for which the expected assignment is computed (the assignor of issue C) and
    #: for which balance is a goal (imbalanced_assignment, sticky_divergence).
    sticky_protocols: tuple[str, ...] = ("sticky", "cooperative-sticky")
    #: rebalance_storm fires when MORE than this many generations fall within the window.
    storm_generations: int = 20
    #: The rebalance_storm window, in event time (record timestamps), milliseconds.
    storm_window_ms: int = 300_000
    #: generation_churn_stable_membership fires after this many consecutive generations with
    #: the same members, subscriptions and assignment.
    churn_generations: int = 4
    #: Per-group state bounds: topics whose partition count is inferred, and finding ids
    #: remembered (for the latest generation) to never raise a finding twice.
    max_inferred_topics: int = 10_000
    max_remembered_findings: int = 10_000
    #: Known partition counts (``--partitions FILE.json`` or the broker), topic -> count.
    partitions_per_topic: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.storm_generations < 1 or self.storm_window_ms < 1:
            raise ValueError("rebalance storm thresholds must be positive")
        if self.churn_generations < 2:
            raise ValueError("churn_generations must be at least 2")
        if any(n < 0 for n in self.partitions_per_topic.values()):
            raise ValueError("partition counts must not be negative")
