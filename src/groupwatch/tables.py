"""The Delta tables the job writes, declared once: one frozen row dataclass per table, whose
fields are the table's columns (type, Spark SQL DDL and meaning).  Spark schemas, the Python
stage's Arrow output and docs/tables.md all derive from here.

Column types are Spark SQL DDL, the one schema language Spark, Delta and analysts' SQL share.
The dashboard reads the same tables through delta-rs, so names stay plain snake_case.  Every
column is nullable (the Python annotations say ``| None``); which ones a row fills is the
business of the code that builds it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TP_LIST = "array<struct<topic: string, partitions: array<int>>>"
SOURCE = "struct<topic: string, partition: int, offset: bigint, timestamp: bigint>"
#: A ``TP_LIST`` value: ``[{"topic": t, "partitions": [p, ...]}, ...]``.
TPList = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Column:
    name: str
    ddl: str
    doc: str


def column(ddl: str, doc: str) -> Any:
    """A row field that is a column of its table (null unless the row says otherwise)."""
    return dataclasses.field(default=None, metadata={"ddl": ddl, "doc": doc})


def timestamp(ms: int | None) -> dt.datetime | None:
    """Milliseconds since the epoch (Kafka's timestamps) -> a ``timestamp`` column's value
    (``None`` for none or a negative, Kafka's "no timestamp")."""
    if ms is None or ms < 0:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def utc_date(ms: int | None) -> dt.date | None:
    """The UTC day of a Kafka timestamp (``None`` as :func:`timestamp`)."""
    moment = timestamp(ms)
    return None if moment is None else moment.date()


def _source_topic() -> Any:
    return column("string", "topic the record was read from")


def _source_partition() -> Any:
    return column("int", "its partition")


def _source_offset() -> Any:
    return column("bigint", "its offset")


def _source_timestamp() -> Any:
    return column("timestamp", "its Kafka timestamp (UTC)")


#: ``lag_history``'s partitions, and those of ``partition_ownership``'s open intervals: a
#: group's rows are in one of this many, by a hash of its name.
GROUP_BUCKETS = 16
#: Spark SQL's :func:`group_bucket` (the rewrite of a table made before its bucket column).
GROUP_BUCKET_SQL = f"CAST(pmod(crc32(CAST(`group` AS BINARY)), {GROUP_BUCKETS}) AS INT)"


def group_bucket(group: str) -> int:
    """The bucket of a group's rows: the CRC-32 of its UTF-8 name modulo
    :data:`GROUP_BUCKETS`, as Spark's ``pmod(crc32(CAST(`group` AS BINARY)), 16)`` computes it
    (:data:`GROUP_BUCKET_SQL`)."""
    return zlib.crc32(group.encode("utf-8")) % GROUP_BUCKETS


#: Rows a row group of a :attr:`Table.read_by` table holds at most, as delta-rs writes it: a
#: group's state is 25 KB on average on the cluster model, so about 1.6 MB.
KEYED_ROW_GROUP_ROWS = 64
#: The row group size Spark's Parquet writer aims at for such a table (``parquet.block.size``;
#: its default is 128 MB, a start-up's whole file).
KEYED_ROW_GROUP_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Table:
    """One Delta table: its row type, how it is partitioned, and the key a MERGE matches on."""

    name: str
    doc: str
    row: type[Any]
    partition_by: tuple[str, ...] = ()
    #: Columns that identify a row; empty for append-only tables.
    key: tuple[str, ...] = ()
    #: A predicate on the partition columns that every row a MERGE can match satisfies: added
    #: to the MERGE's condition on the table's side, so that the files of the other partitions
    #: are neither read nor rewritten (empty: a MERGE may match any row).
    mergeable: str = ""
    #: Columns a table made by an older groupwatch gains filled from its other columns, as
    #: (column, Spark SQL expression): a partition column added since must hold its value.
    derived: tuple[tuple[str, str], ...] = ()
    #: A partition column holding :func:`group_bucket` of the ``group`` of every row a MERGE
    #: can match: a MERGE names its source's groups' buckets in its condition, so that the
    #: files of the other buckets are neither read nor rewritten (empty: no such column).
    merge_bucket: str = ""
    #: A condition on a MERGE's source row (alias ``s``) that makes it a removal: the matched
    #: row is deleted and nothing inserted (empty: every source row is kept).  A batch's rows
    #: say so where a key's newest record is a tombstone: a row of the thing as it now is
    #: must go with the thing.
    removed_when: str = ""
    #: A column the batches write each file's rows sorted by, in row groups of at most
    #: :data:`KEYED_ROW_GROUP_ROWS` rows (delta-rs) or :data:`KEYED_ROW_GROUP_BYTES` (Spark),
    #: so that a read of a few of its values opens a few row groups, not whole files (empty:
    #: written as they come).
    read_by: str = ""

    def merge_scope(self, groups: Iterable[str | None]) -> str:
        """The condition on the table's side (alias ``t``) that the rows a MERGE of rows of
        ``groups`` can match satisfy: :attr:`mergeable`, and the groups' buckets when the
        table has a :attr:`merge_bucket` column (empty: any row)."""
        scope = [f"t.{self.mergeable}"] if self.mergeable else []
        if self.merge_bucket:
            named = set(groups)
            # A null group has no bucket; such a MERGE is not narrowed.
            if None not in named and named:
                buckets = sorted({group_bucket(g) for g in named if g is not None})
                scope.append(f"t.`{self.merge_bucket}` IN ({', '.join(map(str, buckets))})")
        return " AND ".join(f"({part})" for part in scope)

    @property
    def columns(self) -> tuple[Column, ...]:
        """The row type's fields, in order, as columns."""
        return tuple(
            Column(f.name, f.metadata["ddl"], f.metadata["doc"])
            for f in dataclasses.fields(self.row)
        )

    @property
    def ddl(self) -> str:
        return ", ".join(f"`{c.name}` {c.ddl}" for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True, slots=True)
class SnapshotRow:
    """A row of ``group_snapshots``."""

    group: str | None = column("string", "consumer group id")
    generation: int | None = column(
        "int",
        "generation id (classic) or group epoch (KIP-848/streams/share); null for a tombstone",
    )
    group_type: str | None = column(
        "string", "`classic`, `consumer` (KIP-848), `streams` or `share`"
    )
    assignment_epoch: int | None = column("int", "KIP-848/streams: the target assignment's epoch")
    protocol_type: str | None = column(
        "string", "`consumer`, `connect`, ... (empty for an empty group)"
    )
    protocol: str | None = column(
        "string", "selected assignor protocol name, e.g. `cooperative-sticky`"
    )
    leader: str | None = column("string", "member id of the leader")
    current_state_timestamp: dt.datetime | None = column(
        "timestamp", "when the group reached this state (v2+)"
    )
    member_count: int | None = column("int", "members in the snapshot")
    record_version: int | None = column("int", "GroupMetadataValue version")
    tombstone: bool | None = column("boolean", "the group was deleted")
    decode_error: str | None = column(
        "string", "error kind when the value did not decode, else null"
    )
    source_topic: str | None = _source_topic()
    source_partition: int | None = _source_partition()
    source_offset: int | None = _source_offset()
    source_timestamp: dt.datetime | None = _source_timestamp()
    snapshot_date: dt.date | None = column(
        "date", "UTC date of source_timestamp (partition column)"
    )


GROUP_SNAPSHOTS = Table(
    "group_snapshots",
    "One row per group-metadata record (a classic generation's snapshot, or a tombstone) and per "
    "group-epoch record of a KIP-848, streams or share group.",
    SnapshotRow,
    partition_by=("snapshot_date",),
    key=("source_partition", "source_offset"),
)


@dataclass(frozen=True, slots=True)
class MemberRow:
    """A row of ``member_assignments``."""

    group: str | None = column("string", "consumer group id")
    generation: int | None = column("int", "generation of the snapshot; group epoch (KIP-848)")
    member_id: str | None = column("string", "member id")
    group_type: str | None = column(
        "string", "`classic`, `consumer` (KIP-848), `streams` or `share`"
    )
    member_epoch: int | None = column(
        "int", "KIP-848/streams: the member's epoch (-2: static, away)"
    )
    member_state: str | None = column(
        "string", "KIP-848/streams: `STABLE`, `UNREVOKED`, `UNRELEASED` or `UNKNOWN(n)`"
    )
    pending_revocation: TPList | None = column(
        TP_LIST,
        "KIP-848: partitions it still holds but must give up (streams: active tasks, with the "
        "subtopology as topic)",
    )
    target: TPList | None = column(TP_LIST, "KIP-848/streams: its target assignment at that point")
    group_instance_id: str | None = column("string", "static member id, if any")
    client_id: str | None = column("string", "client.id")
    client_host: str | None = column("string", "client host as the broker saw it")
    rebalance_timeout: int | None = column("int", "ms")
    session_timeout: int | None = column("int", "ms")
    subscription_version: int | None = column("int", "ConsumerProtocolSubscription version")
    topics: Sequence[str] | None = column("array<string>", "subscribed topics")
    claim: TPList | None = column(
        TP_LIST, "partitions the member says it owned (owned_partitions or sticky user data)"
    )
    claim_generation: int | None = column("int", "generation of that claim; -1 when absent")
    assignment: TPList | None = column(
        TP_LIST, "partitions the leader assigned it for this generation"
    )
    user_data_kind: str | None = column("string", "`sticky`, `cooperative-sticky`, `raw` or null")
    subscription_error: str | None = column("string", "decode error of the subscription bytes")
    assignment_error: str | None = column("string", "decode error of the assignment bytes")
    source_topic: str | None = _source_topic()
    source_partition: int | None = _source_partition()
    source_offset: int | None = _source_offset()
    source_timestamp: dt.datetime | None = _source_timestamp()
    snapshot_date: dt.date | None = column(
        "date", "UTC date of source_timestamp (partition column)"
    )


MEMBER_ASSIGNMENTS = Table(
    "member_assignments",
    "One row per member per classic snapshot (what it subscribed to, claimed and was assigned), "
    "and per current-assignment record of a KIP-848, streams or share group member (a tombstone "
    "of that record, the member leaving, is a row without member epoch and state).",
    MemberRow,
    partition_by=("snapshot_date",),
    key=("source_partition", "source_offset", "member_id"),
)


@dataclass(frozen=True, slots=True)
class OwnershipRow:
    """A row of ``partition_ownership``."""

    group: str | None = column("string", "consumer group id")
    group_type: str | None = column("string", "`classic`, `consumer` (KIP-848) or `streams`")
    topic: str | None = column("string", "topic")
    partition: int | None = column("int", "partition")
    member_id: str | None = column("string", "the owner")
    client_id: str | None = column("string", "the owner's client.id")
    from_generation: int | None = column("int", "first generation it was assigned in")
    from_time: dt.datetime | None = column("timestamp", "source timestamp of that snapshot")
    to_generation: int | None = column(
        "int", "first generation it no longer was; null while it still owns it"
    )
    to_time: dt.datetime | None = column(
        "timestamp", "source timestamp of that snapshot; null while open"
    )
    to_date: dt.date | None = column(
        "date", "UTC date of to_time; null while open (partition column)"
    )
    open_bucket: int | None = column(
        "int",
        f"while open, a hash of `group` modulo {GROUP_BUCKETS} (partition column, under "
        "`to_date`); null once closed",
    )


PARTITION_OWNERSHIP = Table(
    "partition_ownership",
    "Who owned each (group, topic, partition) from which generation and time to which; for "
    "KIP-848 groups the generations are member epochs, and pending revocation counts as owned. "
    "Partitioned by the day an interval closed, the open ones together and among them by a "
    f"hash of the group into {GROUP_BUCKETS}, so that the MERGE of each batch (which closes "
    "open intervals and opens new ones) reads and rewrites the open ones of its groups' "
    "buckets only. Open intervals are kept; closed ones for `upkeep.ownership_retention_days` "
    "after they end.",
    OwnershipRow,
    partition_by=("to_date", "open_bucket"),
    key=("group", "topic", "partition", "from_generation", "member_id"),
    mergeable="`to_date` IS NULL",
    derived=(
        ("to_date", "to_date(`to_time`)"),
        ("open_bucket", f"CASE WHEN `to_time` IS NULL THEN {GROUP_BUCKET_SQL} END"),
    ),
    merge_bucket="open_bucket",
)


@dataclass(frozen=True, slots=True)
class OwnershipInterval:
    """A ``partition_ownership`` interval still open, as a group's saved state keeps it between
    snapshots (classic) or records (KIP-848): everything its row needs, so the row it opened
    and the row that closes it carry the same key.

    The saved state stores it as a JSON list, classic and modern alike in their own shape
    (``groupwatch.rows.classic_ownership`` and ``groupwatch.rows.modern_ownership`` encode and
    decode it), so states
    written before this type existed load unchanged.
    """

    #: As the row writes it: for a modern group the topic's name when known, while the state's
    #: key holds the topic id the assignment names.
    topic: str
    partition: int
    member_id: str
    #: Of the owner when the interval opened; the row keeps it even if the client changes.
    client_id: str | None
    #: A classic generation, or a modern member's epoch: the row's ``from_generation``.
    from_generation: int
    #: Source timestamp of the record that opened it (ms): the row's ``from_time``.
    from_time_ms: int
    #: Modern groups only: the last member epoch at which the member was seen holding the
    #: partition, since a member that vanishes is closed at the epoch after it.  Classic
    #: intervals close at the generation that no longer has them and keep none.
    last_epoch: int | None = None

    def row(
        self, group: str, group_type: str, to_generation: int | None, to_time_ms: int | None
    ) -> OwnershipRow:
        """The interval's row: open when ``to_generation`` is None, else closed there."""
        # The partition of the open ones is where the day is null: a closing record without
        # a timestamp (Kafka's -1) leaves its row there, in its group's bucket.
        closed = utc_date(to_time_ms)
        return OwnershipRow(
            group=group,
            group_type=group_type,
            topic=self.topic,
            partition=self.partition,
            member_id=self.member_id,
            client_id=self.client_id,
            from_generation=self.from_generation,
            from_time=timestamp(self.from_time_ms),
            to_generation=to_generation,
            to_time=timestamp(to_time_ms),
            to_date=closed,
            open_bucket=group_bucket(group) if closed is None else None,
        )


@dataclass(frozen=True, slots=True)
class FindingRow:
    """A row of ``findings``."""

    finding_id: str | None = column("string", "deterministic id: one finding is never raised twice")
    kind: str | None = column("string", "catalogue kind, e.g. `assignment_overlap`")
    severity: str | None = column("string", "`critical`, `error`, `warning` or `info`")
    group: str | None = column("string", "consumer group id")
    generation: int | None = column("int", "generation of the snapshot")
    topic: str | None = column("string", "for per-partition kinds")
    partition: int | None = column("int", "for per-partition kinds")
    member: str | None = column("string", "for per-member kinds")
    members: Sequence[str] | None = column("array<string>", "members involved")
    partitions: TPList | None = column(TP_LIST, "partitions involved")
    detail: str | None = column("string", "one human-readable sentence")
    evidence: str | None = column("string", "JSON object with the facts behind the finding")
    source: Mapping[str, Any] | None = column(SOURCE, "the record that produced it")
    detected_at: dt.datetime | None = column("timestamp", "when the job wrote it")


FINDINGS = Table(
    "findings",
    "What the detectors found, one row per finding id (fields as `groupwatch analyze` prints).",
    FindingRow,
    key=("finding_id",),
)


@dataclass(frozen=True, slots=True)
class QuarantineRow:
    """A row of ``quarantine``."""

    stage: str | None = column("string", "`decode` or `validate`")
    error_kind: str | None = column("string", "machine-readable error kind")
    field_path: str | None = column("string", "where in the record, e.g. `members[2].subscription`")
    byte_offset: int | None = column("int", "byte offset of the error in the failing bytes")
    message: str | None = column("string", "the error in words")
    group: str | None = column("string", "group, when the key said")
    member_id: str | None = column("string", "for a member-level error")
    key: bytes | None = column("binary", "raw record key")
    value: bytes | None = column("binary", "raw record value")
    source_topic: str | None = _source_topic()
    source_partition: int | None = _source_partition()
    source_offset: int | None = _source_offset()
    source_timestamp: dt.datetime | None = _source_timestamp()
    quarantined_at: dt.datetime | None = column("timestamp", "when the job wrote it")


QUARANTINE = Table(
    "quarantine",
    "Every record or member that failed to decode or validate, with its raw bytes.",
    QuarantineRow,
    key=("source_partition", "source_offset", "stage", "field_path"),
)


@dataclass(frozen=True, slots=True)
class OffsetsRow:
    """A row of ``group_offsets``."""

    group: str | None = column("string", "consumer group id")
    topic: str | None = column("string", "topic")
    max_partition: int | None = column("int", "highest partition the group committed for")
    commits: int | None = column("bigint", "offset-commit records seen")
    last_commit_time: dt.datetime | None = column(
        "timestamp", "source timestamp of the newest commit record"
    )


GROUP_OFFSETS = Table(
    "group_offsets",
    "Offset-commit activity per (group, topic), aggregated in the JVM.",
    OffsetsRow,
    key=("group", "topic"),
)


@dataclass(frozen=True, slots=True)
class CommittedRow:
    """A row of ``committed_offsets``."""

    group: str | None = column("string", "consumer group id")
    topic: str | None = column("string", "topic")
    partition: int | None = column("int", "partition")
    committed_offset: int | None = column("bigint", "the latest committed offset")
    leader_epoch: int | None = column("int", "its leader epoch (-1: none; null before v3 values)")
    metadata_size: int | None = column("int", "bytes of the commit's metadata string")
    commit_time: dt.datetime | None = column(
        "timestamp", "the latest commit's record time (the coordinator's clock)"
    )
    moved_time: dt.datetime | None = column(
        "timestamp", "when the committed offset last changed (first commit of this offset)"
    )
    commits: int | None = column("bigint", "offset-commit records seen for the partition")


COMMITTED_OFFSETS = Table(
    "committed_offsets",
    "The latest committed offset per (group, topic, partition), aggregated in the JVM; an "
    "offset tombstone (offset deleted or expired, group deleted) removes the row.",
    CommittedRow,
    key=("group", "topic", "partition"),
)


@dataclass(frozen=True, slots=True)
class CommittedChangeRow:
    """A row of ``committed_changes``."""

    batch_id: int | None = column("bigint", "the micro-batch that read the commits")
    group: str | None = column("string", "consumer group id")
    topic: str | None = column("string", "topic")
    partition: int | None = column("int", "partition")
    tombstone: bool | None = column("boolean", "the batch's newest record was a tombstone")
    committed_offset: int | None = column("bigint", "the batch's newest committed offset")
    leader_epoch: int | None = column("int", "its leader epoch")
    metadata_size: int | None = column("int", "bytes of its metadata string")
    commit_time: dt.datetime | None = column("timestamp", "its record time")
    moved_time: dt.datetime | None = column(
        "timestamp", "the batch's last commit that changed the offset"
    )
    changes: int | None = column("bigint", "times the offset changed within the batch")
    commits: int | None = column("bigint", "offset-commit records of the batch")


COMMITTED_CHANGES = Table(
    "committed_changes",
    "The newest commit per partition of each live batch, not yet in `committed_offsets`: a "
    "continuous job folds them into it before each lag poll (and when it stops) instead of "
    "MERGEing every batch; the rows of folded batches are deleted by later batches "
    "(docs/lag.md).",
    CommittedChangeRow,
)


@dataclass(frozen=True, slots=True)
class EndOffsetRow:
    """A row of ``end_offsets``."""

    topic: str | None = column("string", "topic")
    partition: int | None = column("int", "partition")
    start_offset: int | None = column("bigint", "log start offset (`listOffsets` earliest)")
    end_offset: int | None = column("bigint", "log end offset (`listOffsets` latest)")
    observed_at: dt.datetime | None = column("timestamp", "when the brokers answered")


END_OFFSETS = Table(
    "end_offsets",
    "The brokers' log start and end offsets of every committed-to partition: the first and "
    "last answer of each flat run, a row an hour within one, a row every "
    "`lag.history_row_seconds` while the end moves; kept `lag.history_hours` (seconds behind "
    "is estimated from it; each partition's newest answer is in `partition_lag`).",
    EndOffsetRow,
)


@dataclass(frozen=True, slots=True)
class PartitionLagRow:
    """A row of ``partition_lag``."""

    group: str | None = column("string", "consumer group id")
    topic: str | None = column("string", "topic")
    partition: int | None = column("int", "partition")
    committed_offset: int | None = column("bigint", "the latest committed offset")
    commit_time: dt.datetime | None = column("timestamp", "when it was committed")
    end_offset: int | None = column("bigint", "log end offset (null if never observed)")
    lag_records: int | None = column(
        "bigint", "records behind: end - committed, never negative (null if end unknown)"
    )
    lag_seconds: float | None = column(
        "double", "age of the oldest unconsumed record (docs/lag.md; null where unknown)"
    )
    lag_seconds_at_least: bool | None = column(
        "boolean", "the history is too short: `lag_seconds` is a lower bound"
    )
    status: str | None = column(
        "string", "`ok`, `lagging`, `stalled`, `stopped`, `rewound` or `idle` (docs/lag.md)"
    )
    owner_member: str | None = column("string", "the member that owns it now (null: nobody)")
    owner_client: str | None = column("string", "its client.id")
    owner_host: str | None = column("string", "its host")
    owner_generation: int | None = column("int", "generation (classic) or member epoch (KIP-848)")
    observed_at: dt.datetime | None = column(
        "timestamp", "when the end offset used was observed (the brokers' answer)"
    )
    stale: bool | None = column(
        "boolean", "the brokers did not answer the last poll: the values are the last known"
    )
    retired: bool | None = column(
        "boolean", "nobody owns it and no commit for `lag.retire_hours`: not alerted"
    )


PARTITION_LAG = Table(
    "partition_lag",
    "Lag now, one row per (group, topic, partition) with a committed offset, rewritten every "
    "`lag.poll_seconds` (docs/lag.md).",
    PartitionLagRow,
    key=("group", "topic", "partition"),
)


@dataclass(frozen=True, slots=True)
class LagHistoryRow:
    """A row of ``lag_history``."""

    group: str | None = column("string", "consumer group id")
    topic: str | None = column("string", "topic")
    observed_at: dt.datetime | None = column("timestamp", "the poll's answer time")
    partitions: int | None = column("int", "committed partitions of the topic")
    lag_records: int | None = column("bigint", "records behind, summed over the partitions")
    lag_seconds: float | None = column(
        "double", "seconds behind, the maximum over the partitions (null if unknown)"
    )
    status: str | None = column("string", "the worst partition status")
    group_bucket: int | None = column(
        "int", f"the table's partition: a hash of `group` modulo {GROUP_BUCKETS}"
    )


LAG_HISTORY = Table(
    "lag_history",
    "Lag per (group, topic) at every poll, for lag over time; kept `lag.history_hours`. A poll "
    "writes a row per (group, topic), a week of them at the default poll is 40,320; "
    f"partitioned by a hash of the group into {GROUP_BUCKETS}, so that one group's history "
    f"(the dashboard's group page) reads a {GROUP_BUCKETS}th of the table.",
    LagHistoryRow,
    partition_by=("group_bucket",),
    derived=(("group_bucket", GROUP_BUCKET_SQL),),
)


@dataclass(frozen=True, slots=True)
class ValidationRow:
    """A row of ``validation_results``."""

    batch_id: int | None = column("bigint", "micro-batch id")
    table_name: str | None = column("string", "validated table")
    expectation: str | None = column("string", "expectation type and column")
    success: bool | None = column("boolean", "passed")
    unexpected_count: int | None = column("bigint", "rows that failed it")
    details: str | None = column("string", "JSON result summary")
    validated_at: dt.datetime | None = column("timestamp", "when")


VALIDATION_RESULTS = Table(
    "validation_results",
    "Great Expectations results, one row per expectation per validated batch.",
    ValidationRow,
    key=("batch_id", "table_name", "expectation"),
)


#: A share partition's in-flight batches (offsets handed out or to hand out again).
IN_FLIGHT = "array<struct<first_offset: bigint, last_offset: bigint, delivery_count: int>>"
#: Inclusive offset ranges.
RANGES = "array<struct<first_offset: bigint, last_offset: bigint>>"


@dataclass(frozen=True, slots=True)
class SharePartitionRow:
    """A row of ``share_partition_state``."""

    group: str | None = column("string", "share group id")
    topic: str | None = column("string", "topic name (null: its id not named yet)")
    topic_id: str | None = column("string", "topic id, as the share coordinator keys it")
    partition: int | None = column("int", "partition")
    start_offset: int | None = column(
        "bigint",
        "share-partition start offset (SPSO): everything before it is done with (never null "
        "in the table: a batch's row with none removes the partition, its state deleted)",
    )
    state_epoch: int | None = column("int", "state epoch of the newest snapshot (-1: none seen)")
    leader_epoch: int | None = column("int", "leader epoch the share coordinator last wrote")
    delivery_complete_count: int | None = column(
        "int", "records past the SPSO already acknowledged or archived (-1: a writer before 4.2)"
    )
    end_offset: int | None = column(
        "bigint", "the partition's log end offset when the job wrote the row (null: not asked)"
    )
    lag_records: int | None = column(
        "bigint",
        "share lag, Kafka's formula: end - SPSO - delivery-complete count (null if unknown)",
    )
    in_flight_records: int | None = column(
        "bigint", "records past the SPSO whose delivery is not complete"
    )
    in_flight_batches: Sequence[Mapping[str, Any]] | None = column(IN_FLIGHT, "those records")
    archived_records: int | None = column(
        "bigint", "records past the SPSO the broker archived (delivery attempts ran out)"
    )
    archived_ranges: Sequence[Mapping[str, Any]] | None = column(RANGES, "their offsets")
    max_delivery_count: int | None = column("int", "highest delivery count of the state")
    records_applied: int | None = column(
        "bigint", "`__share_group_state` records applied to the partition since its first"
    )
    observed_at: dt.datetime | None = column(
        "timestamp", "Kafka timestamp of the newest `__share_group_state` record applied"
    )
    end_observed_at: dt.datetime | None = column("timestamp", "when the brokers gave `end_offset`")
    source: Mapping[str, Any] | None = column(SOURCE, "the newest record applied")


SHARE_PARTITION_STATE = Table(
    "share_partition_state",
    "Each share partition now (KIP-932 share groups), one row per (group, topic, partition), "
    "as of its newest `__share_group_state` record (docs/lag.md, share groups).",
    SharePartitionRow,
    key=("group", "topic_id", "partition"),
    # The share coordinator's tombstones (the share group deleted, or the topic): the
    # partition has no state any more, and a row of it would show a lag nobody owes.
    removed_when="s.start_offset IS NULL",
)


@dataclass(frozen=True, slots=True)
class ShareHistoryRow:
    """A row of ``share_partition_history``."""

    group: str | None = column("string", "share group id")
    topic: str | None = column("string", "topic name (null: its id not named yet)")
    topic_id: str | None = column("string", "topic id")
    partition: int | None = column("int", "partition")
    start_offset: int | None = column("bigint", "SPSO after the record")
    state_epoch: int | None = column("int", "state epoch after the record")
    leader_epoch: int | None = column("int", "leader epoch after the record")
    delivery_complete_count: int | None = column("int", "delivery-complete count after the record")
    in_flight_records: int | None = column("bigint", "records in flight after the record")
    archived_records: int | None = column("bigint", "archived records past the SPSO after it")
    max_delivery_count: int | None = column("int", "highest delivery count after the record")
    deleted: bool | None = column("boolean", "a tombstone: the partition's state was removed")
    snapshot: bool | None = column(
        "boolean", "the record was a `ShareSnapshot` (the whole state), else a `ShareUpdate`"
    )
    observed_at: dt.datetime | None = column("timestamp", "the record's Kafka timestamp")
    source_topic: str | None = _source_topic()
    source_partition: int | None = _source_partition()
    source_offset: int | None = _source_offset()


SHARE_PARTITION_HISTORY = Table(
    "share_partition_history",
    "Every share partition's state after each `__share_group_state` record (append-only).",
    ShareHistoryRow,
    key=("group", "topic_id", "partition", "source_partition", "source_offset"),
)


@dataclass(frozen=True, slots=True)
class StateRow:
    """A row of ``group_state``."""

    group: str | None = column("string", "consumer group id")
    batch_id: int | None = column("bigint", "micro-batch that produced this state")
    state: str | None = column("string", "JSON state of the group")
    last_event_time: dt.datetime | None = column(
        "timestamp", "newest source timestamp seen for the group"
    )
    deleted: bool | None = column("boolean", "the group was deleted or expired: its state is gone")
    pending_until: dt.datetime | None = column(
        "timestamp",
        "stream time from which a finding awaiting confirmation is raised if the group has no "
        "new generation by then (null: nothing awaits confirmation)",
    )
    pending_partition: int | None = column(
        "int", "the source partition whose stream time counts for `pending_until`"
    )


GROUP_STATE = Table(
    "group_state",
    "The job's per-group analysis state, one version per batch that touched the group (internal).",
    StateRow,
    key=("group", "batch_id"),
    # A batch reads the versions of the groups whose texts the driver's cache dropped by key.
    read_by="group",
)


#: Any table's row.
Row = (
    SnapshotRow
    | MemberRow
    | OwnershipRow
    | FindingRow
    | QuarantineRow
    | OffsetsRow
    | CommittedRow
    | CommittedChangeRow
    | EndOffsetRow
    | PartitionLagRow
    | LagHistoryRow
    | ValidationRow
    | StateRow
    | SharePartitionRow
    | ShareHistoryRow
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
        COMMITTED_OFFSETS,
        COMMITTED_CHANGES,
        END_OFFSETS,
        PARTITION_LAG,
        LAG_HISTORY,
        VALIDATION_RESULTS,
        GROUP_STATE,
        SHARE_PARTITION_STATE,
        SHARE_PARTITION_HISTORY,
    )
}

#: Tables whose rows depend on when the brokers were asked (``lag.poll_seconds``), not only on
#: the records: two runs over the same records agree on every other table, not on these.
#: ``share_partition_state``'s end offset and share lag are the brokers' of when it was written.
POLLED_TABLES: tuple[str, ...] = (
    END_OFFSETS.name,
    PARTITION_LAG.name,
    LAG_HISTORY.name,
    SHARE_PARTITION_STATE.name,
)


#: How long a group's history is kept, the same in every table (``groupwatch.upkeep``).
RETENTION = """## How long rows are kept

One rule for a group's history, in every table at once. A day of snapshots (a `snapshot_date`
partition) expires when its records are more than `upkeep.history_retention_days` (90) before
the stream's clock (the newest record time read) **and** its rows were written more than that
long ago (the newest data file of that day in `group_snapshots` or `member_assignments`, by the
wall clock; compaction only makes it younger). It then leaves `group_snapshots`,
`member_assignments`, the `findings` raised on records of that day and the `partition_ownership`
intervals that closed on it, in the same upkeep turn: no table keeps members, ownership or
findings of a snapshot the history dropped. Rows are never deleted by the batch that wrote them.

- **A replay, a backfill or a mirror of older records** (records whose own time is years back:
  the demo's replayed KAFKA-7026 and KAFKA-13419 incidents carry 2023 timestamps) is kept for
  `upkeep.history_retention_days` from when the job read it, like live records, and then goes
  as a whole: its snapshots, members, findings and closed ownership intervals.
- Closed `partition_ownership` intervals also go `upkeep.ownership_retention_days` (30) after
  they closed, by the same two clocks (their `to_date` partition before the cutoff and written
  longer ago than that); open intervals stay.
- `findings` also go `upkeep.findings_retention_days` (365) after `detected_at`, the time the
  job wrote them; `end_offsets`, `lag_history` and `share_partition_history` after
  `lag.history_hours` of `observed_at`.
- `0` for a retention keeps its rows forever.
"""


def markdown() -> str:
    """The tables as Markdown, for docs/tables.md."""
    out = ["# Delta tables", "", "Generated from `src/groupwatch/tables.py`.", "", RETENTION]
    for table in TABLES.values():
        out += [f"## `{table.name}`", "", table.doc, ""]
        if table.partition_by:
            out += [f"Partitioned by `{', '.join(table.partition_by)}`.", ""]
        if table.key:
            out += [f"Identified by `{', '.join(table.key)}`.", ""]
        if table.removed_when:
            out += [f"A batch's row where `{table.removed_when[2:]}` removes its key's row.", ""]
        if table.read_by:
            out += [
                f"Each data file sorted by `{table.read_by}` in small row groups (read by key).",
                "",
            ]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | `{c.ddl}` | {c.doc} |" for c in table.columns]
        out.append("")
    return "\n".join(out)
