"""A batch's two commit aggregates as the job computes them (``spark.commit_aggregates``: each
task's rows as columns; on the driver, ``spark.commits_columns`` over the whole batch at once)
against Spark's own aggregation of the same records per (group, topic), row for row and null
for null, over the random batches ``test_committed_newest`` draws (every value version,
tombstones, offsets moved and moved back, values cut short, malformed keys, records of other
types) and the keys ``test_spark_keys`` holds the JVM's key reading to. (Each partition's
newest commit is held to a window over parsed records in ``test_committed_newest``.)"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest

from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import commit_aggregates, commits_columns, keys, source

from .test_committed_newest import batch
from .test_committed_offsets import as_the_source, frame, key, value
from .test_spark_keys import COMMIT_KEYS

pytestmark = pytest.mark.spark


def _plain(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return int(v.timestamp() * 1000)
    return bytes(v) if isinstance(v, bytearray) else v


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in r.values()) for r in table.to_pylist()), key=repr)


def reference(df: Any) -> Any:
    """Spark's aggregation per (group, topic), over every commit of the batch at once: the
    prefix, group and topic, highest partition, commits and newest commit time."""
    from pyspark.sql import functions as F

    key = F.col("key")
    return (
        df.where(F.col("rtype").isin(*OFFSET_COMMIT_TYPES))
        .groupBy(keys.commit_prefix(key).alias("prefix"))
        .agg(
            F.max(keys.commit_partition_bytes(key)).alias("partition"),
            F.count(F.lit(1)).alias("commits"),
            F.max("ts").alias("ts"),
        )
        .select(
            "prefix",
            keys.prefix_group(F.col("prefix")).alias("group"),
            keys.prefix_topic(F.col("prefix")).alias("topic"),
            keys.partition_of(F.col("partition")).alias("max_partition"),
            "commits",
            F.timestamp_millis("ts").alias("last_commit_time"),
        )
    )


def _both(spark: Any, rows: list[tuple[Any, ...]]) -> None:
    df = frame(spark, rows)
    expected = _rows(reference(df).toArrow())
    in_tasks = commit_aggregates.both(as_the_source(df, 3))
    assert _rows(commit_aggregates.per_topic(in_tasks).toArrow()) == expected
    # The driver's: the whole batch at once.
    collected = source.commit_rows(df).toArrow()
    assert _rows(commits_columns.aggregated(collected)) == expected
    per_partition = commit_aggregates.per_partition(in_tasks).toArrow()
    assert _rows(commits_columns.newest(collected)) == _rows(per_partition)


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


def test_a_partition_whose_commits_two_tasks_hold_comes_out_once(spark: Any) -> None:
    """Records replayed into other partitions (never ``__consumer_offsets``'): one (group,
    topic) and one of its partitions in two tasks. One row a partition, the newest by commit
    time with every commit counted, one row a (group, topic); the count left unknown."""
    from pyspark.sql import functions as F

    first = [(key("g", "t", 0), value(3, 10), 1, 1_000), (key("g", "t", 1), value(3, 5), 3, 1_500)]
    second = [(key("g", "t", 0), value(3, 11), 2, 2_000), (key("h", "t", 0), value(3, 7), 4, 900)]
    rdd = spark.sparkContext.parallelize(first + second, 2)  # one half a task
    df = spark.createDataFrame(rdd, "key binary, value binary, offset long, ts long")
    df = df.withColumn("rtype", keys.record_type(F.col("key")))
    with commit_aggregates.of(df) as agg:
        newest = {
            (r["group"], r["topic"], r["partition"]): (r["committed_offset"], r["commits"])
            for r in agg.per_partition.collect()
        }
        per_topic = {(r["group"], r["topic"]): r for r in agg.per_topic.collect()}
        rows = agg.partition_rows
    assert newest == {("g", "t", 0): (11, 2), ("g", "t", 1): (5, 1), ("h", "t", 0): (7, 1)}
    assert {k: (r["max_partition"], r["commits"]) for k, r in per_topic.items()} == {
        ("g", "t"): (1, 3),
        ("h", "t"): (0, 1),
    }
    assert rows is None
    # Each group in one task, as the source gives them: nothing combined, the count known.
    with commit_aggregates.of(as_the_source(df, 2)) as agg:
        assert agg.partition_rows == agg.per_partition.count() == 3
