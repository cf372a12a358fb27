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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.spark import deltawrite, sinks

if TYPE_CHECKING:
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
        self._definitions: dict[str, Any] = {}
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
        log.info("expectation suites: %s", ", ".join(self._definitions) or "none")

    @property
    def tables(self) -> list[str]:
        return list(self._definitions)

    def validate(
        self, table_name: str, df: DataFrame, rows: int | None = None
    ) -> list[ExpectationResult]:
        """Validate ``df`` (``rows`` long, if the caller knows) against the table's suite.

        Two passes: the first asks GX for pass/fail only, which for Spark is one aggregate per
        expectation; only when something fails does the second collect the offending rows'
        positions (GX's COMPLETE format, a filtered scan per expectation). A healthy batch
        of half a million member rows thus costs a fraction of the full report.
        """
        definition = self._definitions[table_name]
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
            if isinstance(i, dict) and i.get("source_offset") is not None
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
        import pyarrow as pa  # type: ignore[import-untyped]

        names = table.column_names
        rows = pa.Table.from_pylist([dict(zip(names, r, strict=True)) for r in results])
        path = sinks.local_table(config, table)
        deltawrite.append_once(path, table, rows, sinks.APP_ID, batch_id)
        return
    frame = spark.createDataFrame(results, table.ddl)
    sinks.append_once(frame, table, config, sinks.APP_ID, batch_id)


def validate_batch(
    spark: SparkSession,
    config: Config,
    validator: BatchValidator,
    batch_id: int,
    snapshots: DataFrame,
    members: DataFrame,
    source: DataFrame,
    detected_at: dt.datetime,
    counts: dict[str, int],
) -> DataFrame | None:
    """Run the GX suites on a batch's rows; failures become validation rows and quarantine rows
    (returned, not yet written: they join the batch's own quarantine rows).

    An offending row is quarantined with its record's raw bytes, taken from the batch's
    (persisted) ``source`` rows by position: the Python stage's output does not carry the
    values of the records it decoded, which would double what crosses from Python.
    """
    from pyspark.sql import functions as F

    assigned = F.flatten(F.transform("assignment", lambda tp: tp["partitions"]))
    views = {
        "group_snapshots": snapshots,
        "member_assignments": members.withColumn(
            "min_assigned_partition", F.array_min(assigned)
        ).withColumn(
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
        ),
    }
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
