"""The record the job's step takes, as Spark's Kafka source delivers it, and what every row
keeps of it: its source columns, and its bytes when it is quarantined."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from groupwatch.protocol import DecodedRecord, DecodeError
from groupwatch.tables import QuarantineRow, timestamp


@dataclass(frozen=True)
class SourceRecord:
    """A record as Spark's Kafka source delivers it."""

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp_ms: int


def source_columns(record: SourceRecord) -> dict[str, Any]:
    """The source columns of a row (and its partition date)."""
    when = timestamp(record.timestamp_ms)
    return {
        "source_topic": record.topic,
        "source_partition": record.partition,
        "source_offset": record.offset,
        "source_timestamp": when,
        "snapshot_date": when.date() if when else None,
    }


def quarantine_row(
    record: SourceRecord,
    error: DecodeError,
    group: str | None,
    when: dt.datetime,
    member_id: str | None = None,
) -> QuarantineRow:
    """A record, or one member of it, that did not decode: kept with its bytes."""
    return QuarantineRow(
        quarantined_at=when,
        stage="decode",
        error_kind=error.kind,
        field_path=error.field_path,
        byte_offset=error.byte_offset,
        message=error.message,
        group=group,
        member_id=member_id,
        key=record.key,
        value=record.value,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
        source_timestamp=timestamp(record.timestamp_ms),
    )


def newer_version_row(
    record: SourceRecord, rec: DecodedRecord, group: str | None, when: dt.datetime
) -> QuarantineRow:
    """A record of a newer Kafka, read by the fields known (``rec.newer``): its raw bytes kept
    as a quarantine row of kind ``newer_version``, at the first byte left unread."""
    newer = rec.newer
    assert newer is not None
    size = len(record.value or b"")
    error = DecodeError(
        "newer_version",
        f"{rec.record_type} value version {newer.version} is newer than groupwatch knows; "
        f"read by the fields of version {newer.read_as}, {len(newer.unread)} bytes left unread",
        byte_offset=size - len(newer.unread),
    )
    return quarantine_row(record, error, group, when)
