"""Great Expectations on the rows a micro-batch is about to write.

The suites are JSON files in ``conf/expectations/<table>.json`` (GX's own suite format), so the
rules are reviewed as configuration, not code.  A failing expectation never stops the job: it
becomes a ``validation_results`` row and, for every offending record GX can point at, a
``quarantine`` row (stage ``validate``) with the record's raw bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.delta import write as deltawrite
from groupwatch.spark import sinks

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("groupwatch.validation")
#: A batch's failed expectations are logged with the batch's own lines.
_job_log = logging.getLogger("groupwatch.job")

#: Columns that point back at the source record of any validated row.
ID_COLUMNS = ["source_partition", "source_offset"]


def suite_files(suites_dir: Path) -> list[Path]:
    """The suites of a folder, one ``<table>.json`` per validated table, in name order."""
    return sorted(suites_dir.glob("*.json"))


@dataclass(frozen=True)
class ExpectationResult:
    table_name: str
    expectation: str
    column: str | None
    success: bool
    unexpected_count: int
    #: (source_partition, source_offset) of offending rows, as far as GX reports them.
    offenders: tuple[tuple[int, int], ...]
    details: str


class BatchValidator:
    """Built once per job; ``validate(table, df)`` per batch."""

    def __init__(self, suites_dir: Path) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.expectations.expectation_configuration import (
            ExpectationConfiguration,
        )

        self._context = gx.get_context(mode="ephemeral")
        # One progress bar per metric per batch would drown the job's own log.
        self._context.variables.progress_bars = ProgressBarsConfig(globally=False)
        source = self._context.data_sources.add_spark("groupwatch", persist=False)
        # A batch written from the driver is validated there, as pandas: GX's Spark engine
        # runs a Spark job per expectation, 2-3 s for a live batch's few hundred rows.
        local = self._context.data_sources.add_pandas("groupwatch-driver")
        self._definitions: dict[str, Any] = {}
        self._local_definitions: dict[str, Any] = {}
        for path in suite_files(suites_dir):
            spec = json.loads(path.read_text())
            suite = self._context.suites.add(
                gx.ExpectationSuite(
                    name=spec["name"],
                    expectations=[ExpectationConfiguration(**e) for e in spec["expectations"]],
                )
            )
            batch = source.add_dataframe_asset(name=path.stem).add_batch_definition_whole_dataframe(
                "micro-batch"
            )
            self._definitions[path.stem] = self._context.validation_definitions.add(
                gx.ValidationDefinition(name=f"validate-{path.stem}", data=batch, suite=suite)
            )
            local_batch = local.add_dataframe_asset(
                name=path.stem
            ).add_batch_definition_whole_dataframe("micro-batch")
            self._local_definitions[path.stem] = self._context.validation_definitions.add(
                gx.ValidationDefinition(
                    name=f"validate-{path.stem}-driver", data=local_batch, suite=suite
                )
            )
        log.info("expectation suites: %s", ", ".join(self._definitions) or "none")

    @property
    def tables(self) -> list[str]:
        return list(self._definitions)

    def validate(
        self, table_name: str, df: DataFrame | pd.DataFrame, rows: int | None = None
    ) -> list[ExpectationResult]:
        """Validate ``df`` (a Spark or a pandas frame, ``rows`` long if the caller knows)
        against the table's suite.

        Two passes: the first asks GX for pass/fail only, which for Spark is one aggregate per
        expectation; only when something fails does the second collect the offending rows'
        positions (GX's COMPLETE format, a filtered scan per expectation). A healthy batch
        of half a million member rows thus costs a fraction of the full report.
        """
        import pandas as pd

        local = isinstance(df, pd.DataFrame)
        definition = (self._local_definitions if local else self._definitions)[table_name]
        quick = definition.run(
            batch_parameters={"dataframe": df}, result_format={"result_format": "BOOLEAN_ONLY"}
        )
        if all(r.success and not _raised(r) for r in quick.results):
            return [self._passed(table_name, r.expectation_config, rows) for r in quick.results]
        result = definition.run(
            batch_parameters={"dataframe": df},
            result_format={
                "result_format": "COMPLETE",
                "unexpected_index_column_names": ID_COLUMNS,
            },
        )
        return [self._reported(table_name, r) for r in result.results]

    @staticmethod
    def _passed(table_name: str, cfg: Any, rows: int | None) -> ExpectationResult:
        return ExpectationResult(
            table_name=table_name,
            expectation=_name(cfg),
            column=cfg.kwargs.get("column"),
            success=True,
            unexpected_count=0,
            offenders=(),
            details=_details(cfg, rows, 0.0 if rows else None, None),
        )

    @staticmethod
    def _reported(table_name: str, r: Any) -> ExpectationResult:
        cfg = r.expectation_config
        raw = r.result or {}
        offenders = tuple(
            (int(i["source_partition"]), int(i["source_offset"]))
            for i in raw.get("unexpected_index_list") or []
            if isinstance(i, dict)
            and _known(i.get("source_offset"))
            and _known(i.get("source_partition"))
        )
        return ExpectationResult(
            table_name=table_name,
            expectation=_name(cfg),
            column=cfg.kwargs.get("column"),
            success=bool(r.success) and not _raised(r),
            unexpected_count=int(raw.get("unexpected_count") or 0),
            offenders=offenders,
            details=_details(
                cfg,
                raw.get("element_count"),
                raw.get("unexpected_percent"),
                (r.exception_info or {}).get("exception_message"),
            ),
        )


def _name(cfg: Any) -> str:
    """The expectation as results name it: its type, and its column if it has one."""
    column = cfg.kwargs.get("column")
    return f"{cfg.type}({column})" if column else str(cfg.type)


def _known(value: Any) -> bool:
    """Whether an offender's position is there: pandas reads a null integer as NaN."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _raised(r: Any) -> bool:
    return bool((r.exception_info or {}).get("raised_exception"))


def _details(cfg: Any, element_count: Any, unexpected_percent: Any, exception: Any) -> str:
    return json.dumps(
        {
            "kwargs": {k: v for k, v in cfg.kwargs.items() if k != "batch_id"},
            "element_count": element_count,
            "unexpected_percent": unexpected_percent,
            "exception": exception,
        },
        default=str,
    )


def _write_results(
    spark: SparkSession, config: Config, results: list[tuple[Any, ...]], batch_id: int
) -> None:
    """Append the batch's ``validation_results`` rows (from the driver when few enough)."""
    table = tables.VALIDATION_RESULTS
    if sinks.on_driver(config, len(results)):
        import pyarrow as pa

        names = table.column_names
        rows = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in results])
        path = sinks.local_table(config, table)
        deltawrite.append_once(path, table, rows, sinks.APP_ID, batch_id)
        return
    frame = spark.createDataFrame(results, table.ddl)
    sinks.append_once(frame, table, config, sinks.APP_ID, batch_id)


