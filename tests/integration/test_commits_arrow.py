"""A small batch's commits aggregated on the driver (``spark.commits_arrow.aggregated``;
``spark.commits_columns.newest`` over the whole batch at once) against Spark's aggregates
(``offsets._aggregated``; ``committed.newest``, each task's rows), row for row and null for
null, over the random batches ``test_committed_newest`` draws (every value version,
tombstones, offsets moved and moved back, values cut short, malformed keys, records of other
types) and the keys ``test_spark_keys`` holds the JVM's key reading to."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from groupwatch.spark import commits_arrow, commits_columns, committed, offsets, source

from .test_committed_newest import batch, by_partition
from .test_committed_offsets import frame, key, value
from .test_spark_keys import COMMIT_KEYS

pytestmark = pytest.mark.spark


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return int(v.timestamp() * 1000)
    return bytes(v) if isinstance(v, bytearray) else v


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def _both(spark: Any, rows: list[tuple[Any, ...]]) -> None:
    df = frame(spark, rows)
    collected = source.commit_rows(df).toArrow()
    in_tasks = committed.newest(by_partition(df, 3)).toArrow()
    assert _rows(commits_columns.newest(collected)) == _rows(in_tasks)
    assert _rows(commits_arrow.aggregated(collected)) == _rows(offsets._aggregated(df).toArrow())


def test_random_batches_aggregate_as_spark_does(spark: Any) -> None:
    rng = random.Random(848)
    small = [row for _ in range(12) for row in batch(rng, rng.randrange(1, 6), 30)]
    # Batches drawn apart share keys: one frame of them renumbered, then a large batch.
    _both(spark, [(k, v, n, ts) for n, (k, v, _, ts) in enumerate(small)])
    _both(spark, batch(rng, 60, 2_000))


def test_keys_the_jvm_is_held_to_aggregate_as_spark_does(spark: Any) -> None:
    rows = [(k, value(3, 10 + i), i, 1_000 + i) for i, k in enumerate(COMMIT_KEYS)]
    rows += [(k, None, 100 + i, None) for i, k in enumerate(COMMIT_KEYS)]  # then tombstones
    # Values shorter than each field, one byte at a time, of every version, each the newest
    # of a partition of its own.
    full = [value(v, 2**40 + v, epoch=-3, meta="meta") for v in range(5)]
    cuts = [f[:n] for f in full for n in range(18)]
    rows += [(key("cut", "t", p), cut, 1_000 + p, p) for p, cut in enumerate(cuts)]
    _both(spark, rows)
