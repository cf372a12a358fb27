"""Runs the job's streaming query until it stops (or, with ``once``, until caught up)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from groupwatch.bootstrap import BootstrapError
from groupwatch.config import Config
from groupwatch.job.failure import failure_line
from groupwatch.job.source_wait import SourceWait, waiting_for_source
from groupwatch.stopping import stop_requests

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupwatch.notify import NotifierConfig

log = logging.getLogger("groupwatch.job")

#: How often the wait for the query looks whether a stop was asked for.
_POLL_SECONDS = 1
#: How long to wait for Spark to tell the listener that the query ended.
_LISTENER_GRACE_SECONDS = 10


def run_job(
    cfg: Config,
    *,
    once: bool,
    notifier_config: NotifierConfig | None = None,
    verbose: bool = False,
) -> int:
    """Start the job on a new session; returns the process exit code. The files the
    configuration names are checked before (``groupwatch.job.command.referenced_files``)."""
    from pyspark.errors import StreamingQueryException

    from groupwatch.spark.metrics import JobMetrics, ProgressListener
    from groupwatch.spark.preflight import SourceUnreachable, check_source, quiet_kafka_client
    from groupwatch.spark.query import GroupwatchQuery
    from groupwatch.spark.session import SparkSetupError, build_session

    try:
        spark = build_session(cfg)
    except SparkSetupError as exc:
        log.error("%s", exc)
        return 1
    quiet_kafka_client(spark, verbose=verbose)
    try:
        check_source(spark, cfg)
    except SourceUnreachable as exc:
        log.error("%s", exc)
        return 1
    metrics = JobMetrics()
    if cfg.metrics.port:
        metrics.serve(cfg.metrics.host, cfg.metrics.port)
    notifier = None
    if notifier_config is not None:
        from groupwatch.notify import Notifier

        notifier = Notifier(notifier_config)
    job = GroupwatchQuery.from_config(spark, cfg, metrics=metrics, notifier=notifier)
    listener = ProgressListener(metrics, job.batch_log)
    spark.streams.addListener(listener)
    try:
        writer = job.writer(once=once)
    except (BootstrapError, ValueError) as exc:
        log.error("%s", exc)
        return 1
    log.info(
        "reading %s from %s into %s (%s)",
        cfg.source.topic,
        cfg.source.bootstrap_servers,
        cfg.delta.root,
        "until caught up" if once else f"every {cfg.job.trigger_interval}",
    )
    query = writer.start()
    # Lag is judged on the brokers' clock, beside the batches and also while no commit arrives
    # and so no batch runs.
    polling = None if once else job.lag_thread()
    # On SIGTERM or Ctrl-C, stop the query instead of dying mid-write (which a restart would
    # repair, slowly). The wait polls a flag the signal sets: see stop_requests for why the
    # signal must not raise inside the JVM call.
    waiting = SourceWait(cfg.source.bootstrap_servers, cfg.source.wait_log_seconds, log)
    failed = False
    try:
        with stop_requests() as stop:
            while not stop.is_set() and not query.awaitTermination(_POLL_SECONDS):
                waiting.observe(waiting_for_source(query.status))
        if stop.is_set():
            log.info("stopping")
            if polling is not None:
                polling.stop()
            query.stop()
    except StreamingQueryException as exc:
        # A batch failed and Spark ended the query: one line, the cause and what to do.
        log.error("%s", failure_line(_causes(exc), cfg.delta.root, cfg.checkpoint.root))
        failed = True
    finally:
        if polling is not None:
            polling.stop()
            # The batches' commits appended since the last poll: into committed_offsets
            # before the job ends (a crash leaves them for the next run's first fold).
            try:
                job.fold_commits()
            except Exception as exc:  # noqa: BLE001 - the next run folds them
                log.warning("committed offsets: last changes left for the next start: %s", exc)
        job.lag.close()
        job.close()
        # Spark tells its listeners that the query ended from its own thread, after stop()
        # returns; exiting before that call arrives makes the JVM log a stack trace about
        # the Python side that vanished.
        listener.terminated.wait(_LISTENER_GRACE_SECONDS)
        spark.streams.removeListener(listener)
        job.batch_log.flush()
        if notifier is not None:
            notifier.close(timeout=10)
    if failed:
        return 1
    if once:
        print_summary(spark, cfg)
    return 0


def _causes(exc: Exception) -> list[str]:
    """The messages of a query's failure, outermost first: PySpark's, then each Java cause's
    (a batch that failed in Python carries its traceback in a Java ``PythonException``)."""
    out = (str(exc).splitlines() or [type(exc).__name__])[:1]
    # PySpark keeps the Java exception it converted (no public accessor).
    java = getattr(exc, "_origin", None)
    while java is not None:
        out.append(f"{java.getClass().getSimpleName()}: {java.getMessage()}")
        java = java.getCause()
    return out


def print_summary(spark: SparkSession, cfg: Config) -> None:
    """What the job found so far: findings by severity and kind, with groups and partitions."""
    findings = spark.read.format("delta").load(cfg.table_path("findings"))
    snapshots = spark.read.format("delta").load(cfg.table_path("group_snapshots"))
    groups = snapshots.select("group").distinct().count()
    rows = findings.collect()
    print(f"\n{snapshots.count()} group snapshots of {groups} groups; {len(rows)} findings")
    order = {"critical": 0, "error": 1, "warning": 2, "info": 3}
    for row in sorted(rows, key=lambda r: (order.get(r.severity, 9), r.group, r.generation or 0)):
        where = ""
        if row.topic is not None:
            where = f" {row.topic}-{row.partition}"
        elif row.member:
            where = f" member {row.member}"
        print(f"  {row.severity:<8} {row.kind:<34} {row.group} gen {row.generation}{where}")
        print(f"           {row.detail}")
