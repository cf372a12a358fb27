"""A batch's two commit aggregates computed as columns (``spark.commits_columns``: each
partition's newest commit, and the aggregate per (group, topic); what the driver and every
task of a batch run) against the same computed one commit at a time in plain Python
(``per_row_newest``, ``per_row_aggregated`` below, the driver's code before), row for row and
null for null, over ``test_committed_newest``'s random batches (every value version, tombstones,
offsets moved and moved back, values cut short, malformed keys, null record offsets and
times) and over Hypothesis' batches of a few partitions. No Spark: the integration test holds
the same function, run in Spark's tasks, to a window per partition over parsed records."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from groupwatch.spark import commits_columns
from groupwatch.spark.commits_columns import group_and_topic
from tests.integration import test_committed_offsets as made
from tests.integration.test_committed_newest import batch

_HEAD = 16


def _lists(table: pa.Table, names: tuple[str, ...]) -> list[list[Any]]:
    return [table.column(n).to_pylist() for n in names]


def _int_of(raw: bytes | None, *, signed: bool, width: int | None = None) -> int | None:
    if raw is None or len(raw) == 0 or (width is not None and len(raw) != width):
        return None
    return int.from_bytes(raw, "big", signed=signed)


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


def _millis(ms: int | None) -> dt.datetime | None:
    if ms is None:
        return None
    return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)


def per_row_aggregated(commits: pa.Table) -> pa.Table:
    """One commit at a time: per key prefix, its group and topic, highest partition,
    commits and newest commit time (``commits``: the batch's commit rows)."""
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
                [_int_of(highest[p], signed=False) for p in prefixes], pa.int32()
            ),
            "commits": pa.array([count[p] for p in prefixes], pa.int64()),
            "last_commit_time": pa.array(
                [_millis(newest_ts[p]) for p in prefixes], pa.timestamp("us", "UTC")
            ),
        }
    )


def per_row_newest(commits: pa.Table) -> pa.Table:
    """Each partition's newest commit (or tombstone) and when its committed offset last
    changed within the batch (``changes`` = how many times it did), one commit at a time."""
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
        row.update(group=group, topic=topic, partition=_int_of(part, signed=False))
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
    ts = pa.timestamp("us", "UTC")
    kinds = (pa.string(), pa.string(), pa.int32(), pa.bool_(), pa.int64(), pa.int32())
    return dict(zip(_NEWEST, (*kinds, pa.int32(), ts, ts, pa.int64(), pa.int64()), strict=True))


def _partition_row(records: list[tuple[int, bytes | None, int | None]]) -> dict[str, object] | None:
    """One partition's aggregate over its records (unsorted)."""
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
    fields = value_fields(value)
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


def value_fields(value: bytes | None) -> dict[str, int | None]:
    """A value's first ``_HEAD`` bytes: committed offset,
    leader epoch and metadata size (null where the value is too short to hold them)."""
    if value is None:
        return {"committed_offset": None, "leader_epoch": None, "metadata_size": None}
    head = value[:_HEAD]
    version = _int_of(head[0:2], signed=False)
    meta = 14 if version is not None and version >= 3 else 10
    first = _int_of(head[meta : meta + 1], signed=False)
    short = _int_of(head[meta : meta + 2], signed=False)
    if version is not None and version >= 4:
        size = first - 1 if first is not None and first < 128 else None
    else:
        size = short
    epoch = (
        _int_of(head[10:14], signed=True, width=4) if version is not None and version >= 3 else None
    )
    return {
        "committed_offset": _int_of(head[2:10], signed=True, width=8),
        "leader_epoch": epoch,
        "metadata_size": size,
    }


def table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "offset": pa.array([r[2] for r in rows], pa.int64()),
            "ts": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


def _rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


def test_random_batches_come_out_as_one_commit_at_a_time() -> None:
    rng = random.Random(7)
    batches = [batch(rng, rng.randrange(1, 8), rng.randrange(0, 40)) for _ in range(200)]
    batches.append(batch(rng, 60, 3_000))
    # Keys too short for a prefix, a null key: one aggregate of their own.
    batches.append([(None, None, 1, 5), (b"\x00\x01abc", None, 2, None), *batches[-1][:50]])
    for rows in batches:
        t = table(rows)
        assert _rows(commits_columns.newest(t)) == _rows(per_row_newest(t))
        # In the order the prefixes first appear, as the per-row dictionary keeps them.
        assert commits_columns.aggregated(t).to_pylist() == per_row_aggregated(t).to_pylist()
    assert commits_columns.newest(t).schema == commits_columns.SCHEMA
    assert commits_columns.aggregated(t).schema == commits_columns.PER_TOPIC


def test_a_tasks_arrow_batches_are_taken_together_into_both_aggregates() -> None:
    rows = batch(random.Random(3), 20, 500)
    t = table(rows)
    pieces = commits_columns.aggregates_batches(t.to_batches(max_chunksize=7))
    got = pa.Table.from_batches(list(pieces), schema=commits_columns.BOTH)
    per_topic = got.filter(got.column("per_topic"))
    per_partition = got.filter(pa.compute.invert(got.column("per_topic")))
    assert _rows(per_partition.select(commits_columns.SCHEMA.names)) == _rows(per_row_newest(t))
    assert _rows(per_topic.select(commits_columns.PER_TOPIC.names)) == _rows(per_row_aggregated(t))
    assert list(commits_columns.aggregates_batches(iter([]))) == []


_commit = st.tuples(
    st.sampled_from([made.key("g", "t", 0), made.key("g", "t", 1), made.key("h", "t", 0)]),
    st.one_of(
        st.none(),
        st.builds(
            lambda v, o, cut: made.value(v, o, meta="m")[:cut],
            st.integers(0, 4),
            st.sampled_from([0, 1, 2**40]),
            st.integers(0, 40),
        ),
    ),
    st.one_of(st.none(), st.integers(0, 5)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_commit, max_size=12), st.randoms(use_true_random=False))
def test_any_few_commits_come_out_as_one_commit_at_a_time(
    commits: list[tuple[Any, ...]], rnd: random.Random
) -> None:
    offsets = rnd.sample(range(100), len(commits))
    rows = [(k, v, o, ts) for (k, v, ts), o in zip(commits, offsets, strict=True)]
    t = table(rows)
    assert _rows(commits_columns.newest(t)) == _rows(per_row_newest(t))
    assert commits_columns.aggregated(t).to_pylist() == per_row_aggregated(t).to_pylist()


def test_the_aggregates_columns_are_the_tables_they_are_written_to() -> None:
    """``SCHEMA`` restates ``committed_changes`` (less its batch id), which the newest commits
    are staged to; ``PER_TOPIC`` ``group_offsets`` with the key prefix the malformed keys are
    named by."""
    from groupwatch.delta import read as deltaread

    staged = [f for f in deltaread.schema("committed_changes") if f.name != "batch_id"]
    assert list(commits_columns.SCHEMA) == staged
    prefix = pa.field("prefix", pa.binary())
    assert list(commits_columns.PER_TOPIC) == [prefix, *deltaread.schema("group_offsets")]
