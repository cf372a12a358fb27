"""The commits the Python stage gets besides every other record: the first of each partition
and each group's newest (``first_commits``) and the newest before each group-metadata record
(``commits_before``), held to a plain Python reading of the same rows, malformed keys among
them.

Both check a key's form after their aggregation, not on every commit: a malformed commit
that is the newest of its stretch must give way to the newest well-formed one, never hide it.
"""

from __future__ import annotations

import datetime as dt
import random
import struct
from typing import Any

import pytest

from groupwatch.protocol import decode_key
from groupwatch.protocol.errors import DecodeError
from groupwatch.spark import source
from tests.integration.test_spark_keys import commit, kstr

pytestmark = pytest.mark.spark

GROUPS = ("g", "h", "quiet")


def _metadata(group: str) -> bytes:
    return struct.pack(">h", 2) + kstr(group)


def _well_formed(key: bytes) -> bool:
    try:
        decode_key(key)
    except DecodeError:
        return False
    return True


def _commit_key(rng: random.Random, group: str) -> bytes:
    """Mostly well-formed commits of two topics; some keys of the group that are not."""
    roll = rng.random()
    if roll < 0.15:
        return commit(group, b"\xc3", 1)  # topic not UTF-8: malformed, routed to the group
    if roll < 0.25:
        return commit(group, "t", 5) + b"\x00"  # a byte after the partition
    return commit(group, rng.choice(("t", "u")), rng.randrange(3))


def _rows(seed: int) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    rows: list[tuple[Any, ...]] = []
    offsets = {0: 0, 1: 0}
    at = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for _ in range(400):
        group = rng.choice(GROUPS)
        partition = 0 if group == "g" else 1
        if group != "quiet" and rng.random() < 0.05:
            key, value = _metadata(group), b"generation"
        else:
            key = _commit_key(rng, group)
            value = None if rng.random() < 0.05 else b"v%d" % rng.randrange(1000)
        offset = offsets[partition]
        offsets[partition] += 1
        at += dt.timedelta(milliseconds=rng.randrange(1, 50))
        rows.append((key, value, "__consumer_offsets", partition, offset, at))
    return rows


def _expected(rows: list[tuple[Any, ...]], groups: set[str]) -> tuple[set[Any], set[Any]]:
    """(first commits and each group's newest, commits before) as (group, key, partition,
    offset), by plain Python."""
    commits = [r for r in rows if r[0][1] in (0, 1) and r[1] is not None and _well_formed(r[0])]
    first: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for r in commits:
        group = decode_key(r[0])[1].group
        slot = (group, r[0][2:-4], r[0][-4:])
        if group in groups and (
            slot not in first or (r[3], r[4]) < (first[slot][3], first[slot][4])
        ):
            first[slot] = r
    # And each group's newest: the time the engine keeps after the batch's last record.
    for r in commits:
        group = decode_key(r[0])[1].group
        slot = (group,)
        if group in groups and (
            slot not in first or (r[3], r[4]) > (first[slot][3], first[slot][4])
        ):
            first[slot] = r
    marks: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        if r[0][1] == 2:
            marks.setdefault(r[0][4:].decode(), []).append((r[3], r[4]))
    newest: dict[tuple[str, int], tuple[Any, ...]] = {}
    for r in commits:
        group = decode_key(r[0])[1].group
        before = [m for m in marks.get(group, []) if m > (r[3], r[4])]
        if not before:
            continue
        stretch = len(marks[group]) - len(before)
        slot2 = (group, stretch)
        if slot2 not in newest or (r[3], r[4]) > (newest[slot2][3], newest[slot2][4]):
            newest[slot2] = r

    def shown(pairs: Any) -> set[Any]:
        return {(g, bytes(r[0]), r[3], r[4]) for g, r in pairs}

    return (
        shown((k[0], r) for k, r in first.items()),
        shown((k[0], r) for k, r in newest.items()),
    )


@pytest.mark.parametrize(("seed", "positions_fit"), [(1, True), (2, True), (3, False), (4, False)])
def test_first_commits_and_commits_before_keep_well_formed_keys(  # type: ignore[no-untyped-def]
    spark, seed: int, positions_fit: bool
) -> None:
    """Both ways of finding the first commits and each group's newest (positions aggregated as
    longs, or the rows themselves) give the rows a plain reading of the batch gives."""
    rows = _rows(seed)
    df = spark.createDataFrame(
        rows,
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp",
    )
    batch = source.split(df)
    try:
        groups = {"g", "quiet"}
        wanted = spark.createDataFrame([(g,) for g in groups], "group string")
        stats = source.stats(batch)
        assert stats.positions_fit
        first = source.first_commits(batch.mine, wanted, positions_fit).collect()
        before = source.commits_before(batch.mine).collect()
    finally:
        batch.read.unpersist()
    want_first, want_before = _expected(rows, groups)
    assert want_first and want_before
    assert {(r["group"], bytes(r["key"]), r["partition"], r["offset"]) for r in first} == want_first
    assert {
        (r["group"], bytes(r["key"]), r["partition"], r["offset"]) for r in before
    } == want_before
    assert len(before) == len(want_before)


def test_positions_that_do_not_fit_a_long_take_the_exact_path(spark) -> None:  # type: ignore[no-untyped-def]
    """A batch with an offset past 2^42 is not aggregated by positions (they would overlap the
    partition's bits), and where they fit the long orders as (partition, offset) does."""
    at = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    far = 1 << source.OFFSET_BITS
    rows = [
        (commit("g", "t", 0), b"v", "__consumer_offsets", 1, 5, at),
        (commit("g", "t", 1), b"v", "__consumer_offsets", 0, far, at),
    ]
    df = spark.createDataFrame(
        rows,
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp",
    )
    batch = source.split(df)
    try:
        stats = source.stats(batch)
        assert (stats.max_partition, stats.max_offset) == (1, far)
        assert not stats.positions_fit
        near = [(0, far - 1), (1, 0), (1, 5), (0, 0), (2, 1)]
        got = (
            spark.createDataFrame(near, "partition int, offset long")
            .withColumn("pos", source.position())
            .orderBy("pos")
            .select("partition", "offset")
            .collect()
        )
        assert [(r["partition"], r["offset"]) for r in got] == sorted(near)
    finally:
        batch.read.unpersist()
