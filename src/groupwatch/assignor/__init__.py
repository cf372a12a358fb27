"""Kafka's sticky and cooperative-sticky assignors, re-implemented in pure Python with exact parity.

``assign(...)`` answers "what would a correct, generation-aware leader assign here?" exactly as
kafka-clients 4.x ``StickyAssignor``/``CooperativeStickyAssignor`` would; ``invariants`` holds
the checks (validity, Kafka's balance definitions) the findings engine reuses.
"""

from groupwatch.assignor.claims import (
    Claims,
    ClaimVerdict,
    member_generations,
    read_claims,
)
from groupwatch.assignor.model import (
    DEFAULT_GENERATION,
    PROTOCOLS,
    AssignmentResult,
    AssignorError,
    AssignorInputError,
    KafkaAssignorFailure,
    MemberSubscription,
    Protocol,
    TopicPartition,
)
from groupwatch.assignor.sticky import PartitionRacks, assign

__all__ = [
    "DEFAULT_GENERATION",
    "ClaimVerdict",
    "Claims",
    "PROTOCOLS",
    "AssignmentResult",
    "AssignorError",
    "AssignorInputError",
    "KafkaAssignorFailure",
    "MemberSubscription",
    "PartitionRacks",
    "Protocol",
    "TopicPartition",
    "assign",
    "member_generations",
    "read_claims",
]