#: The frames a batch's suites run on, by table: Spark's or pandas', never mixed in a batch.
Views = dict[str, "DataFrame | pd.DataFrame"]


def spark_views(snapshots: DataFrame, members: DataFrame) -> Views:
    """What the suites read of a batch's rows in Spark: the snapshots, and the members with
    :func:`spark_member_views`' derived columns."""
    return {"group_snapshots": snapshots, "member_assignments": spark_member_views(members)}


def spark_member_views(members: DataFrame) -> DataFrame:
    """``member_assignments`` rows with the two columns the suite checks that the table does
    not hold: the lowest partition assigned, and whether a classic member's assignment stays
    within its subscription."""
    from pyspark.sql import functions as F

    assigned = F.flatten(F.transform("assignment", lambda tp: tp["partitions"]))
    return members.withColumn("min_assigned_partition", F.array_min(assigned)).withColumn(
        "assigned_topics_subscribed",
        # Classic members only: a KIP-848 member's assignment names topics by id until
        # a record or the brokers name them, and a streams member's by subtopology;
        # the engine checks those (assignment_outside_subscription) once confirmed.
        F.when(
            F.col("group_type") == "classic",
            F.forall(
                F.coalesce("assignment", F.array()),
                lambda tp: F.array_contains(F.coalesce("topics", F.array()), tp["topic"]),
            ),
        ),
    )


def arrow_views(snapshots: pa.Table | None, members: pa.Table | None) -> Views:
    """What the suites read of rows collected to the driver (Arrow, None: the table has none),
    as pandas; the derived columns are :func:`member_views`', which equal
    :func:`spark_member_views`'."""
    views: Views = {}
    if snapshots is not None:
        views["group_snapshots"] = snapshots.to_pandas()
    if members is not None:
        views["member_assignments"] = member_views(members).to_pandas()
    return views


