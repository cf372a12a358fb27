"""What each page shows, computed from the tables as plain pandas: no Dash, no I/O.

Every function takes frames as ``DeltaStore.read`` returns them and the page's ``Filters``;
filter values are only ever compared with column values.  A modern group's (KIP-848 consumer,
streams, share) ``generation`` is its group epoch; :mod:`groupwatch.dashboard.modern` reads its
members, which are written one current-assignment record at a time.

The pages use the names below; the modules hold them by what they compute: ``fleet_table``
(one row per group), ``findings`` (findings in a window, of a generation, the expected diff),
``matrix`` (partition ownership), ``history`` (generation timeline, partition history) and
``health`` (quarantine, validation, throughput).
"""

from groupwatch.dashboard.views.findings import (
    expected_diff,
    filtered_findings,
    findings_at,
    findings_over_time,
    with_event_time,
)
from groupwatch.dashboard.views.fleet_table import (
    fleet,
    fleet_base,
    fleet_members,
    fleet_rows,
    fleet_snapshots,
    group_topics,
    groups_with_topic,
    open_findings,
    topic_pairs,
)
from groupwatch.dashboard.views.health import (
    quarantine_counts,
    records_per_minute,
    throughput,
    validation_summary,
)
from groupwatch.dashboard.views.history import partition_history, timeline
from groupwatch.dashboard.views.matrix import (
    Cell,
    Matrix,
    MatrixMember,
    MatrixRow,
    modern_matrix,
    ownership_matrix,
)

__all__ = [
    "Cell",
    "Matrix",
    "MatrixMember",
    "MatrixRow",
    "expected_diff",
    "filtered_findings",
    "findings_at",
    "findings_over_time",
    "fleet",
    "fleet_base",
    "fleet_members",
    "fleet_rows",
    "fleet_snapshots",
    "group_topics",
    "groups_with_topic",
    "modern_matrix",
    "open_findings",
    "ownership_matrix",
    "partition_history",
    "quarantine_counts",
    "records_per_minute",
    "throughput",
    "timeline",
    "topic_pairs",
    "validation_summary",
    "with_event_time",
]
