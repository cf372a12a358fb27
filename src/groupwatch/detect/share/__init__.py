"""Share groups' progress: each share partition's state from ``__share_group_state``."""

from groupwatch.detect.share.state import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    Batch,
    SharePartitionKey,
    SharePartitionState,
    ShareStateBook,
    apply,
    combine,
)

__all__ = [
    "ACKNOWLEDGED",
    "ARCHIVED",
    "AVAILABLE",
    "Batch",
    "SharePartitionKey",
    "SharePartitionState",
    "ShareStateBook",
    "apply",
    "combine",
]
