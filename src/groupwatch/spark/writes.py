"""The Python stage's output, tallied and written to its tables, each write once per batch.

The output (persisted by the caller) holds every table's rows (:mod:`groupwatch.spark.output`);
:func:`tally` counts them in one Spark job, and only tables with rows are written.  Every write
carries the batch's transaction id, so a replayed batch skips what its first attempt wrote.

A batch small enough (``delta.driver_write_rows``, :func:`groupwatch.spark.sinks.on_driver`) is
collected to the driver as Arrow (:func:`collect`) and written there with delta-rs
(:mod:`groupwatch.delta.write`), under the same transaction ids; larger ones by Spark.
The choice is made once per batch (:func:`output_of`): the batch's :class:`BatchOutput` is a
:class:`SparkOutput` or a :class:`DriverOutput`, and the query asks it to validate (by Spark or
on the driver), to write, to add validation's quarantine rows, for the state versions and for
the notifier's rows alike.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.delta import write as deltawrite
from groupwatch.notify.inputs import AlertSnapshot, finding_of, snapshot_of
from groupwatch.spark import driver_tally, output, sinks

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from groupwatch.spark.validation import BatchValidator, Views

log = logging.getLogger("groupwatch.job")


@dataclass(frozen=True)
class Tally:
    """The output's rows per table, findings per (kind, severity), quarantine rows per stage."""

    counts: dict[str, int]
    findings: dict[tuple[str, str], int]
    quarantine: dict[str, int]


@dataclass(frozen=True)
class BatchRows:
    """The rows of the tables a batch appends to (lazy frames over the output)."""

    snapshots: DataFrame
    members: DataFrame
    quarantine: DataFrame


def table_rows(out: DataFrame, table: tables.Table) -> DataFrame:
    """The table's rows of the Python stage's output, in its declared columns."""
    from pyspark.sql import functions as F

    return (
        out.where(F.col("tbl") == table.name)
        .select(F.inline(F.col(f"`{table.name}`")))
        .select(*(F.col(f"`{c.name}`") for c in output.struct_columns(table)))
    )


def batch_rows(out: DataFrame) -> BatchRows:
    """Snapshots, member assignments and quarantine rows of the output."""
    return BatchRows(
        snapshots=table_rows(out, tables.GROUP_SNAPSHOTS),
        members=table_rows(out, tables.MEMBER_ASSIGNMENTS),
        quarantine=table_rows(out, tables.QUARANTINE),
    )


def tally(out: DataFrame) -> Tally:
    """Rows per table, findings per (kind, severity), quarantine rows per stage: one job."""
    from pyspark.sql import functions as F

    tbl = F.col("tbl")
    # Each output row holds one table's rows (an array): its size counts them, except where the
    # rows are told apart by kind or stage, which are taken out of their arrays.
    size: Column = F.lit(0)
    for table in output.OUTPUT_TABLES:
        size = F.when(tbl == table.name, F.size(F.col(f"`{table.name}`"))).otherwise(size)
    none = F.lit(None).cast("string")
    detail = F.when(
        tbl == tables.FINDINGS.name,
        F.transform(
            F.col(f"`{tables.FINDINGS.name}`"),
            lambda f: F.struct(
                f["kind"].alias("kind"), f["severity"].alias("severity"), none.alias("stage")
            ),
        ),
    ).when(
        tbl == tables.QUARANTINE.name,
        F.transform(
            F.col(f"`{tables.QUARANTINE.name}`"),
            lambda q: F.struct(
                none.alias("kind"), none.alias("severity"), q["stage"].alias("stage")
            ),
        ),
    )
    rows = (
        out.select("tbl", size.alias("n"), F.explode_outer(detail).alias("d"))
        .groupBy("tbl", "d.kind", "d.severity", "d.stage")
        .agg(F.sum(F.when(F.col("d").isNull(), F.col("n")).otherwise(1)).alias("count"))
    )
    counts: dict[str, int] = {}
    findings: dict[tuple[str, str], int] = {}
    stages: dict[str, int] = {}
    for row in rows.collect():
        table, n = row["tbl"], row["count"]
        counts[table] = counts.get(table, 0) + n
        if table == tables.FINDINGS.name:
            findings[(row["kind"], row["severity"])] = n
        elif table == tables.QUARANTINE.name:
            stages[row["stage"]] = n
    return Tally(counts=counts, findings=findings, quarantine=stages)


