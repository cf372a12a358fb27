"""A small batch's offset commits aggregated per (group, topic) on the driver, in Arrow and
Python: :func:`groupwatch.spark.offsets.aggregated`'s rows, column for column and null for
null, from the batch's commit rows collected once (``key``, ``value``, ``offset``, ``ts``). A
live batch holds a few thousand commits; in Spark the aggregate is exchanges run one query
stage at a time, about a second a batch on two cores, which the driver does in milliseconds.
(Each partition's newest commit, the batch's other commit aggregate, is computed as columns
by :mod:`groupwatch.spark.commits_columns`, on the driver and in Spark's tasks alike.) The
byte layouts are those the Spark expressions read (:mod:`groupwatch.spark.keys`);
``tests/integration/test_commits_arrow.py`` holds both to the same rows.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def _prefix(key: bytes | None) -> bytes | None:
    """``keys.commit_prefix``: the bytes between record type and partition."""
    if key is None or len(key) < 10:
        return None
    return key[2:-4]


def _partition_bytes(key: bytes | None) -> bytes | None:
    """``keys.commit_partition_bytes``: the last four bytes, null for a negative partition."""
    if key is None or len(key) < 10:
        return None
    last = key[-4:]
    return last if last < b"\x80" else None


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def group_and_topic(prefix: bytes | None) -> tuple[str | None, str | None]:
    """``keys.prefix_group`` and ``keys.prefix_topic``: both null unless the prefix is well
    formed (lengths read unsigned, below 0x8000, adding up to the prefix exactly)."""
    if prefix is None or len(prefix) < 2:
        return None, None
    glen = int.from_bytes(prefix[0:2], "big")
    if len(prefix) < glen + 4:
        return None, None
    tlen = int.from_bytes(prefix[glen + 2 : glen + 4], "big")
    if glen >= 0x8000 or tlen >= 0x8000 or len(prefix) != glen + tlen + 4:
        return None, None
    return _utf8(prefix[2 : 2 + glen]), _utf8(prefix[glen + 4 :])


def _millis(ms: int | None) -> dt.datetime | None:
    if ms is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def aggregated(commits: pa.Table) -> pa.Table:
    """``offsets._aggregated``: per key prefix, its group and topic, highest partition,
    commits and newest commit time (``commits``: the batch's commit rows)."""
    import pyarrow as pa

    highest: dict[bytes | None, bytes | None] = {}
    count: dict[bytes | None, int] = {}
    newest_ts: dict[bytes | None, int | None] = {}
    for key, ts in zip(*_lists(commits, ("key", "ts")), strict=True):
        prefix = _prefix(key)
        part = _partition_bytes(key)
        if prefix not in count:
            highest[prefix], count[prefix], newest_ts[prefix] = part, 1, ts
            continue
        top = highest[prefix]
        if part is not None and (top is None or part > top):
            highest[prefix] = part
        count[prefix] += 1
        last = newest_ts[prefix]
        if ts is not None and (last is None or ts > last):
            newest_ts[prefix] = ts
    prefixes = list(count)
    named = [group_and_topic(p) for p in prefixes]
    return pa.table(
        {
            "prefix": pa.array(prefixes, pa.binary()),
            "group": pa.array([g for g, _ in named], pa.string()),
            "topic": pa.array([t for _, t in named], pa.string()),
            "max_partition": pa.array(
                [_int(highest[p], signed=False) for p in prefixes], pa.int32()
            ),
            "commits": pa.array([count[p] for p in prefixes], pa.int64()),
            "last_commit_time": pa.array(
                [_millis(newest_ts[p]) for p in prefixes], pa.timestamp("us", "UTC")
            ),
        }
    )


def _int(raw: bytes | None, *, signed: bool, width: int | None = None) -> int | None:
    """Big-endian bytes as Spark's ``conv(hex(...))`` reads them: null for no bytes (or fewer
    than ``width``)."""
    if raw is None or len(raw) == 0 or (width is not None and len(raw) != width):
        return None
    return int.from_bytes(raw, "big", signed=signed)


def _lists(table: pa.Table, names: tuple[str, ...]) -> list[list[Any]]:
    return [table.column(n).to_pylist() for n in names]
