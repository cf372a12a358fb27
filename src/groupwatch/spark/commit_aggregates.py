"""A batch's two offset-commit aggregates from one pass over its commits, in the tasks that
hold them (:mod:`groupwatch.spark.commits_columns`, no shuffle of the commits): per (group,
topic), which :mod:`groupwatch.spark.offsets` MERGEs into ``group_offsets``, and each
partition's newest commit, which :mod:`groupwatch.spark.committed` MERGEs into
``committed_offsets``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
    from pyspark.sql.pandas.types import from_arrow_schema

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
        .mapInArrow(commits_columns.aggregates_batches, from_arrow_schema(commits_columns.BOTH))
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


def per_partition(rows: DataFrame, spread: Sequence[tuple[str, str]] = ()) -> DataFrame:
    """Of :func:`both`'s rows, each partition's newest commit (``commits_columns.newest``).

    ``spread``: the (group, topic)s whose commits more than one task held. ``__consumer_offsets``
    never spreads a group (it places a group's records in one partition), but a mirror that
    places records by their key, or records replayed into other partitions, may put one
    partition's commits in several: their rows are combined into one, the newest by commit
    time (which of two partitions' commits came first is not known) with the changes and
    commits of all, so that a MERGE gets one row a partition."""
    from pyspark.sql import functions as F

    newest = rows.where(~F.col("per_topic")).select(*commits_columns.SCHEMA.names)
    if not spread:
        return newest
    pairs = F.broadcast(
        newest.sparkSession.createDataFrame(list(spread), "group string, topic string")
    )
    key = ["group", "topic"]
    last = F.max_by(F.struct(*_LAST), F.col("commit_time"))
    combined = (
        newest.join(pairs, key, "left_semi")
        .groupBy(*key, "partition")
        .agg(
            last.alias("last"),
            F.max("moved_time").alias("moved_time"),
            F.sum("changes").alias("changes"),
            F.sum("commits").alias("commits"),
        )
        .select(
            *key,
            "partition",
            *(F.col(f"last.{c}").alias(c) for c in _LAST),
            "moved_time",
            "changes",
            "commits",
        )
        .select(*commits_columns.SCHEMA.names)
    )
    return newest.join(pairs, key, "left_anti").unionByName(combined)


#: A partition's newest commit's columns, taken together from the newest of several rows.
_LAST = ("tombstone", "committed_offset", "leader_epoch", "metadata_size", "commit_time")


@dataclass(frozen=True)
class Aggregates:
    """A batch's two commit aggregates, read from one persisted pass."""

    #: :func:`per_topic`, and an upper bound of its rows (the tasks' rows before combining).
    per_topic: DataFrame
    topic_rows: int
    #: :func:`per_partition`, and its number of rows if known (None: partitions' rows of
    #: several tasks were combined).
    per_partition: DataFrame
    partition_rows: int | None


@contextmanager
def of(df: DataFrame) -> Iterator[Aggregates]:
    """The two aggregates of ``df``'s offset commits, computed once (persisted while the caller
    writes them), counted in the same Spark job, which also finds the (group, topic)s more
    than one task held (:func:`per_partition`)."""
    from pyspark.sql import functions as F

    rows = both(df).persist()
    try:
        per_task = rows.groupBy(
            "per_topic", F.when(F.col("per_topic"), F.col("prefix")).alias("prefix")
        ).agg(
            F.count(F.lit(1)).alias("n"),
            F.first("group").alias("group"),
            F.first("topic").alias("topic"),
        )
        many = F.col("per_topic") & (F.col("n") > 1) & F.col("group").isNotNull()
        summary = per_task.groupBy("per_topic").agg(
            F.sum("n").alias("n"),
            F.collect_list(
                F.when(many & F.col("topic").isNotNull(), F.struct("group", "topic"))
            ).alias("spread"),
        )
        counts = {r["per_topic"]: r for r in summary.collect()}
        topics = counts.get(True)
        partitions = counts.get(False)
        spread = [(p["group"], p["topic"]) for p in (topics["spread"] if topics else [])]
        yield Aggregates(
            per_topic(rows),
            int(topics["n"]) if topics else 0,
            per_partition(rows, spread),
            None if spread else (int(partitions["n"]) if partitions else 0),
        )
    finally:
        rows.unpersist()