def tally_arrow(out: pa.Table) -> Tally:
    """:func:`tally` of an output already on the driver (Arrow)."""
    from collections import Counter

    rows = {table.name: output.table_column(out, table) for table in output.OUTPUT_TABLES}
    counts = {name: len(struct) for name, struct in rows.items() if len(struct)}
    findings = rows[tables.FINDINGS.name]
    quarantine = rows[tables.QUARANTINE.name]
    found = Counter(
        zip(
            findings.field("kind").to_pylist(),
            findings.field("severity").to_pylist(),
            strict=True,
        )
    )
    stages = Counter(quarantine.field("stage").to_pylist())
    return Tally(counts=counts, findings=dict(found), quarantine=dict(stages))


#: A batch's output on the driver: table name -> its rows as Arrow (columns as declared).
Collected = dict[str, "pa.Table"]


def collect(out: DataFrame) -> Collected:
    """The output's rows on the driver, one Arrow table per table that has rows.

    One Spark job over the persisted output; each table's array column is taken apart in
    Arrow (rows of the other tables hold it null, which flattens to nothing).
    """
    return collect_arrow(driver_tally.arrow("output", out.toArrow()))


def collect_arrow(arrow: pa.Table) -> Collected:
    """:func:`collect` of an output already on the driver (Arrow)."""
    import pyarrow as pa

    collected: Collected = {}
    for table in output.OUTPUT_TABLES:
        struct = output.table_column(arrow, table)
        if len(struct) == 0:
            continue
        collected[table.name] = pa.table(
            dict(zip([f.name for f in struct.type], struct.flatten(), strict=True))
        )
    return collected


#: What the notifier reads of a snapshot (``AlertSnapshot``'s fields): enough to resolve a
#: group's open alerts.
ALERT_SNAPSHOT_FIELDS = tuple(f.name for f in dataclasses.fields(AlertSnapshot))

AlertRows = tuple[list[tables.FindingRow], list[AlertSnapshot]]


@dataclass(frozen=True)
class BatchOutput(ABC):
    """A batch's Python-stage output (persisted by the caller) and where its rows are written
    from; :func:`output_of` picks the kind once per batch."""

    spark: SparkSession
    config: Config
    batch_id: int

    def validate(
        self,
        validator: BatchValidator,
        source: DataFrame,
        detected_at: dt.datetime,
        counts: dict[str, int],
    ) -> DataFrame | None:
        """Great Expectations on the rows about to be appended, where they are
        (:mod:`~groupwatch.spark.validation`); the quarantine rows of their offenders, taken
        from the batch's ``source`` rows."""
        from groupwatch.spark.validation import validate_batch

        views = self._validation_views()
        return validate_batch(
            self.spark, self.config, validator, self.batch_id, views, source, detected_at, counts
        )

    @abstractmethod
    def _validation_views(self) -> Views:
        """The appended tables' rows as the suites read them: Spark frames or pandas."""

    @abstractmethod
    def share_rows(self) -> pa.Table | None:
        """The batch's ``share_partition_state`` rows as Arrow (None: the batch has none),
        with the brokers' end offsets once :meth:`with_share` gave them."""

    @abstractmethod
    def with_share(self, rows: pa.Table) -> BatchOutput:
        """The same output with its ``share_partition_state`` rows replaced by ``rows`` (the
        brokers' end offsets and share lag filled in: ``groupwatch.spark.share_ends``)."""

    @abstractmethod
    def write_findings(self) -> None:
        """MERGE the output's findings (insert only) into ``findings``.

        Findings go first and alone: they are what alerts and on-call wait for, and every
        table's write is skipped on replay by its own transaction id, so the order of the
        writes does not matter for exactly-once."""

    @abstractmethod
    def with_quarantine(self, extra: DataFrame) -> BatchOutput:
        """The same output with validation's quarantine rows (a Spark frame) added."""

    @abstractmethod
    def write_tables(self, counts: Mapping[str, int]) -> None:
        """Append snapshots, member assignments and quarantine rows, MERGE ownership intervals
        and append the state versions: in turn, each table only if it has rows (state
        always)."""

    @abstractmethod
    def states(self) -> pa.Table | None:
        """The batch's ``group_state`` rows as Arrow (None: the batch has none)."""

    @abstractmethod
    def alert_rows(self, any_findings: bool) -> AlertRows:
        """The batch's findings and snapshots for the notifier, typed (``any_findings``: the
        tally counted some)."""


