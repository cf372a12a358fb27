"""Runs the job's streaming queries until they stop (or, with ``once``, until caught up)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groupwatch.broker import BrokerError
from groupwatch.config import Config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("groupwatch.job")


def run_job(cfg: Config, *, once: bool) -> int:
    """Start the job's queries on a new session; returns the process exit code."""
    from groupwatch.spark.pipelines import RAW_TABLE, build_raw_copy
    from groupwatch.spark.session import SparkSetupError, build_session

    try:
        spark = build_session(cfg)
        writer = build_raw_copy(spark, cfg, once=once)
    except (BrokerError, SparkSetupError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    log.info(
        "reading %s from %s into %s (%s)",
        cfg.source.topic,
        cfg.source.bootstrap_servers,
        cfg.table_path(RAW_TABLE),
        "until caught up" if once else f"every {cfg.job.trigger_interval}",
    )
    query = writer.start()
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        log.info("stopping")
        query.stop()
    total = sum(p["numInputRows"] for p in query.recentProgress)
    log.info("processed %d records in this run", total)
    if once:
        _print_summary(spark, cfg.table_path(RAW_TABLE))
    return 0


def _print_summary(spark: SparkSession, table: str) -> None:
    """What the table holds now, by record type and group (types 0/1 offset commit, 2 metadata)."""
    from pyspark.sql import functions as F

    try:
        df = spark.read.format("delta").load(table)
    except Exception:  # noqa: BLE001 - an empty source leaves no table; say so plainly
        print(f"{table}: no records yet")
        return
    kinds = (
        df.select(F.conv(F.hex(F.substring("key", 1, 2)), 16, 10).cast("int").alias("type"))
        .groupBy("type")
        .count()
        .orderBy("type")
        .collect()
    )
    names = {0: "offset commit (v0)", 1: "offset commit", 2: "group metadata"}
    print(f"{table}:")
    for row in kinds:
        print(f"  {names.get(row['type'], f'record type {row.type}'):<22} {row['count']:>8}")
