"""A past day's rows clustered by group: which Parquet row groups can hold a group, and whether
a partition's files are already laid out so.

The history tables (``group_snapshots``, ``member_assignments``, closed ``partition_ownership``
intervals) keep a month or more of days, and a group's dashboard page and the analysts'
per-group queries want one group's rows of all of them.  A day's files as the batches and
compaction leave them hold every group in every row group, so such a read decodes the whole
day.  Once a day is over, upkeep rewrites its partition sorted by group in small row groups
(:func:`clustered` says whether it still needs that); a reader then opens only the row groups
whose statistics can hold the group (:func:`row_groups`).

Row-group statistics are compared as bytes, as Parquet orders strings.  A writer may truncate
long statistics (delta-rs's Rust writer at 64 bytes by default), and Parquet requires a
truncated minimum to stay a lower bound and a truncated maximum an upper one (the Rust writer
increments the last byte kept): bounds stay bounds, only coarser.  Upkeep writes clustered days
with statistics of up to :data:`STATISTICS_BYTES`, so that long group names sharing a prefix
still fall in distinct row groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow.parquet as pq  # type: ignore[import-untyped]

#: Statistics kept whole up to this length in the files upkeep clusters.
STATISTICS_BYTES = 1024


@dataclass(frozen=True)
class RowGroup:
    """One row group's row count and its column's bounds (None: not in the footer)."""

    rows: int
    low: bytes | None
    high: bytes | None


def row_group_bounds(metadata: pq.FileMetaData, column: str) -> list[RowGroup]:
    """Each row group of a file (its footer ``metadata``) with ``column``'s bounds."""
    schema = metadata.schema
    index = next((i for i in range(len(schema)) if schema.column(i).path == column), None)
    out = []
    for k in range(metadata.num_row_groups):
        group = metadata.row_group(k)
        low: bytes | None = None
        high: bytes | None = None
        if index is not None:
            stats = group.column(index).statistics
            if stats is not None and stats.has_min_max:
                low, high = _bytes(stats.min_raw), _bytes(stats.max_raw)
        out.append(RowGroup(group.num_rows, low, high))
    return out


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def row_groups(bounds: Sequence[RowGroup], values: Iterable[bytes]) -> list[int]:
    """The row groups that can hold any of ``values`` (UTF-8 bytes): those whose bounds hold
    one, and those whose bounds are unknown."""
    wanted = sorted(set(values))
    return [k for k, b in enumerate(bounds) if _may_hold(b.low, b.high, wanted)]


def _may_hold(low: bytes | None, high: bytes | None, wanted: Sequence[bytes]) -> bool:
    if low is None or high is None:
        return True
    return any(low <= v <= high for v in wanted)


def clustered(files: Sequence[Sequence[RowGroup]], max_rows: int) -> bool:
    """Whether a partition's files (each a list of its row groups) are clustered: every row
    group at most ``max_rows`` rows with known bounds, and the row groups' ranges, taken in
    order of their lower bounds, overlapping at most where one ends and the next begins (a
    group's rows may straddle a row-group boundary).  A partition of one file of one small row
    group is clustered as it stands."""
    groups = [g for f in files for g in f if g.rows]
    if any(g.rows > max_rows for g in groups):
        return False
    if len(groups) <= 1:
        return True
    ranges = [(g.low, g.high) for g in groups if g.low is not None and g.high is not None]
    if len(ranges) < len(groups):
        return False
    ranges.sort()
    return all(later[0] >= earlier[1] for earlier, later in zip(ranges, ranges[1:], strict=False))