@dataclass(frozen=True)
class SparkOutput(BatchOutput):
    """Written by Spark from the persisted output."""

    out: DataFrame
    rows: BatchRows
    #: ``share_partition_state``'s rows with the brokers' end offsets (:meth:`with_share`).
    share: pa.Table | None = None

    def share_rows(self) -> pa.Table | None:
        if self.share is not None:
            return self.share
        rows = driver_tally.arrow(
            "share", table_rows(self.out, tables.SHARE_PARTITION_STATE).toArrow()
        )
        return rows if rows.num_rows else None

    def with_share(self, rows: pa.Table) -> BatchOutput:
        return dataclasses.replace(self, share=rows)

    def _validation_views(self) -> Views:
        from groupwatch.spark.validation import spark_views

        return spark_views(self.rows.snapshots, self.rows.members)

    def write_findings(self) -> None:
        findings = table_rows(self.out, tables.FINDINGS)
        sinks.run_once(
            self.spark,
            sinks.merge(self.spark, findings, tables.FINDINGS, self.config, update=False),
            sinks.APP_ID,
            self.batch_id,
        )

    def with_quarantine(self, extra: DataFrame) -> BatchOutput:
        rows = self.rows
        both = BatchRows(rows.snapshots, rows.members, rows.quarantine.unionByName(extra))
        return dataclasses.replace(self, rows=both)

    def write_tables(self, counts: Mapping[str, int]) -> None:
        from pyspark.sql import functions as F

        spark, config, batch_id, rows = self.spark, self.config, self.batch_id, self.rows
        writes: dict[str, Callable[[], object]] = {}
        for frame, table in (
            (rows.snapshots, tables.GROUP_SNAPSHOTS),
            (rows.members, tables.MEMBER_ASSIGNMENTS),
            (rows.quarantine, tables.QUARANTINE),
        ):
            if counts.get(table.name):
                writes[table.name] = functools.partial(
                    sinks.append_once, frame, table, config, sinks.APP_ID, batch_id
                )
        if counts.get(tables.PARTITION_OWNERSHIP.name):
            ownership = table_rows(self.out, tables.PARTITION_OWNERSHIP)
            writes[tables.PARTITION_OWNERSHIP.name] = sinks.merge(
                spark, ownership, tables.PARTITION_OWNERSHIP, config
            )
        if counts.get(tables.SHARE_PARTITION_HISTORY.name):
            history = table_rows(self.out, tables.SHARE_PARTITION_HISTORY)
            writes[tables.SHARE_PARTITION_HISTORY.name] = functools.partial(
                sinks.append_once,
                history,
                tables.SHARE_PARTITION_HISTORY,
                config,
                sinks.APP_ID,
                batch_id,
            )
        share = self.share_rows() if counts.get(tables.SHARE_PARTITION_STATE.name) else None
        if share is not None:
            writes[tables.SHARE_PARTITION_STATE.name] = sinks.merge(
                spark,
                spark.createDataFrame(share, schema=tables.SHARE_PARTITION_STATE.ddl),
                tables.SHARE_PARTITION_STATE,
                config,
            )
        states = table_rows(self.out, tables.GROUP_STATE).withColumn("batch_id", F.lit(batch_id))
        writes[tables.GROUP_STATE.name] = functools.partial(
            sinks.append_once, states, tables.GROUP_STATE, config, sinks.APP_ID, batch_id
        )
        with sinks.transaction(spark, sinks.APP_ID, batch_id):
            seconds = sinks.run_in_order(writes)
        log.debug(
            "batch %d: writes took %s",
            batch_id,
            ", ".join(f"{name} {s:.1f}s" for name, s in sorted(seconds.items())),
        )

    def states(self) -> pa.Table | None:
        return driver_tally.arrow("state", table_rows(self.out, tables.GROUP_STATE).toArrow())

    def alert_rows(self, any_findings: bool) -> AlertRows:
        found = (
            driver_tally.arrow("alerts", table_rows(self.out, tables.FINDINGS).toArrow())
            if any_findings
            else None
        )
        snaps = self.rows.snapshots.select(*ALERT_SNAPSHOT_FIELDS).toArrow()
        driver_tally.arrow("alerts", snaps)
        return (
            [] if found is None else [finding_of(r) for r in found.to_pylist()],
            [snapshot_of(r) for r in snaps.to_pylist()],
        )


