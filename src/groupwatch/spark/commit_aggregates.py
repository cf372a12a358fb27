"""A batch's two offset-commit aggregates from one pass over its commits, in the tasks that
hold them (:mod:`groupwatch.spark.commits_columns`, no shuffle of the commits): per (group,
topic), which
:mod:`groupwatch.spark.offsets` MERGEs into ``group_offsets``, and each partition's newest
commit, which :mod:`groupwatch.spark.committed` MERGEs into ``committed_offsets``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import commits_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def both(df: DataFrame) -> DataFrame:
    """The two aggregates of ``df``'s offset commits as rows of :data:`commits_columns.BOTH`."""
    from pyspark.sql import functions as F

    return (
        df.where(F.col("rtype").isin(*OFFSET_COMMIT_TYPES))
        .select(
            "key",
            # The fields read from a partition's newest value all lie in its first bytes: the
            # rows sent to Python carry those, not commit timestamps and metadata strings.
            F.col("value").substr(F.lit(1), F.lit(commits_columns.HEAD)).alias("value"),
            "offset",
            "ts",
        )
        .mapInArrow(commits_columns.aggregates_batches, commits_columns.DDL)
    )


def per_topic(rows: DataFrame) -> DataFrame:
    """Of :func:`both`'s rows, the aggregate per (group, topic) (``commits_columns.aggregated``),
    the tasks' rows of one key prefix combined: a (group, topic)'s partitions are in one task
    when the topic is ``__consumer_offsets`` (a group's records share a partition), but a
    mirror may place each partition's commits by its own key, and keys too short for a prefix
    come from anywhere. A few rows per (group, topic), against the batch's every commit."""
    from pyspark.sql import functions as F

    return (
        rows.where(F.col("per_topic"))
        .groupBy("prefix", "group", "topic")
        .agg(
            F.max("max_partition").alias("max_partition"),
            F.sum("commits").alias("commits"),
            F.max("last_commit_time").alias("last_commit_time"),
        )
        .select(*commits_columns.PER_TOPIC.names)
    )


def per_partition(rows: DataFrame) -> DataFrame:
    """Of :func:`both`'s rows, each partition's newest commit (``commits_columns.newest``)."""
    from pyspark.sql import functions as F

    return rows.where(~F.col("per_topic")).select(*commits_columns.SCHEMA.names)


@dataclass(frozen=True)
class Aggregates:
    """A batch's two commit aggregates, read from one persisted pass."""

    #: :func:`per_topic`, and an upper bound of its rows (the tasks' rows before combining).
    per_topic: DataFrame
    topic_rows: int
    #: :func:`per_partition`, and its exact number of rows.
    per_partition: DataFrame
    partition_rows: int


@contextmanager
def of(df: DataFrame) -> Iterator[Aggregates]:
    """The two aggregates of ``df``'s offset commits, computed once (persisted while the caller
    writes them) and counted in the same Spark job."""
    from pyspark.sql import functions as F

    rows = both(df).persist()
    try:
        counts = {r[0]: r[1] for r in rows.groupBy("per_topic").agg(F.count(F.lit(1))).collect()}
        yield Aggregates(
            per_topic(rows), counts.get(True, 0), per_partition(rows), counts.get(False, 0)
        )
    finally:
        rows.unpersist()
