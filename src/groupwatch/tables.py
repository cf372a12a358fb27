"""The Delta tables the job writes, declared once: Spark schemas and the docs derive from here.

Column types are Spark SQL DDL, the one schema language Spark, Delta and analysts' SQL share.
The dashboard reads the same tables through delta-rs, so names stay plain snake_case.
"""

from __future__ import annotations

from dataclasses import dataclass

TP_LIST = "array<struct<topic: string, partitions: array<int>>>"
SOURCE = "struct<topic: string, partition: int, offset: bigint, timestamp: bigint>"


@dataclass(frozen=True)
class Column:
    name: str
    ddl: str
    doc: str


@dataclass(frozen=True)
class Table:
    """One Delta table: its columns, how it is partitioned, and the key a MERGE matches on."""

    name: str
    doc: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()
    #: Columns that identify a row; empty for append-only tables.
    key: tuple[str, ...] = ()

    @property
    def ddl(self) -> str:
        return ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _source_columns() -> tuple[Column, ...]:
    return (
        Column("source_topic", "string", "topic the record was read from"),
        Column("source_partition", "int", "its partition"),
        Column("source_offset", "bigint", "its offset"),
        Column("source_timestamp", "timestamp", "its Kafka timestamp (UTC)"),
    )


GROUP_SNAPSHOTS = Table(
    "group_snapshots",
    "One row per group-metadata record (a classic generation's snapshot, or a tombstone) and "
    "per group-epoch record of a KIP-848, streams or share group.",
    (
        Column("group", "string", "consumer group id"),
        Column(
            "generation",
            "int",
            "generation id (classic) or group epoch (KIP-848/streams/share); null for a tombstone",
        ),
        Column("group_type", "string", "`classic`, `consumer` (KIP-848), `streams` or `share`"),
        Column("assignment_epoch", "int", "KIP-848/streams: the target assignment's epoch"),
        Column("protocol_type", "string", "`consumer`, `connect`, ... (empty for an empty group)"),
        Column("protocol", "string", "selected assignor protocol name, e.g. `cooperative-sticky`"),
        Column("leader", "string", "member id of the leader"),
        Column("current_state_timestamp", "timestamp", "when the group reached this state (v2+)"),
        Column("member_count", "int", "members in the snapshot"),
        Column("record_version", "int", "GroupMetadataValue version"),
        Column("tombstone", "boolean", "the group was deleted"),
        Column("decode_error", "string", "error kind when the value did not decode, else null"),
        *_source_columns(),
        Column("snapshot_date", "date", "UTC date of source_timestamp (partition column)"),
    ),
    partition_by=("snapshot_date",),
    key=("source_partition", "source_offset"),
)

MEMBER_ASSIGNMENTS = Table(
    "member_assignments",
    "One row per member per classic snapshot (what it subscribed to, claimed and was assigned), "
    "and per current-assignment record of a KIP-848, streams or share group member (a tombstone "
    "of that record, the member leaving, is a row without member epoch and state).",
    (
        Column("group", "string", "consumer group id"),
        Column("generation", "int", "generation of the snapshot; group epoch (KIP-848)"),
        Column("member_id", "string", "member id"),
        Column("group_type", "string", "`classic`, `consumer` (KIP-848), `streams` or `share`"),
        Column("member_epoch", "int", "KIP-848/streams: the member's epoch (-2: static, away)"),
        Column(
            "member_state",
            "string",
            "KIP-848/streams: `STABLE`, `UNREVOKED`, `UNRELEASED` or `UNKNOWN(n)`",
        ),
        Column(
            "pending_revocation",
            TP_LIST,
            "KIP-848: partitions it still holds but must give up (streams: active tasks, with "
            "the subtopology as topic)",
        ),
        Column("target", TP_LIST, "KIP-848/streams: its target assignment at that point"),
        Column("group_instance_id", "string", "static member id, if any"),
        Column("client_id", "string", "client.id"),
        Column("client_host", "string", "client host as the broker saw it"),
        Column("rebalance_timeout", "int", "ms"),
        Column("session_timeout", "int", "ms"),
        Column("subscription_version", "int", "ConsumerProtocolSubscription version"),
        Column("topics", "array<string>", "subscribed topics"),
        Column(
            "claim",
            TP_LIST,
            "partitions the member says it owned (owned_partitions or sticky user data)",
        ),
        Column("claim_generation", "int", "generation of that claim; -1 when absent"),
        Column("assignment", TP_LIST, "partitions the leader assigned it for this generation"),
        Column("user_data_kind", "string", "`sticky`, `cooperative-sticky`, `raw` or null"),
        Column("subscription_error", "string", "decode error of the subscription bytes"),
        Column("assignment_error", "string", "decode error of the assignment bytes"),
        *_source_columns(),
        Column("snapshot_date", "date", "UTC date of source_timestamp (partition column)"),
    ),
    partition_by=("snapshot_date",),
    key=("source_partition", "source_offset", "member_id"),
)