@dataclass(frozen=True)
class DriverOutput(BatchOutput):
    """Collected to the driver as Arrow (:func:`collect`) and written there with delta-rs,
    under the same transaction ids as Spark's writes, and validated there."""

    collected: Collected = dataclasses.field(default_factory=dict)

    def share_rows(self) -> pa.Table | None:
        return self.collected.get(tables.SHARE_PARTITION_STATE.name)

    def with_share(self, rows: pa.Table) -> BatchOutput:
        collected = {**self.collected, tables.SHARE_PARTITION_STATE.name: rows}
        return dataclasses.replace(self, collected=collected)

    def _validation_views(self) -> Views:
        from groupwatch.spark.validation import arrow_views

        collected = self.collected
        return arrow_views(
            collected.get(tables.GROUP_SNAPSHOTS.name),
            collected.get(tables.MEMBER_ASSIGNMENTS.name),
        )

    def write_findings(self) -> None:
        table = tables.FINDINGS
        deltawrite.merge_once(
            sinks.local_table(self.config, table),
            table,
            self.collected[table.name],
            sinks.APP_ID,
            self.batch_id,
            update=False,
        )

    def with_quarantine(self, extra: DataFrame) -> BatchOutput:
        import pyarrow as pa

        table = tables.QUARANTINE
        more = deltawrite.conform(extra.toArrow(), table)
        have = self.collected.get(table.name)
        both = more if have is None else pa.concat_tables([deltawrite.conform(have, table), more])
        return dataclasses.replace(self, collected={**self.collected, table.name: both})

    def write_tables(self, counts: Mapping[str, int]) -> None:
        import pyarrow as pa

        config, batch_id, collected = self.config, self.batch_id, self.collected
        writes: dict[str, Callable[[], object]] = {}
        for table in (tables.GROUP_SNAPSHOTS, tables.MEMBER_ASSIGNMENTS, tables.QUARANTINE):
            if collected.get(table.name) is not None:
                writes[table.name] = functools.partial(
                    deltawrite.append_once,
                    sinks.local_table(config, table),
                    table,
                    collected[table.name],
                    sinks.APP_ID,
                    batch_id,
                )
        history = collected.get(tables.SHARE_PARTITION_HISTORY.name)
        if history is not None:
            writes[tables.SHARE_PARTITION_HISTORY.name] = functools.partial(
                deltawrite.append_once,
                sinks.local_table(config, tables.SHARE_PARTITION_HISTORY),
                tables.SHARE_PARTITION_HISTORY,
                history,
                sinks.APP_ID,
                batch_id,
            )
        share = collected.get(tables.SHARE_PARTITION_STATE.name)
        if share is not None:
            writes[tables.SHARE_PARTITION_STATE.name] = functools.partial(
                deltawrite.merge_once,
                sinks.local_table(config, tables.SHARE_PARTITION_STATE),
                tables.SHARE_PARTITION_STATE,
                share,
                sinks.APP_ID,
                batch_id,
            )
        ownership = collected.get(tables.PARTITION_OWNERSHIP.name)
        if ownership is not None:
            writes[tables.PARTITION_OWNERSHIP.name] = functools.partial(
                deltawrite.merge_once,
                sinks.local_table(config, tables.PARTITION_OWNERSHIP),
                tables.PARTITION_OWNERSHIP,
                ownership,
                sinks.APP_ID,
                batch_id,
            )
        states = collected.get(tables.GROUP_STATE.name)
        if states is not None:  # every group the stage ran for has one
            batch = pa.array([batch_id] * states.num_rows, pa.int64())
            writes[tables.GROUP_STATE.name] = functools.partial(
                deltawrite.append_once,
                sinks.local_table(config, tables.GROUP_STATE),
                tables.GROUP_STATE,
                states.append_column("batch_id", batch),
                sinks.APP_ID,
                batch_id,
            )
        seconds = sinks.run_in_order(writes)
        log.debug(
            "batch %d: writes from the driver took %s",
            batch_id,
            ", ".join(f"{name} {s:.2f}s" for name, s in sorted(seconds.items())),
        )

    def states(self) -> pa.Table | None:
        return self.collected.get(tables.GROUP_STATE.name)

    def alert_rows(self, any_findings: bool) -> AlertRows:
        # Already on the driver: no Spark job runs for the alerts.
        found = self.collected.get(tables.FINDINGS.name)
        snaps = self.collected.get(tables.GROUP_SNAPSHOTS.name)
        found_rows = [] if found is None else found.to_pylist()
        snap_rows = [] if snaps is None else snaps.select(list(ALERT_SNAPSHOT_FIELDS)).to_pylist()
        return [finding_of(r) for r in found_rows], [snapshot_of(r) for r in snap_rows]


def output_of(
    spark: SparkSession, config: Config, out: DataFrame, batch_id: int, total_rows: int
) -> BatchOutput:
    """The batch's output, written from the driver when its ``total_rows`` are few enough
    (``delta.driver_write_rows``), else by Spark: chosen here, once."""
    if sinks.on_driver(config, total_rows):
        return DriverOutput(spark, config, batch_id, collect(out))
    return SparkOutput(spark, config, batch_id, out, batch_rows(out))


def driver_output(
    spark: SparkSession, config: Config, out: pa.Table, schema: StructType, batch_id: int
) -> BatchOutput:
    """The output of a Python stage run on the driver (:mod:`groupwatch.spark.driver_stage`),
    written from there unless it has more rows than the driver writes (then by Spark, from
    a local relation)."""
    if not sinks.on_driver(config, out.num_rows):
        frame = spark.createDataFrame(out, schema=schema)
        return SparkOutput(spark, config, batch_id, frame, batch_rows(frame))
    return DriverOutput(spark, config, batch_id, collect_arrow(out))
