"""The streaming query: Kafka source -> (JVM) split -> (Python) decode + analysis -> Delta.

Every micro-batch runs :meth:`GroupwatchQuery.process_batch` through ``foreachBatch``:

1. key bytes are taken apart in the JVM (:mod:`~groupwatch.spark.source`): offset commits,
   most of the topic, never reach Python; they are aggregated per (group, topic) into
   ``group_offsets`` (:mod:`~groupwatch.spark.offsets`);
2. every other record goes, grouped by consumer group and in offset order, to the pure
   :func:`groupwatch.processing.process_group` (:mod:`~groupwatch.spark.python_stage`) together
   with the group's state from the previous batch (kept in the ``group_state`` Delta table, one
   version per batch: :mod:`~groupwatch.spark.state_store`);
3. the rows that come back are validated (:mod:`~groupwatch.spark.validation`) and written to
   their tables, each write once per batch id (:mod:`~groupwatch.spark.writes`); the batch is
   logged and counted (:mod:`~groupwatch.spark.batch_report`);
4. the tables whose turn it is get their upkeep (:mod:`~groupwatch.spark.upkeep`): at once on
   the driver's file system, handed to the upkeep thread beside the batches on an object store.

This module only puts those steps in order.  State lives in Delta rather than in Spark's state
store so that a replayed batch reads exactly the state the first attempt read (versions older
than the batch), dashboards can see it, and no RocksDB provider is needed.  ``docs/job.md``
explains the choice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, Self, TypeVar

from groupwatch import tables
from groupwatch.config import Config
from groupwatch.detect import DetectorConfig
from groupwatch.protocol.specs import GROUP_METADATA_TYPE
from groupwatch.rows.findings import finding_row
from groupwatch.spark import (
    batch_report,
    commit_aggregates,
    commits_columns,
    committed,
    driver_stage,
    driver_tally,
    offsets,
    python_stage,
    share_ends,
    sinks,
    source,
    state_store,
    upkeep,
    writes,
)
from groupwatch.spark.batch import Batch
from groupwatch.spark.batchlog import BatchLog
from groupwatch.spark.group_views import GroupViews
from groupwatch.spark.lag_judge import Judged
from groupwatch.spark.lag_poller import LagPoller
from groupwatch.spark.lag_rows import alerting_rows
from groupwatch.spark.lag_thread import LagThread
from groupwatch.spark.pipelines import read_source
from groupwatch.spark.topic_names import TopicNames

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter
    from pyspark.sql.types import StructType

    from groupwatch.detect.model import BrokerView
    from groupwatch.notify import Notifier
    from groupwatch.spark.metrics import JobMetrics
    from groupwatch.spark.validation import BatchValidator

log = logging.getLogger("groupwatch.job")

QUERY_NAME = "groupwatch"

#: Told each step of a batch and its wall time in seconds (``GroupwatchQuery(step_clock=...)``:
#: the benchmarks' figures per step).  Steps run in order, except ``OUTPUTS``, which holds
#: ``PYTHON`` (or ``DRIVER_PYTHON``), ``VALIDATION`` and the table writes; ``BATCH`` is a
#: whole batch.
StepClock = Callable[[str, float], None]

BATCH = "batch"
CAUGHT_UP = "caught-up check"
#: A large batch's two commit aggregates, from one pass over its commits (the MERGEs after).
COMMIT_PASS = "offset-commit aggregates (one pass)"
OFFSETS = "offset-commit aggregation + MERGE"
COMMITTED = "committed offsets per partition + MERGE"
DUE = "due groups look-up"
OUTPUTS = "outputs"
PYTHON = "python (cogroup applyInArrow) + tally"
DRIVER_PYTHON = "python on the driver"
VALIDATION = "great expectations"
STATE = "state maintenance"
LAG = "lag poll"
UPKEEP = "table upkeep"
SHARE_ENDS = "share partitions' end offsets"

P = ParamSpec("P")
R = TypeVar("R")


class GroupwatchQuery:
    """The job's query and its batch function; one instance per running query."""

    def __init__(
        self,
        spark: SparkSession,
        config: Config,
        detector: DetectorConfig,
        *,
        validator: BatchValidator | None = None,
        metrics: JobMetrics | None = None,
        validate_every: int = 1,
        notifier: Notifier | None = None,
        step_clock: StepClock | None = None,
    ) -> None:
        self.spark = spark
        self.config = config
        #: The findings engine's configuration (the brokers' topic names added per batch).
        self.detector = detector
        self.validator = validator
        self.metrics = metrics
        self.validate_every = max(1, validate_every)
        self.notifier = notifier
        self.step_clock = step_clock
        self._last_findings: dict[str, int] = {}
        #: Completed by the query's progress (lag), see ``spark.metrics.ProgressListener``.
        self.batch_log = BatchLog(log)
        self._last_quarantine: dict[str, int] = {}
        self._caught_up_check = source.CaughtUp(config.source.max_offsets_per_trigger)
        #: topic id -> name from the brokers, refreshed by the driver (``topic_names``).
        self.topic_names = TopicNames.of(spark, config)
        #: The brokers' view of rebalancing groups (``rebalance_stuck``), asked now and then.
        self.group_views = GroupViews.of(spark, config)
        #: Group state reads, from the driver's cache when it mirrors the table.
        self.state = state_store.StateStore(spark, config)
        #: Where the batches' newest commits go: ``committed_offsets`` at once, or through
        #: ``committed_changes``, folded in before each lag poll (``_deferring``).
        self.commits = committed.CommitFolder(config)
        #: Consumer lag: end offsets polled every ``lag.poll_seconds`` (docs/lag.md), the
        #: committed offsets folded in first.
        self.lag = LagPoller(spark, config, metrics, before=self.commits.fold)
        self._batch_ended_ms = int(time.time() * 1000)
        #: Held by a batch for its whole run and by a lag poll's writes (``lag_thread``): the
        #: lag and findings tables have one writer at a time.
        self.lock = threading.Lock()
        #: The continuous run's lag poll beside the batches; without it a batch that read
        #: everything available polls at its end.
        self._lag_thread: LagThread[Judged] | None = None
        #: Whether ``ensure_tables`` ran (the batches and the lag poll both need it first).
        self._tables_ensured = False
        #: Upkeep's turns beside the batches, for tables on an object store (started with the
        #: first turn there; ``close`` stops it).
        self._upkeep_thread: upkeep.UpkeepThread | None = None

    @classmethod
    def from_config(
        cls,
        spark: SparkSession,
        config: Config,
        *,
        metrics: JobMetrics | None = None,
        notifier: Notifier | None = None,
        step_clock: StepClock | None = None,
    ) -> Self:
        """The query as ``config`` sets it up: the findings engine as ``[detect]`` configures it,
        Great Expectations every ``validation.every_n_batches`` batches (0: off)."""
        every = config.validation.every_n_batches
        validator = None
        if every > 0:
            from groupwatch.spark.validation import BatchValidator

            validator = BatchValidator(Path(config.validation.suites))
        return cls(
            spark,
            config,
            config.detect.detector(),
            validator=validator,
            metrics=metrics,
            validate_every=max(1, every),
            notifier=notifier,
            step_clock=step_clock,
        )

    @functools.cached_property
    def _output_schemas(self) -> tuple[StructType, pa.Schema]:
        """The Python stage's output schema, for Spark and as Arrow (parsed once per query)."""
        return python_stage.output_schemas(self.spark)

    # -- the query -----------------------------------------------------------------------------
    def ensure_tables(self) -> None:
        """Every table made or brought up to date, once per query: before the lag poll's
        first write as well as the batches' (a poll that made a table itself, with
        delta-rs, would race Spark's creating it: DELTA_PROTOCOL_CHANGED)."""
        with self.lock:
            if not self._tables_ensured:
                sinks.ensure_tables(self.spark, self.config)
                self._tables_ensured = True
                self._share_gauges()

    def _share_gauges(self) -> None:
        """The share gauges set from ``share_partition_state`` as the last run left it: a
        restarted job shows each share group's lag at once, not after its next state record
        (a share group at rest writes none). One read at start, a row per share partition."""
        if self.metrics is None:
            return
        table = tables.SHARE_PARTITION_STATE
        frame = self.spark.read.format("delta").load(self.config.table_path(table.name))
        wanted = ("group", "topic", "topic_id", "partition", "start_offset")
        counts = ("lag_records", "in_flight_records", "archived_records")
        rows = frame.select(*wanted, *counts).collect()
        self.metrics.share_partitions([r.asDict() for r in rows])
        if rows:
            log.info("share gauges: %d share partition(s) from the last run", len(rows))

    def writer(self, *, once: bool) -> DataStreamWriter:
        self.ensure_tables()
        rows = read_source(self.spark, self.config).select(*source.SOURCE_COLUMNS)
        writer = (
            rows.writeStream.foreachBatch(self.process_batch)
            .option("checkpointLocation", self.config.checkpoint_path(QUERY_NAME))
            .queryName(QUERY_NAME)
        )
        if once:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=self.config.job.trigger_interval)

    def lag_thread(self) -> LagThread[Judged]:
        """The lag poll beside the batches (a continuous query's, started with it; ``stop``
        it before the query stops): it judges while batches run and writes between them."""
        self.ensure_tables()
        self._lag_thread = LagThread(
            self.lock, self.lag.known, self.lag.judge_due, self._write_lag
        ).start()
        return self._lag_thread

    @property
    def _deferring(self) -> bool:
        """Whether a small batch appends its newest commits for the next poll's fold: only
        with a poll beside the batches (a run that stops when caught up, or polls at a
        batch's end, MERGEs each batch's at once)."""
        thread = self._lag_thread
        return thread is not None and thread.running and self.commits.local

    def close(self, timeout: float = 600.0) -> None:
        """After the query stopped: the upkeep thread's table under way finished (at most
        ``timeout`` s), its waiting turns left to the next run's batches."""
        if self._upkeep_thread is not None:
            self._upkeep_thread.stop(timeout)
            self._upkeep_thread = None

    def fold_commits(self) -> None:
        """The committed offsets' pending changes folded in (a run that stops: the table as
        the batches' MERGEs would have left it)."""
        self.commits.fold()

    # -- one micro-batch -----------------------------------------------------------------------
    def process_batch(self, batch: DataFrame, batch_id: int) -> None:
        self._step(BATCH, self._locked_batch, batch, batch_id)

    def _locked_batch(self, batch: DataFrame, batch_id: int) -> None:
        with self.lock, driver_tally.batch() as collected:
            self._process_batch(batch, batch_id, collected)

    def _step(self, name: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``fn`` run as the batch's step ``name``, its time told to the step clock."""
        clock = self.step_clock
        if clock is None:
            return fn(*args, **kwargs)
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock(name, time.perf_counter() - started)

    def _process_batch(
        self, frame: DataFrame, batch_id: int, collected: driver_tally.DriverTally | None = None
    ) -> None:
        started = time.monotonic()
        split = source.split(frame, self.config.source.share_state_topic)
        completed = False
        try:
            batch = Batch(
                batch_id,
                dt.datetime.now(tz=dt.UTC),
                # The batch holds the commits made before Spark planned it, which was after the
                # last batch ended (or the query began): known up to then, not up to now.
                self._batch_ended_ms,
                split,
                source.stats(split),
            )
            if not batch.stats.counts:
                self._step(LAG, self._stream_at, batch.read_to_ms)
                completed = True
                return
            stats = batch.stats
            batch = dataclasses.replace(
                batch,
                quiescent=self._step(
                    CAUGHT_UP, self._caught_up_check, frame, stats.rows, stats.partitions
                ),
            )
            if stats.has_commits and self._small(batch):
                # Aggregated on the driver from the batch's commits, collected once.
                rows = driver_tally.arrow("commits", source.commit_rows(batch.rows).toArrow())
                malformed = self._step(
                    OFFSETS,
                    offsets.merge_aggregated,
                    self.config,
                    commits_columns.aggregated(rows),
                    batch_id,
                )
                batch = dataclasses.replace(batch, malformed=malformed)
                newest = commits_columns.newest(rows)
                if self._deferring:
                    self._step(COMMITTED, self.commits.stage, newest, batch_id)
                else:
                    self._step(COMMITTED, self.commits.merge_newest, newest, batch_id)
            elif stats.has_commits:
                # Both aggregates from one pass over the commits, in the tasks that hold them,
                # kept while the two MERGEs read them.
                with contextlib.ExitStack() as stack:
                    agg = self._step(
                        COMMIT_PASS, stack.enter_context, commit_aggregates.of(batch.rows)
                    )
                    malformed = self._step(
                        OFFSETS, offsets.merge_commits, self.spark, self.config,
                        agg.per_topic, batch_id, agg.topic_rows,
                    )  # fmt: skip
                    batch = dataclasses.replace(batch, malformed=malformed)
                    self._step(
                        COMMITTED, self.commits.merge, self.spark, self.config,
                        agg.per_partition, batch_id, agg.partition_rows,
                    )  # fmt: skip
            written: dict[str, int] = {}
            self._last_findings, self._last_quarantine = {}, {}
            due = self._step(DUE, self.state.due_groups, batch_id, stats.clocks)
            # The brokers' view is of now: only a batch that read everything available has the
            # records of now to compare it with (a backlog's are older).
            views = self.group_views.look() if batch.quiescent else {}
            if stats.has_others or batch.malformed is not None or due or views:
                # Most batches of a quiet cluster hold well-formed offset commits only: no
                # Python, no state version, no empty commits.
                written = self._analyze(batch, sorted(set(due) | set(views)), views)
            # The stream's own clock (newest record time of the batch) decides silence, so a
            # backlog of old records does not expire every group it has not reached yet.
            clock = batch.clock_ms
            if clock is not None:
                self._step(STATE, self._maintain_state, batch_id, clock)
            # A backlog's commits are older than the brokers' answer by an unknown time: lag
            # is judged once a batch read everything available.
            self._step(LAG, self._stream_at, batch.read_to_ms if batch.quiescent else None)
            self._step(UPKEEP, self._upkeep, batch_id, clock)
            completed = True
        finally:
            self._batch_ended_ms = int(time.time() * 1000)
            split.read.unpersist()
            # A batch that failed half-way may have written state the cache has not seen.
            self.state.settle(batch_id, completed=completed)
        batch_report.report(
            self.batch_log,
            self.metrics,
            batch_report.BatchReport(
                batch_id=batch_id,
                counts=stats.counts,
                written=written,
                findings=self._last_findings,
                quarantined=self._last_quarantine,
                seconds=time.monotonic() - started,
                to_driver=collected,
            ),
        )

    # The steps of a batch that are more than a call.
    def _upkeep(self, batch_id: int, clock_ms: int | None) -> None:
        """This batch's upkeep turns: taken here on the driver's file system (milliseconds),
        handed to the upkeep thread on an object store (tens of seconds of Spark jobs)."""
        if not upkeep.on_object_store(self.config):
            upkeep.run(self.spark, self.config, batch_id, clock_ms)
            return
        turns = upkeep.due(self.config, batch_id)
        if not turns:
            return
        if self._upkeep_thread is None:
            self._upkeep_thread = upkeep.UpkeepThread(self.spark, self.config)
        self._upkeep_thread.offer(turns, batch_id, clock_ms)

    def _stream_at(self, read_to_ms: int | None) -> None:
        """The batch tells the poller where the stream is (``read_to_ms``: the commits are
        known up to then; None: a backlog is being read); without the lag thread, a batch
        that read everything polls here, if a poll is due."""
        self.lag.batch_ended(read_to_ms)
        thread = self._lag_thread
        if read_to_ms is not None and (thread is None or not thread.running):
            judged = self.lag.judge_due(read_to_ms)
            if judged is not None:
                self._write_lag(judged)

    def _write_lag(self, judged: Judged) -> None:
        """A judged poll written (``self.lock`` held); the notifier hears of its findings and
        of its alerting partitions (a lag alert whose partition is not among them resolves)."""
        self.lag.write(judged)
        if self.notifier is None:
            return
        now = dt.datetime.now(tz=dt.UTC)
        self.notifier.process(
            [finding_row(f, now) for f in judged.result.opened],
            (),
            alerting_rows(judged.result.rows),
            whole_lag=True,
        )

    def _analyze(
        self, batch: Batch, due: list[str], views: dict[str, BrokerView]
    ) -> dict[str, int]:
        """The Python stage over the batch's groups (those with records and those ``due``),
        then its rows written; rows written per table.  ``views``: the brokers' view of some
        groups (those groups are among ``due``)."""
        if self._on_driver(batch):
            return self._analyze_on_driver(batch, due, views)
        records = source.python_records(batch.rows, batch.malformed)
        groups = records.select("group").distinct()
        if due:
            groups = groups.unionByName(
                self.spark.createDataFrame([(g,) for g in due], "group string")
            ).distinct()
        # The driver's state cache is asked by name, so the batch's groups come to the driver
        # anyway: collected once here, the stage's semi-joins (the first commits', the offset
        # hints') read them as a local list instead of each computing them again from the
        # batch's records (a shuffle and a job each).
        groups = self.spark.createDataFrame(driver_tally.arrow("groups", groups.toArrow()))
        stats = batch.stats
        if stats.has_commits:
            records = records.unionByName(
                source.first_commits(batch.rows, groups, stats.positions_fit).select(
                    *source.RECORD_COLUMNS
                )
            )
            if stats.counts.get(GROUP_METADATA_TYPE):
                # The commits before each generation: none without a generation record.
                records = records.unionByName(source.commits_before(batch.rows))
        state = self.state.prior_state(groups, batch.batch_id)
        out = python_stage.run(
            records,
            state,
            self._detector(),
            self._output_schemas,
            batch.detected_at,
            batch.stats.clocks,
            batch.quiescent,
            views,
        ).persist()
        try:
            return self._step(OUTPUTS, self._write_outputs, batch, out)
        finally:
            out.unpersist()

    def _small(self, batch: Batch) -> bool:
        """Whether the batch is one the driver takes on itself: at most
        ``job.driver_stage_rows`` rows, its tables on a file system the driver sees."""
        rows = batch.stats.rows
        return 0 < rows <= self.config.job.driver_stage_rows and sinks.on_driver(self.config, rows)

    def _on_driver(self, batch: Batch) -> bool:
        """Whether the batch's Python stage runs on the driver
        (:mod:`~groupwatch.spark.driver_stage`): a small batch."""
        return self._small(batch)

    def _analyze_on_driver(
        self, batch: Batch, due: list[str], views: dict[str, BrokerView]
    ) -> dict[str, int]:
        """:meth:`_analyze` with the Python stage run on the driver: the batch's records
        collected in one Spark job, the state from the cache."""
        rows = driver_tally.arrow(
            "records", source.driver_rows(batch.rows, batch.malformed).toArrow()
        )
        records, groups = driver_stage.records_of(rows, due)
        self.state.serve(batch.batch_id)
        state = self.state.prior_arrow(groups, batch.batch_id)
        return self._step(OUTPUTS, self._run_on_driver, batch, records, state, views)

    def _run_on_driver(
        self, batch: Batch, records: pa.Table, state: pa.Table, views: dict[str, BrokerView]
    ) -> dict[str, int]:
        """The Python stage on the driver, then its rows written (as :meth:`_write_outputs`)."""
        schema, arrow_schema = self._output_schemas
        out = self._step(
            DRIVER_PYTHON,
            driver_stage.run,
            records,
            state,
            self._detector(),
            arrow_schema,
            batch.detected_at,
            batch.stats.clocks,
            batch.quiescent,
            views,
        )
        tally = writes.tally_arrow(out)
        written = writes.driver_output(self.spark, self.config, out, schema, batch.batch_id)
        return self._write(batch, tally, written)

    def _detector(self) -> DetectorConfig:
        """The findings engine's configuration with the brokers' topic names of now."""
        names = self.topic_names.current()
        if names:
            return dataclasses.replace(self.detector, topic_names=dict(names))
        return self.detector

    def _write_outputs(self, batch: Batch, out: DataFrame) -> dict[str, int]:
        """Write each table that has rows; every write is skipped if this batch already did it.
        Validation quarantines the bytes of the batch's source rows it rejects."""
        # The first action on the persisted output: the Python stage runs here.
        tally = self._step(PYTHON, writes.tally, out)
        total = sum(tally.counts.values())
        written = writes.output_of(self.spark, self.config, out, batch.batch_id, total)
        return self._write(batch, tally, written)

    def _write(
        self, batch: Batch, tally: writes.Tally, written: writes.BatchOutput
    ) -> dict[str, int]:
        """The output's rows written, validated every N-th batch, the state cache and the
        notifier told."""
        batch_id = batch.batch_id
        counts = dict(tally.counts)
        self._last_quarantine = dict(tally.quarantine)
        if counts.get(tables.FINDINGS.name):
            written.write_findings()
        if self.validator is not None and batch_id % self.validate_every == 0:
            extra = self._step(VALIDATION, self._validate, batch, written, counts)
            if extra is not None:
                extra = extra.persist()
                rejected = extra.count()
                if rejected:
                    written = written.with_quarantine(extra)
                counts["quarantine"] = counts.get("quarantine", 0) + rejected
                self._last_quarantine["validate"] = rejected
        if counts.get(tables.SHARE_PARTITION_STATE.name):
            written = self._step(SHARE_ENDS, self._share_ends, written)
        written.write_tables(counts)
        if self.state.wants(batch_id):
            # Collected only if the cache takes them in (a large batch's state is large).
            states = written.states()
            if states is not None:
                self.state.record(batch_id, states)
        self._last_findings = batch_report.findings_by_severity(tally.findings)
        batch_report.count_findings(self.metrics, tally.findings)
        if self.notifier is not None:
            # Findings and snapshots of one batch go together: a snapshot without findings
            # is what resolves a group's open alerts. Delivery never blocks the batch.
            self.notifier.process(*written.alert_rows(bool(tally.findings)))
        return counts

    def _share_ends(self, written: writes.BatchOutput) -> writes.BatchOutput:
        """The batch's share partitions with the brokers' end offsets and share lag (asked
        now: the rows are few, one per share partition the batch touched); the metrics told."""
        rows = written.share_rows()
        if rows is None:
            return written
        filled = share_ends.fill(self.spark, self.config, rows)
        if self.metrics is not None:
            self.metrics.share_partitions(filled.to_pylist())
        return written.with_share(filled)

    def _validate(
        self, batch: Batch, written: writes.BatchOutput, counts: dict[str, int]
    ) -> DataFrame | None:
        assert self.validator is not None
        return written.validate(self.validator, batch.rows, batch.detected_at, counts)

    def _maintain_state(self, batch_id: int, clock_ms: int) -> None:
        """Every N-th batch: state versions no batch will read again dropped, and the state of
        deleted and silent groups (:func:`state_store.maintain`)."""
        done = state_store.maintain(self.spark, self.config, batch_id, clock_ms)
        if done is not None:
            self.state.forget(done.forgotten, batch_id)
            if self.metrics is not None:
                self.metrics.state_groups.set(done.kept)