def member_views(members: pa.Table) -> pa.Table:
    """``member_assignments`` rows with the two columns :func:`validate_batch` derives in
    Spark, computed with Spark SQL's semantics: ``min_assigned_partition`` is
    ``array_min(flatten(transform(assignment, tp -> tp.partitions)))`` (null when the
    assignment or any topic's partitions are null, or nothing is assigned), and
    ``assigned_topics_subscribed`` ``forall(assignment, tp -> array_contains(topics,
    tp.topic))`` for classic members (three-valued, as SQL's), null for the others."""
    import pyarrow as pa

    assignments = members.column("assignment").to_pylist()
    topics = members.column("topics").to_pylist()
    kinds = members.column("group_type").to_pylist()
    lowest: list[int | None] = []
    subscribed: list[bool | None] = []
    for assignment, subscription, kind in zip(assignments, topics, kinds, strict=True):
        lowest.append(_lowest_partition(assignment))
        subscribed.append(
            _all_subscribed(assignment or [], subscription or []) if kind == "classic" else None
        )
    return members.append_column(
        "min_assigned_partition", pa.array(lowest, pa.int32())
    ).append_column("assigned_topics_subscribed", pa.array(subscribed, pa.bool_()))


def _lowest_partition(assignment: list[dict[str, Any]] | None) -> int | None:
    if assignment is None or any(tp["partitions"] is None for tp in assignment):
        return None  # Spark's flatten is null if any inner array is
    found = [p for tp in assignment for p in tp["partitions"] if p is not None]
    return min(found) if found else None


def _all_subscribed(assignment: list[dict[str, Any]], topics: list[str | None]) -> bool | None:
    """SQL's ``forall`` of ``array_contains``: false if any is false, else null if any is
    null, else true."""
    verdicts = [_contains(topics, tp["topic"]) for tp in assignment]
    if False in verdicts:
        return False
    return None if None in verdicts else True


def _contains(values: list[str | None], value: str | None) -> bool | None:
    """SQL's ``array_contains``: null for a null value, true if found, else null if the
    array holds a null, else false."""
    if value is None:
        return None
    if value in values:
        return True
    return None if None in values else False


def validate_batch(
    spark: SparkSession,
    config: Config,
    validator: BatchValidator,
    batch_id: int,
    views: Views,
    source: DataFrame,
    detected_at: dt.datetime,
    counts: dict[str, int],
) -> DataFrame | None:
    """Run the GX suites on a batch's rows (``views``: :func:`spark_views` or
    :func:`arrow_views`); failures become validation rows and quarantine rows (returned, not
    yet written: they join the batch's own quarantine rows).

    An offending row is quarantined with its record's raw bytes, taken from the batch's
    (persisted) ``source`` rows by position: the Python stage's output does not carry the
    values of the records it decoded, which would double what crosses from Python.
    """
    from pyspark.sql import functions as F

    results: list[tuple[int, str, str, bool, int, str, dt.datetime]] = []
    offenders: list[tuple[int, int, str, str | None, str]] = []
    for name in validator.tables:
        if name not in views:
            continue
        for r in validator.validate(name, views[name], counts.get(name, 0)):
            results.append(
                (
                    batch_id,
                    r.table_name,
                    r.expectation,
                    r.success,
                    r.unexpected_count,
                    r.details,
                    detected_at,
                )
            )
            offenders += [(p, o, r.expectation, r.column, name) for p, o in r.offenders]
    if not results:
        return None
    _write_results(spark, config, results, batch_id)
    failed = [r for r in results if not r[3]]
    if failed:
        _job_log.warning(
            "batch %d: %d expectation(s) failed: %s",
            batch_id,
            len(failed),
            ", ".join(r[2] for r in failed),
        )
    if not offenders:
        return None
    bad = spark.createDataFrame(
        offenders,
        "p int, o bigint, expectation string, column string, table_name string",
    ).distinct()
    raw = source.select(
        F.col("partition").alias("p"),
        F.col("offset").alias("o"),
        F.col("topic").alias("source_topic"),
        F.timestamp_millis("ts").alias("source_timestamp"),
        F.coalesce("kgroup", F.lit("")).alias("group"),
        "key",
        "value",
    )
    return sinks.conform(
        bad.join(raw, ["p", "o"]).select(
            F.lit("validate").alias("stage"),
            F.col("expectation").alias("error_kind"),
            F.concat_ws(".", "table_name", "column").alias("field_path"),
            F.lit(None).cast("int").alias("byte_offset"),
            F.concat(F.lit("failed "), "expectation").alias("message"),
            "group",
            F.lit(None).cast("string").alias("member_id"),
            "key",
            "value",
            "source_topic",
            F.col("p").alias("source_partition"),
            F.col("o").alias("source_offset"),
            "source_timestamp",
            F.lit(detected_at).alias("quarantined_at"),
        ),
        tables.QUARANTINE,
    )
