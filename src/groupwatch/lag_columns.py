"""The lag tables' columns as readers see them: ``partition_lag`` (the current lag of every
committed (group, topic, partition)), ``end_offsets`` (the brokers' answers, a history) and
``lag_history`` (lag per group and topic per poll).

Their names and types are an external contract (issue 30: alert rules, analysts' SQL and
held-out checks read them).  The job's table catalogue (:mod:`groupwatch.tables`) is where the
writer declares its tables; readers (the dashboard, the notifier, tests writing fixtures) take a
lag table's columns from the catalogue when it declares it and from here otherwise, so a
deployment whose job predates lag still reads, as "lag not yet known".
"""

from __future__ import annotations

from groupwatch.tables import Column

#: Worst first: the status of a topic or a group is the worst of its partitions'.
STATUS_ORDER: tuple[str, ...] = ("stopped", "stalled", "rewound", "lagging", "ok", "idle")
STATUS_RANK: dict[str, int] = {s: i for i, s in enumerate(STATUS_ORDER)}

PARTITION_LAG: tuple[Column, ...] = (
    Column("group", "string", "consumer group"),
    Column("topic", "string", "topic"),
    Column("partition", "int", "partition"),
    Column("committed_offset", "bigint", "the group's latest committed offset"),
    Column("commit_time", "timestamp", "when it was committed"),
    Column("end_offset", "bigint", "the log-end offset used (null if never observed)"),
    Column("lag_records", "bigint", "records behind: end - committed, never negative"),
    Column("lag_seconds", "double", "age of the oldest unconsumed record (null if unknown)"),
    Column("lag_seconds_at_least", "boolean", "lag_seconds is a lower bound (short history)"),
    Column("status", "string", "ok, lagging, stalled, stopped, rewound or idle"),
    Column("owner_member", "string", "member that owns the partition now"),
    Column("owner_client", "string", "its client id"),
    Column("owner_host", "string", "its host"),
    Column("owner_generation", "int", "the generation or member epoch it owns it at"),
    Column("observed_at", "timestamp", "when the brokers reported the end offset used"),
)
END_OFFSETS: tuple[Column, ...] = (
    Column("topic", "string", "topic"),
    Column("partition", "int", "partition"),
    Column("start_offset", "bigint", "log-start offset"),
    Column("end_offset", "bigint", "log-end offset"),
    Column("observed_at", "timestamp", "when the brokers answered"),
)
LAG_HISTORY: tuple[Column, ...] = (
    Column("group", "string", "consumer group"),
    Column("topic", "string", "topic"),
    Column("observed_at", "timestamp", "the poll"),
    Column("partitions", "int", "partitions with a committed offset"),
    Column("lag_records", "bigint", "sum over the partitions"),
    Column("lag_seconds", "double", "max over the partitions (null if unknown)"),
    Column("status", "string", "worst over the partitions"),
)
LAG_TABLES: dict[str, tuple[Column, ...]] = {
    "partition_lag": PARTITION_LAG,
    "end_offsets": END_OFFSETS,
    "lag_history": LAG_HISTORY,
}


def status_rank(status: object) -> int:
    """Sort key of a status, worst first; an unknown or missing one after ``idle``."""
    return STATUS_RANK.get(str(status), len(STATUS_ORDER)) if status is not None else 99
