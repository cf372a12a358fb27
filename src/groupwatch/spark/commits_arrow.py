"""A small batch's offset commits aggregated on the driver, in Arrow and Python.

The same two aggregates Spark computes for every batch (:func:`groupwatch.spark.offsets.
aggregated`, per (group, topic); :func:`groupwatch.spark.committed.newest`, per partition),
column for column and null for null, from the batch's commit rows collected once
(``key``, ``value``, ``offset``, ``ts``). A live batch holds a few thousand commits; in Spark
the two are three exchanges and a window, run one query stage at a time, about two seconds a
batch on two cores, which the driver does in milliseconds. The byte layouts are those the
Spark expressions read (:mod:`groupwatch.spark.keys`, :mod:`groupwatch.spark.committed`);
``tests/integration/test_commits_arrow.py`` holds both to the same rows.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

#: Bytes of a commit value the newest commit's fields are read from (``committed._HEAD``).
_HEAD = 16


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


def newest(commits: pa.Table) -> pa.Table:
    """``committed.newest``: each partition's newest commit (or tombstone) and when its
    committed offset last changed within the batch (``changes`` = how many times it did)."""
    import pyarrow as pa

    keyed: dict[tuple[bytes, bytes], list[tuple[int, bytes | None, int | None]]] = {}
    for key, value, offset, ts in zip(
        *_lists(commits, ("key", "value", "offset", "ts")), strict=True
    ):
        prefix, part = _prefix(key), _partition_bytes(key)
        if prefix is None or part is None:
            continue
        keyed.setdefault((prefix, part), []).append((offset, value, ts))
    out: dict[str, list[object]] = {name: [] for name in _NEWEST}
    for (prefix, part), records in keyed.items():
        group, topic = group_and_topic(prefix)
        if group is None or topic is None:
            continue
        row = _partition_row(records)
        if row is None:
            continue
        row.update(group=group, topic=topic, partition=_int(part, signed=False))
        for name in _NEWEST:
            out[name].append(row[name])
    return pa.table({name: pa.array(out[name], kind) for name, kind in _newest_types().items()})


_NEWEST = (
    "group",
    "topic",
    "partition",
    "tombstone",
    "committed_offset",
    "leader_epoch",
    "metadata_size",
    "commit_time",
    "moved_time",
    "changes",
    "commits",
)


def _newest_types() -> dict[str, pa.DataType]:
    import pyarrow as pa

    ts = pa.timestamp("us", "UTC")
    kinds = (pa.string(), pa.string(), pa.int32(), pa.bool_(), pa.int64(), pa.int32())
    return dict(zip(_NEWEST, (*kinds, pa.int32(), ts, ts, pa.int64(), pa.int64()), strict=True))


def _partition_row(records: list[tuple[int, bytes | None, int | None]]) -> dict[str, object] | None:
    """One partition's aggregate over its records (unsorted): see ``committed.newest``."""
    # Null record offsets sort first, as in Spark's ascending window order, and max_by skips
    # them.
    records.sort(key=lambda r: (r[0] is not None, r[0] if r[0] is not None else 0))
    moved: int | None = None
    changes = 0
    prev: tuple[bytes | None, int | None] | None = None
    for _, value, ts in records:
        co = _offset_bytes(value)
        before = prev[0] if prev is not None else None
        before_ts = prev[1] if prev is not None else None
        # SQL's three values: ``before IS NULL OR co != before`` is null when co is.
        changed = True if before is None else (None if co is None else co != before)
        first = before is None and before_ts is None
        if changed and ts is not None and (moved is None or ts > moved):
            moved = ts
        if changed and not first:
            changes += 1
        prev = (co, ts)
    kept = [r for r in records if r[0] is not None]
    if not kept:
        return None
    _, value, ts = kept[-1]
    fields = _value_fields(value)
    return {
        "tombstone": value is None,
        **fields,
        "commit_time": _millis(ts),
        "moved_time": _millis(moved),
        "changes": changes,
        "commits": len(records),
    }


def _offset_bytes(value: bytes | None) -> bytes | None:
    """``committed._offset_bytes``: the committed offset's eight bytes, if the value has them."""
    if value is None:
        return None
    raw = value[2:10]
    return raw if len(raw) == 8 else None


def _value_fields(value: bytes | None) -> dict[str, int | None]:
    """``committed._value_fields`` of a value's first ``_HEAD`` bytes: committed offset,
    leader epoch and metadata size (null where the value is too short to hold them)."""
    if value is None:
        return {"committed_offset": None, "leader_epoch": None, "metadata_size": None}
    head = value[:_HEAD]
    version = _int(head[0:2], signed=False)
    meta = 14 if version is not None and version >= 3 else 10
    first = _int(head[meta : meta + 1], signed=False)
    short = _int(head[meta : meta + 2], signed=False)
    if version is not None and version >= 4:
        size = first - 1 if first is not None and first < 128 else None
    else:
        size = short
    epoch = (
        _int(head[10:14], signed=True, width=4) if version is not None and version >= 3 else None
    )
    return {
        "committed_offset": _int(head[2:10], signed=True, width=8),
        "leader_epoch": epoch,
        "metadata_size": size,
    }


def _int(raw: bytes | None, *, signed: bool, width: int | None = None) -> int | None:
    """Big-endian bytes as Spark's ``conv(hex(...))`` reads them: null for no bytes (or fewer
    than ``width``)."""
    if raw is None or len(raw) == 0 or (width is not None and len(raw) != width):
        return None
    return int.from_bytes(raw, "big", signed=signed)


def _lists(table: pa.Table, names: tuple[str, ...]) -> list[list[Any]]:
    return [table.column(n).to_pylist() for n in names]
