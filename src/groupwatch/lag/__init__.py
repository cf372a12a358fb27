"""Consumer lag where people read it: ``groupwatch lag`` (:mod:`.command`).

The rules themselves are the engine's, plain Python in :mod:`groupwatch.detect.lag` (shared by
``groupwatch analyze`` and the job); re-exported here for readers of the lag tables.
"""

from groupwatch.detect.lag.estimate import Behind, seconds_behind
from groupwatch.detect.lag.judge import FINDING_OF, LagRules, Track, Verdict, judge
from groupwatch.detect.lag.model import (
    WORST_FIRST,
    Commit,
    EndOffset,
    Owner,
    PartitionLag,
    Status,
    worst,
)

__all__ = [
    "FINDING_OF",
    "WORST_FIRST",
    "Behind",
    "Commit",
    "EndOffset",
    "LagRules",
    "Owner",
    "PartitionLag",
    "Status",
    "Track",
    "Verdict",
    "judge",
    "seconds_behind",
    "worst",
]
