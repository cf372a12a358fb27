"""The record the job's step takes, as Spark's Kafka source delivers it, and what every row
keeps of it: its source columns, and its bytes when it is quarantined."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from groupwatch.protocol import DecodeError
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
