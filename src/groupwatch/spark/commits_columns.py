"""A batch's two offset-commit aggregates, computed as columns from its commit rows: per
(group, topic), the rows ``group_offsets`` takes (:func:`aggregated`), and per partition, each
one's newest commit, the rows ``committed_offsets`` takes (:func:`newest`).

Spark runs both in the task that holds the rows, in one pass (``mapInArrow`` of
:func:`aggregates_batches`, no shuffle): the batch is persisted as whole partitions of the
source topic (:func:`groupwatch.spark.source.split` coalesces them, never splits one; the job
sets neither ``minPartitions`` nor ``maxRecordsPerPartition``), and the broker writes all of a
group's records to one partition of ``__consumer_offsets``, so a task holds every commit of
each group it sees and its rows are final. A live batch small enough for the driver runs the
same functions there. A window over the whole batch (a shuffle of every commit and a sort)
cost three quarters of a start-up's committed-offsets step, and the per-(group, topic)
aggregate was a second pass over the same commits (bench/HISTORY.md, "Both commit aggregates
from one pass, as columns in the tasks that hold them").

The byte layouts are those of :mod:`groupwatch.spark.keys` and of ``OffsetCommitValue``'s first
fields; ``tests/integration/test_committed_newest.py`` and ``test_commit_aggregates.py`` hold the
rows to Spark's own reading of the records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]

#: Bytes of a commit value the newest commit's fields are read from.
HEAD = 16

#: A slice's end past any value (``binary_slice`` without one fails on some arrays).
_END = 2**31 - 1

#: :func:`newest`'s columns and types.
_TS = pa.timestamp("us", "UTC")
SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("tombstone", pa.bool_()),
        ("committed_offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata_size", pa.int32()),
        ("commit_time", _TS),
        ("moved_time", _TS),
        ("changes", pa.int64()),
        ("commits", pa.int64()),
    ]
)
#: :func:`aggregated`'s columns and types.
PER_TOPIC = pa.schema(
    [
        ("prefix", pa.binary()),
        ("group", pa.string()),
        ("topic", pa.string()),
        ("max_partition", pa.int32()),
        ("commits", pa.int64()),
        ("last_commit_time", _TS),
    ]
)
#: :func:`aggregates`' rows: ``per_topic`` true for :data:`PER_TOPIC`'s, false for
#: :data:`SCHEMA`'s (``group``, ``topic`` and ``commits`` shared; the other's columns null).
BOTH = pa.schema(
    [
        ("per_topic", pa.bool_()),
        *SCHEMA,
        *(f for f in PER_TOPIC if f.name not in SCHEMA.names),
    ]
)


def aggregates_batches(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`aggregates` over one task's rows (``mapInArrow``): the task's batches together,
    as a partition's commits may lie in more than one."""
    got = list(batches)
    if got:
        yield from aggregates(pa.Table.from_batches(got)).to_batches()


def aggregates(commits: pa.Table) -> pa.Table:
    """:func:`aggregated` and :func:`newest` of ``commits`` as one table of :data:`BOTH`."""

    def widened(table: pa.Table, per_topic: bool) -> pa.Table:
        n = table.num_rows
        columns = [pa.array([per_topic] * n, pa.bool_())]
        for f in BOTH:
            if f.name != "per_topic":
                have = f.name in table.schema.names
                columns.append(table.column(f.name) if have else pa.nulls(n, f.type))
        return pa.table(columns, schema=BOTH)

    return pa.concat_tables([widened(aggregated(commits), True), widened(newest(commits), False)])