PARTITION_OWNERSHIP = Table(
    "partition_ownership",
    "Who owned each (group, topic, partition) from which generation and time to which; for "
    "KIP-848 groups the generations are member epochs, and pending revocation counts as owned.",
    (
        Column("group", "string", "consumer group id"),
        Column("group_type", "string", "`classic`, `consumer` (KIP-848) or `streams`"),
        Column("topic", "string", "topic"),
        Column("partition", "int", "partition"),
        Column("member_id", "string", "the owner"),
        Column("client_id", "string", "the owner's client.id"),
        Column("from_generation", "int", "first generation it was assigned in"),
        Column("from_time", "timestamp", "source timestamp of that snapshot"),
        Column(
            "to_generation", "int", "first generation it no longer was; null while it still owns it"
        ),
        Column("to_time", "timestamp", "source timestamp of that snapshot; null while open"),
    ),
    key=("group", "topic", "partition", "from_generation", "member_id"),
)

FINDINGS = Table(
    "findings",
    "What the detectors found, one row per finding id (fields as `groupwatch analyze` prints).",
    (
        Column("finding_id", "string", "deterministic id: one finding is never raised twice"),
        Column("kind", "string", "catalogue kind, e.g. `assignment_overlap`"),
        Column("severity", "string", "`critical`, `error`, `warning` or `info`"),
        Column("group", "string", "consumer group id"),
        Column("generation", "int", "generation of the snapshot"),
        Column("topic", "string", "for per-partition kinds"),
        Column("partition", "int", "for per-partition kinds"),
        Column("member", "string", "for per-member kinds"),
        Column("members", "array<string>", "members involved"),
        Column("partitions", TP_LIST, "partitions involved"),
        Column("detail", "string", "one human-readable sentence"),
        Column("evidence", "string", "JSON object with the facts behind the finding"),
        Column("source", SOURCE, "the record that produced it"),
        Column("detected_at", "timestamp", "when the job wrote it"),
    ),
    key=("finding_id",),
)

QUARANTINE = Table(
    "quarantine",
    "Every record or member that failed to decode or validate, with its raw bytes.",
    (
        Column("stage", "string", "`decode` or `validate`"),
        Column("error_kind", "string", "machine-readable error kind"),
        Column("field_path", "string", "where in the record, e.g. `members[2].subscription`"),
        Column("byte_offset", "int", "byte offset of the error in the failing bytes"),
        Column("message", "string", "the error in words"),
        Column("group", "string", "group, when the key said"),
        Column("member_id", "string", "for a member-level error"),
        Column("key", "binary", "raw record key"),
        Column("value", "binary", "raw record value"),
        *_source_columns(),
        Column("quarantined_at", "timestamp", "when the job wrote it"),
    ),
    key=("source_partition", "source_offset", "stage", "field_path"),
)

GROUP_OFFSETS = Table(
    "group_offsets",
    "Offset-commit activity per (group, topic), aggregated in the JVM.",
    (
        Column("group", "string", "consumer group id"),
        Column("topic", "string", "topic"),
        Column("max_partition", "int", "highest partition the group committed for"),
        Column("commits", "bigint", "offset-commit records seen"),
        Column("last_commit_time", "timestamp", "source timestamp of the newest commit record"),
    ),
    key=("group", "topic"),
)

VALIDATION_RESULTS = Table(
    "validation_results",
    "Great Expectations results, one row per expectation per validated batch.",
    (
        Column("batch_id", "bigint", "micro-batch id"),
        Column("table_name", "string", "validated table"),
        Column("expectation", "string", "expectation type and column"),
        Column("success", "boolean", "passed"),
        Column("unexpected_count", "bigint", "rows that failed it"),
        Column("details", "string", "JSON result summary"),
        Column("validated_at", "timestamp", "when"),
    ),
    key=("batch_id", "table_name", "expectation"),
)

GROUP_STATE = Table(
    "group_state",
    "The job's per-group analysis state, one version per batch that touched the group (internal).",
    (
        Column("group", "string", "consumer group id"),
        Column("batch_id", "bigint", "micro-batch that produced this state"),
        Column("state", "string", "JSON state of the group"),
        Column("last_event_time", "timestamp", "newest source timestamp seen for the group"),
        Column("deleted", "boolean", "the group was deleted or expired: its state is gone"),
        Column(
            "pending_until",
            "timestamp",
            "stream time from which a finding awaiting confirmation is raised if the group "
            "has no new generation by then (null: nothing awaits confirmation)",
        ),
        Column(
            "pending_partition",
            "int",
            "the source partition whose stream time counts for `pending_until`",
        ),
    ),
    key=("group", "batch_id"),
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        GROUP_SNAPSHOTS,
        MEMBER_ASSIGNMENTS,
        PARTITION_OWNERSHIP,
        FINDINGS,
        QUARANTINE,
        GROUP_OFFSETS,
        VALIDATION_RESULTS,
        GROUP_STATE,
    )
}


def markdown() -> str:
    """The tables as Markdown, for docs/tables.md."""
    out = ["# Delta tables", "", "Generated from `src/groupwatch/tables.py`.", ""]
    for table in TABLES.values():
        out += [f"## `{table.name}`", "", table.doc, ""]
        if table.partition_by:
            out += [f"Partitioned by `{', '.join(table.partition_by)}`.", ""]
        if table.key:
            out += [f"Identified by `{', '.join(table.key)}`.", ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | `{c.ddl}` | {c.doc} |" for c in table.columns]
        out.append("")
    return "\n".join(out)
