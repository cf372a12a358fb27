"""Offset commits, most of ``__consumer_offsets``, never reach Python: the JVM aggregates a
batch's commits per (group, topic) and MERGEs them into ``group_offsets``.

Each MERGE leaves a note naming its batch in the table's history, so that a batch (or its
replay) can read the table as it was before its own MERGE (:func:`version_before`): the
partition counts earlier batches' commits tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch import locations, tables
from groupwatch.config import Config
from groupwatch.delta import log as deltalog
from groupwatch.delta import write as deltawrite
from groupwatch.protocol.specs import OFFSET_COMMIT_TYPES
from groupwatch.spark import keys, sinks

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import Column, DataFrame, SparkSession


def batch_note(batch_id: int) -> str:
    """The note a batch's ``group_offsets`` MERGE leaves in the table's history."""
    return f"{sinks.APP_ID} batch {batch_id}"


def merge_commits(
    spark: SparkSession,
    config: Config,
    per_topic: DataFrame,
    batch_id: int,
    rows: int | None = None,
) -> Column | None:
    """MERGE the batch's offset commits aggregated per (group, topic) (``per_topic``:
    :func:`groupwatch.spark.commit_aggregates.per_topic`) into ``group_offsets``; returns a
    condition matching the commits whose keys are malformed (``None`` if there are none),
    which go to Python to be decoded and quarantined.

    Aggregated, a batch has one row per (group, topic) it commits to: from the driver with
    delta-rs up to ``delta.driver_write_rows`` of them, by Spark above. ``rows``: an upper
    bound of ``per_topic``'s rows, if known (the tasks' rows before they are combined;
    :func:`groupwatch.spark.sinks.placed`)."""
    with sinks.placed(config, per_topic, rows) as (data, aggregated):
        if data is not None:
            bad = _merge_on_driver(config, data, batch_id)
        else:
            bad = _merge_by_spark(spark, config, aggregated, batch_id)
    return _malformed(bad)


def merge_aggregated(config: Config, aggregated: pa.Table, batch_id: int) -> Column | None:
    """:func:`merge_commits` of an aggregate made on the driver
    (:func:`groupwatch.spark.commits_columns.aggregated`), MERGEd from there."""
    return _malformed(_merge_on_driver(config, aggregated, batch_id))


def _malformed(bad: list[bytes | None]) -> Column | None:
    """The condition matching the commits of the malformed prefixes ``bad`` (None: none)."""
    from pyspark.sql import functions as F

    if not bad:
        return None
    prefix = keys.commit_prefix(F.col("key"))
    known = [bytearray(p) for p in bad if p is not None]
    malformed = prefix.isNull() if None in bad else F.lit(False)
    if known:
        malformed = malformed | prefix.isin(*known)
    return F.col("rtype").isin(*OFFSET_COMMIT_TYPES) & malformed


#: How a (group, topic)'s running totals take a batch's aggregate, as SQL over the table (t)
#: and the batch (s); the same for Spark's MERGE and delta-rs's.
_UPDATE = {
    "max_partition": "greatest(t.max_partition, s.max_partition)",
    "commits": "t.commits + s.commits",
    "last_commit_time": "greatest(t.last_commit_time, s.last_commit_time)",
}


def _merge_by_spark(
    spark: SparkSession, config: Config, aggregated: DataFrame, batch_id: int
) -> list[bytes | None]:
    """MERGE the well-formed aggregates with Spark; the prefixes of the malformed ones."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    wellformed = F.col("group").isNotNull() & F.col("topic").isNotNull()
    table = tables.GROUP_OFFSETS
    target = DeltaTable.forPath(spark, config.table_path(table.name))
    merge = (
        target.alias("t")
        .merge(
            sinks.conform(aggregated.where(wellformed), table).alias("s"),
            "t.group = s.group AND t.topic = s.topic",
        )
        .whenMatchedUpdate(set=dict(_UPDATE))
        .whenNotMatchedInsertAll()
    )
    with sinks.commit_note(spark, batch_note(batch_id)):
        sinks.run_once(spark, merge.execute, sinks.APP_ID, batch_id)
    # Malformed keys are rare: their prefixes come to the driver, and the rows they
    # stand for are picked out of the persisted batch by the caller.
    return [r["prefix"] for r in aggregated.where(~wellformed).select("prefix").collect()]


def _merge_on_driver(config: Config, rows: pa.Table, batch_id: int) -> list[bytes | None]:
    """The same MERGE from the driver with delta-rs (:mod:`groupwatch.delta.write`)."""
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    wellformed = pc.and_(pc.is_valid(rows.column("group")), pc.is_valid(rows.column("topic")))
    table = tables.GROUP_OFFSETS
    deltawrite.merge_once(
        sinks.local_table(config, table),
        table,
        rows.filter(wellformed),
        sinks.APP_ID,
        batch_id,
        on=("group", "topic"),
        update=_UPDATE,
        null_safe=False,
        note=batch_note(batch_id),
    )
    bad: list[bytes | None] = rows.filter(pc.invert(wellformed)).column("prefix").to_pylist()
    return bad


def version_before(spark: SparkSession, config: Config, batch_id: int) -> int:
    """The ``group_offsets`` version before this batch's MERGE (found by its note).

    The newest commit with a batch's note decides: this batch's MERGE (a replay), or an
    earlier one (its MERGE has not run yet); any other commit (upkeep's, an operator's own
    OPTIMIZE or DELETE) is looked past (:func:`before_note`)."""
    path = config.table_path(tables.GROUP_OFFSETS.name)
    local = locations.local_path(path)
    if local is not None:
        # The log's newest commit files read from the driver: Spark's history is a Spark
        # job and its planning on every batch, and delta-rs's loads the table's snapshot.
        entries = deltalog.newest_notes(local, _HISTORY)
    else:
        from delta.tables import DeltaTable

        entries = [
            (int(e["version"]), e["userMetadata"])
            for e in DeltaTable.forPath(spark, path).history(_HISTORY).collect()
        ]
    return before_note(entries, batch_id)


def before_note(entries: list[tuple[int, str | None]], batch_id: int) -> int:
    """Of a table's newest commits (version, note), the version before this batch's MERGE:
    the one before its note if the newest commit with a batch's note has it, else the newest
    (the MERGE has not run yet).

    Every other commit is looked past, not only upkeep's: a replay must read what its first
    attempt read, which was the table before its MERGE, whatever committed after it (reading
    the newest instead gave a replay after an operator's OPTIMIZE the batch's own commits as
    hints of earlier ones)."""
    for version, note in sorted(entries, key=lambda e: -e[0]):
        if not is_batch_note(note):
            continue
        if note == batch_note(batch_id):
            return version - 1
        break
    return max(version for version, _ in entries)


def is_batch_note(note: str | None) -> bool:
    """Whether a commit's note is a batch's MERGE's (:func:`batch_note`)."""
    prefix = batch_note(0)[:-1]
    return note is not None and note.startswith(prefix) and note[len(prefix) :].isdigit()


#: Commits of ``group_offsets``' history looked at: one upkeep turn commits at most four
#: (DELETE, OPTIMIZE, VACUUM START and END) after the batch's MERGE; an operator's own
#: commits beyond that few leave the newest version read (the MERGE not found).
_HISTORY = 8