def aggregated(commits: pa.Table) -> pa.Table:
    """Per key prefix (group and topic; null for a key too short to hold one): its group and
    topic (null unless well formed), highest partition, commits and newest commit time, of
    ``commits`` (``key``, ``ts`` in ms). Prefixes in the order they first appear."""
    keys = _array(commits.column("key"))
    length = pc.fill_null(pc.binary_length(keys), 0).to_numpy(zero_copy_only=False)
    long_enough = length >= 10
    prefix = pc.if_else(
        pa.array(long_enough), pc.binary_slice(keys, 2, -4), pa.scalar(None, pa.binary())
    )
    encoded = pc.dictionary_encode(prefix, null_encoding="encode")
    which = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    prefixes = encoded.dictionary
    k = len(prefixes)
    counts = np.bincount(which, minlength=k)
    # The partition's four bytes, compared as Spark compares binary (unsigned); a negative
    # partition is none.
    partition = _big_endian(keys, _starts(keys, end=True) - 4, 4, long_enough).astype(np.int64)
    has_partition = long_enough & (partition < 2**31)
    highest = np.full(k, -1, dtype=np.int64)
    np.maximum.at(highest, which[has_partition], partition[has_partition])
    ts, ts_ok = _ints(commits.column("ts"))
    newest_ts = np.full(k, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(newest_ts, which[ts_ok], ts[ts_ok])
    newest_ok = np.bincount(which[ts_ok], minlength=k) > 0
    group, topic = _group_and_topic(prefixes)
    return pa.table(
        [
            prefixes,
            group,
            topic,
            pa.array(highest, pa.int32(), mask=highest < 0),
            pa.array(counts, pa.int64()),
            _times((newest_ts, newest_ok)),
        ],
        schema=PER_TOPIC,
    )


def newest(commits: pa.Table) -> pa.Table:
    """Each (group, topic, partition)'s newest commit (or tombstone) among ``commits``
    (``key``; ``value``, of which the first :data:`HEAD` bytes suffice; record ``offset``;
    record time ``ts`` in ms), and when its committed offset last changed among them.

    By record offset (null record offsets first, as Spark orders them ascending), a commit
    ``changed`` the offset when the commit before it holds none (there is none, or it is a
    tombstone or too short to hold one) or both hold one and they differ; ``moved_time`` is
    the newest time of a commit that changed it, ``changes`` counts them leaving out the
    partition's first commit and any commit after one with neither offset nor time. A
    partition whose record offsets are all null has no row, nor has a key whose group or topic
    is not well formed. A partition's commits are told apart by their record offsets (they
    all live in one partition of ``__consumer_offsets``)."""
    keys = _array(commits.column("key"))
    # A commit key: int16 type, the group and topic prefix, the partition's four bytes (not
    # negative). Type 0 and type 1 keys of one partition are the same partition.
    tail = pc.binary_slice(keys, -4, _END)
    ok = pc.fill_null(
        pc.and_(
            pc.greater_equal(pc.binary_length(keys), 10),
            pc.less(tail, pa.scalar(b"\x80", pa.binary())),
        ),
        False,
    )
    rows = commits.filter(ok)
    n = rows.num_rows
    if n == 0:
        return SCHEMA.empty_table()
    encoded = pc.dictionary_encode(pc.binary_slice(_array(rows.column("key")), 2, _END))
    which = encoded.indices.to_numpy(zero_copy_only=False)
    record, record_ok = _ints(rows.column("offset"))
    ts, ts_ok = _ints(rows.column("ts"))
    values = _array(rows.column("value"))
    lengths = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    co_ok = lengths >= 10
    co = _big_endian(values, _starts(values) + 2, 8, co_ok)

    # Each partition's commits together, by record offset, null offsets first.
    order = np.lexsort((record, record_ok, which))
    which, record_ok = which[order], record_ok[order]
    co, co_ok, ts, ts_ok = co[order], co_ok[order], ts[order], ts_ok[order]
    same = np.zeros(n, dtype=bool)
    same[1:] = which[1:] == which[:-1]
    before_ok = same & _shifted(co_ok)
    before_ts_ok = same & _shifted(ts_ok)
    # SQL's ``before IS NULL OR co != before``: null (not a change) when only ``co`` is null.
    changed = ~before_ok | (co_ok & (co != _shifted(co)))
    first = ~before_ok & ~before_ts_ok
    starts = np.flatnonzero(~same)
    ends = np.append(starts[1:], n) - 1
    moving = changed & ts_ok
    moved = np.maximum.reduceat(np.where(moving, ts, np.iinfo(np.int64).min), starts)
    moved_ok = np.logical_or.reduceat(moving, starts)
    changes = np.add.reduceat((changed & ~first).astype(np.int64), starts)
    counts = np.diff(np.append(starts, n))

    # The newest commit: the last, unless every record offset of the partition is null.
    kept = record_ok[ends]
    part = which[starts][kept]
    last = order[ends][kept]
    group, topic, partition = _names(encoded.dictionary)
    named = pc.and_(pc.is_valid(group), pc.is_valid(topic)).to_numpy(zero_copy_only=False)
    keep = named[part]
    part, last = part[keep], last[keep]
    moved, moved_ok = moved[kept][keep], moved_ok[kept][keep]
    newest_values = values.take(pa.array(last))
    committed_offset, leader_epoch, metadata_size = _value_fields(newest_values)
    taken = pa.array(part)
    return pa.table(
        [
            group.take(taken),
            topic.take(taken),
            pa.array(partition[part], pa.int32()),
            pc.is_null(newest_values),
            committed_offset,
            leader_epoch,
            metadata_size,
            _times(_ints(rows.column("ts").take(pa.array(last)))),
            _times((moved, moved_ok)),
            pa.array(changes[kept][keep], pa.int64()),
            pa.array(counts[kept][keep], pa.int64()),
        ],
        schema=SCHEMA,
    )


def _value_fields(values: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Committed offset, leader epoch and metadata size of each value (null where it is too
    short to hold them), read as Spark's ``conv(hex(substr(...)))`` reads them: an unsigned
    field of fewer bytes than its width is read from the bytes there are."""
    n = len(values)
    present = pc.is_valid(values).to_numpy(zero_copy_only=False)
    length = np.minimum(
        pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False), HEAD
    )
    starts = _starts(values)

    def field(at: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The bytes there are of ``width`` at ``at`` (unsigned) and how many there are."""
        have = np.clip(length - at, 0, width)
        value = np.zeros(n, dtype=np.uint64)
        for i in range(width):
            byte = _big_endian(values, starts + at + i, 1, have > i)
            value = np.where(have > i, (value << np.uint64(8)) | byte, value)
        return value, have

    version, version_have = field(np.zeros(n, dtype=np.int64), 2)
    v3 = (version_have > 0) & (version >= 3)
    v4 = (version_have > 0) & (version >= 4)
    offset, offset_have = field(np.full(n, 2), 8)
    epoch, epoch_have = field(np.full(n, 10), 4)
    meta = np.where(v3, 14, 10)
    first, first_have = field(meta, 1)
    short, short_have = field(meta, 2)
    size_ok = np.where(v4, (first_have > 0) & (first < 128), short_have > 0)
    size = np.where(v4, first.astype(np.int64) - 1, short.astype(np.int64))
    epoch_ok = present & v3 & (epoch_have == 4)
    return (
        pa.array(offset.view(np.int64), pa.int64(), mask=~(present & (offset_have == 8))),
        pa.array(epoch.astype(np.uint32).view(np.int32), pa.int32(), mask=~epoch_ok),
        pa.array(size.astype(np.int32), pa.int32(), mask=~(present & size_ok)),
    )


def _names(tails: pa.Array) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """Group, topic (null unless the prefix is well formed) and partition of each distinct key
    less its type (``prefix + partition``)."""
    prefixes = pc.dictionary_encode(pc.binary_slice(tails, 0, -4))
    group, topic = _group_and_topic(prefixes.dictionary)
    group, topic = group.take(prefixes.indices), topic.take(prefixes.indices)
    ends = _starts(tails, end=True)
    partition = _big_endian(tails, ends - 4, 4, np.ones(len(tails), dtype=bool))
    return group, topic, partition.astype(np.int64)


def _group_and_topic(prefixes: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The group and topic of each prefix, read once per prefix (a batch has far fewer
    prefixes than commits)."""
    parsed = [group_and_topic(p) for p in prefixes.to_pylist()]
    return (
        pa.array([g for g, _ in parsed], pa.string()),
        pa.array([t for _, t in parsed], pa.string()),
    )


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


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def _ints(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Values (0 where null) and which are not null."""
    return (
        pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64),
        pc.is_valid(column).to_numpy(zero_copy_only=False),
    )


def _shifted(a: np.ndarray) -> np.ndarray:
    """``a`` one place later (the element before each), the first zero."""
    out = np.zeros_like(a)
    out[1:] = a[:-1]
    return out


def _starts(binary: pa.Array, *, end: bool = False) -> np.ndarray:
    """Where each value of a binary array starts (or ends) in its data buffer."""
    offsets = np.frombuffer(
        binary.buffers()[1], dtype=np.int32, count=len(binary) + 1, offset=binary.offset * 4
    ).astype(np.int64)
    return offsets[1:] if end else offsets[:-1]


def _big_endian(binary: pa.Array, at: np.ndarray, width: int, ok: np.ndarray) -> np.ndarray:
    """The unsigned big-endian integer of ``width`` bytes at ``at`` in ``binary``'s data, where
    ``ok`` (0 elsewhere)."""
    out = np.zeros(len(binary), dtype=np.uint64)
    data_buffer = binary.buffers()[2]
    if data_buffer is None or not ok.any():
        return out
    data = np.frombuffer(data_buffer, dtype=np.uint8)
    pos = np.where(ok, at, 0)
    for i in range(width):
        byte = data[np.minimum(pos + i, data.size - 1)].astype(np.uint64)
        out = (out << np.uint64(8)) | byte
    return np.where(ok, out, np.uint64(0))


def _times(values: tuple[np.ndarray, np.ndarray]) -> pa.Array:
    """Milliseconds (with their validity) as UTC timestamps in microseconds."""
    ms, ok = values
    return pa.array(ms * 1000, type=pa.int64(), mask=~ok).cast(_TS)
