"""What the notifier takes, typed: a ``findings`` row (:class:`~groupwatch.tables.FindingRow`),
what it reads of a ``group_snapshots`` row (:class:`AlertSnapshot`) and a ``partition_lag`` row
(:class:`~groupwatch.tables.PartitionLagRow`), and one conversion to each from a table's row as
a reader holds it.

Those readers are the edges: the job's rows collected as Arrow (``to_pylist``) or as Spark
``Row`` objects (``asDict``), and ``groupwatch notify``'s reads of the tables through delta-rs
(pandas records).  Pandas stands for a null integer or string as NaN and a null timestamp as
NaT, and an integer column with nulls holds floats: the conversions turn these into ``None``
and ``int`` here, so the notifier itself reads plain typed fields.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.tables import FindingRow, PartitionLagRow


@dataclass(frozen=True, slots=True)
class AlertSnapshot:
    """What the notifier reads of a ``group_snapshots`` row: enough to resolve a group's open
    alerts (a later generation without a matching finding, or the group deleted), and the
    record's place in the stream, to take a batch's snapshots in order."""

    group: str
    generation: int | None = None
    tombstone: bool = False
    source_timestamp: dt.datetime | None = None
    source_offset: int | None = None


#: The ``group_snapshots`` columns :class:`AlertSnapshot` reads.
SNAPSHOT_COLUMNS = ("group", "generation", "tombstone", "source_timestamp", "source_offset")


def _null(v: Any) -> bool:
    # NaN and NaT are the only values not equal to themselves.
    return v is None or bool(v != v)


def _int(v: Any) -> int | None:
    if _null(v):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _str(v: Any) -> str | None:
    return None if _null(v) else str(v)


def _time(v: Any) -> dt.datetime | None:
    if _null(v):
        return None
    if not isinstance(v, dt.datetime):
        raise TypeError(f"expected a timestamp, got {type(v).__name__}: {v!r}")
    return v


def finding_of(row: Mapping[str, Any]) -> FindingRow:
    """A ``findings`` row as the notifier reads it: the columns an alert is made of (the
    others, lists and structs the notifier never reads, stay null)."""
    return FindingRow(
        finding_id=_str(row.get("finding_id")),
        kind=_str(row.get("kind")),
        severity=_str(row.get("severity")),
        group=_str(row.get("group")),
        generation=_int(row.get("generation")),
        topic=_str(row.get("topic")),
        partition=_int(row.get("partition")),
        member=_str(row.get("member")),
        detail=_str(row.get("detail")),
        evidence=_str(row.get("evidence")),
    )


def snapshot_of(row: Mapping[str, Any]) -> AlertSnapshot:
    """A ``group_snapshots`` row (or its alert columns alone) as the notifier reads it."""
    tombstone = row.get("tombstone")
    return AlertSnapshot(
        group=_str(row.get("group")) or "",
        generation=_int(row.get("generation")),
        tombstone=False if _null(tombstone) else bool(tombstone),
        source_timestamp=_time(row.get("source_timestamp")),
        source_offset=_int(row.get("source_offset")),
    )


def lag_row_of(row: Mapping[str, Any]) -> PartitionLagRow:
    """A ``partition_lag`` row as the notifier reads it: the partition and its status (a lag
    alert resolves when its partition shows another status); the other columns stay null."""
    return PartitionLagRow(
        group=_str(row.get("group")),
        topic=_str(row.get("topic")),
        partition=_int(row.get("partition")),
        status=_str(row.get("status")),
    )
