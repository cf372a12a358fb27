"""Lag in the job: the driver asks the brokers for the log start and end offsets of every
partition some group commits to, every ``lag.poll_seconds``, and writes ``end_offsets``
(history), ``lag_history`` (per group and topic) and ``partition_lag`` (the current view,
rewritten), plus the lag findings, from the driver with delta-rs.  A continuous run polls from
a driver thread beside the batches (:mod:`groupwatch.spark.lag_thread`: only the writes wait
for the batch under way); a run that stops when caught up polls at the end of its batches.

The committed offsets come from ``committed_offsets`` (the JVM keeps them:
:mod:`groupwatch.spark.committed`), the owners from ``partition_ownership``'s open intervals
and ``member_assignments``' hosts. A broker that does not answer is one warning per
``source.wait_log_seconds``; lag then stays at its last value, marked stale.

This module is the driver's poller (:class:`LagPoller`): when a poll is due, and what it
does in turn.  Each part is a module of its own, imported from here down: the question to the
brokers (:mod:`~groupwatch.spark.lag_ask`, the answer as values in
:mod:`~groupwatch.spark.lag_answer`), the tables read (:mod:`~groupwatch.spark.lag_read`,
:mod:`~groupwatch.spark.lag_owners`), the judgement (:mod:`~groupwatch.spark.lag_judge`, in the
driver or in a process of its own, :mod:`~groupwatch.spark.lag_process`), the rows and commits
(:mod:`~groupwatch.spark.lag_rows`, :mod:`~groupwatch.spark.lag_store`) and the gauges
(:mod:`~groupwatch.spark.lag_metrics`).
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from groupwatch.config import Config
from groupwatch.detect.lag.poll import PollResult
from groupwatch.spark import lag_store
from groupwatch.spark.lag_answer import RecordTimes
from groupwatch.spark.lag_ask import OffsetAsker
from groupwatch.spark.lag_judge import Judged, LagJudge
from groupwatch.spark.lag_metrics import set_metrics
from groupwatch.spark.lag_process import LagProcess
from groupwatch.spark.preflight import java_cause

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from groupwatch.spark.metrics import JobMetrics

log = logging.getLogger("groupwatch.job")

#: The interpreter's switch interval while a poll judges (Python's default is 5 ms).  A poll
#: holds the driver's interpreter for seconds; a batch beside it waits for the interpreter
#: after each call into the JVM, several times per call, up to the switch interval each time,
#: and a batch makes hundreds of such calls.  A trivial JVM call took 0.4 ms alone, 28 ms
#: beside a busy thread at 5 ms, 1.7 ms at 0.2 ms, the busy thread keeping its pace
#: (``bench/bench_switch_interval.py``; bench/HISTORY.md, "A poll beside the batches: the
#: interpreter's switch interval").
POLL_SWITCH_INTERVAL = 0.0002


class LagPoller:
    """Asks the brokers when a poll is due and writes what it judged (driver side)."""

    def __init__(
        self,
        spark: SparkSession,
        config: Config,
        metrics: JobMetrics | None = None,
        before: Callable[[], object] | None = None,
    ) -> None:
        self.spark = spark
        self.config = config
        self.metrics = metrics
        #: Run when a poll is due, before it reads the tables (the committed offsets' fold).
        self.before = before
        self.asker = OffsetAsker(spark, config)
        self.judging: LagJudge | LagProcess
        if not lag_store.is_local(config):
            # On an object store a poll commits through Spark (one library per table there),
            # which only the driver has: it judges there too.
            self.judging = LagJudge(config, lag_store.SparkWrites(spark, config))
        elif config.lag.judge_process:
            self.judging = LagProcess(config)
        else:
            self.judging = LagJudge(config)
        self.every = config.lag.poll_seconds
        self._last_ok_ms: int | None = None
        self._polled_at: float | None = None
        #: How long the last poll took: the next is due no sooner than twice that after it.
        self._took = 0.0
        self._stretched = False
        self._warned_at: float | None = None
        self._series: set[tuple[str, ...]] = set()
        #: One poll judges at a time (the keeper is its memory).
        self._judging = threading.Lock()
        #: What the batches told of the stream (``batch_ended``).
        self._batches_ended = False
        self._read_to_ms: int | None = None

    def interval(self) -> float:
        """Seconds between the starts of two polls: ``lag.poll_seconds``.  Judged in the
        driver, stretched to twice the last poll's time when that is longer, so that polls take
        at most half of the driver's interpreter from the batches (1.2 M committed partitions:
        3-6 s a poll on two cores, bench/HISTORY.md, "A poll judged as columns").  Judged in a
        process of its own, a
        poll holds the driver's interpreter only to ask the brokers and to hand the answer
        over, so only a poll longer than ``lag.poll_seconds`` stretches it (to the poll's
        own time: one poll at a time): doubled, a busy fleet's lag was twice as old."""
        if self.config.lag.judge_process:
            return max(float(self.every), self._took)
        return max(float(self.every), 2.0 * self._took)

    def due(self) -> bool:
        now = time.monotonic()
        return self._polled_at is None or now - self._polled_at >= self.interval()

    # -- the stream, as the batches tell it ------------------------------------------------
    def batch_ended(self, read_to_ms: int | None) -> None:
        """A batch ended: ``read_to_ms`` when it read everything available (its commits are
        known up to then), None when it did not (a backlog: no poll until it is read)."""
        self._read_to_ms = read_to_ms
        self._batches_ended = True

    def known(self, batch_running: bool, waited: float) -> tuple[bool, int | None]:
        """Whether a poll outside the batches may judge now, and the time its commits are
        known up to (None: up to now).  A backlog's commits are older than the brokers' answer
        by an unknown time: no poll while the last batch did not read everything.  Between
        batches the table holds the commits up to now; while one runs, up to what the last
        read.  Before any batch ended, a batch under way is the first of a start (it may read
        a backlog): the poll waits for it; with none, the source had nothing new, and after
        ``lag.poll_seconds`` (``waited``) the poll judges the table as it is."""
        if not self._batches_ended:
            return (not batch_running and waited >= self.every), None
        if self._read_to_ms is None:
            return False, None
        return True, (self._read_to_ms if batch_running else None)

    # -- a poll ----------------------------------------------------------------------------
    def judge_due(self, known_ms: int | None = None) -> Judged | None:
        """The reading, asking and judging of a poll, if one is due; no table is written
        (:meth:`write` does), so that it can run beside a batch."""
        with self._judging:
            if not self.due():
                self._age()
                return None
            self._polled_at = time.monotonic()
            # A poll makes millions of short-lived values and no reference cycles: the cyclic
            # collector, run over the keeper's millions of long-lived ones each time, took a
            # third of a poll of the cluster model (bench/bench_lag_judge.py --no-gc).
            collecting = gc.isenabled()
            gc.disable()
            switching = sys.getswitchinterval()
            if not self.config.lag.judge_process:
                sys.setswitchinterval(min(switching, POLL_SWITCH_INTERVAL))
            try:
                if self.before is not None:
                    self.before()
                judged = self._judge(known_ms)
                self._last_ok_ms = judged.last_ok_ms
                return judged
            finally:
                sys.setswitchinterval(switching)
                if collecting:
                    gc.enable()
                self._took = time.monotonic() - self._polled_at

    def write(self, judged: Judged) -> None:
        """A judged poll's rows and findings written, its metrics set (the lag tables' and the
        findings' writers kept apart by the caller)."""
        began = time.monotonic()
        self._write(judged)
        for f in judged.result.opened:
            log.warning("lag: %s %s: %s", f.kind, f.group, f.detail)
            if self.metrics is not None:
                self.metrics.findings.labels(f.kind, f.severity).inc()
        for finding_id, kind in judged.result.resolved:
            log.info("lag: %s %s resolved (the state ended)", kind, finding_id)
        self._metrics(judged.result)
        self._age()
        self._took += time.monotonic() - began
        self._note_interval()

    def _note_interval(self) -> None:
        stretched = self.interval() > self.every
        if stretched != self._stretched:
            self._stretched = stretched
            if stretched:
                log.warning(
                    "lag: a poll took %.1f s; polls are %.0f s apart until one takes less "
                    "than %slag.poll_seconds (%d s)",
                    self._took,
                    self.interval(),
                    "" if self.config.lag.judge_process else "half of ",
                    self.every,
                )
            else:
                log.info("lag: polls are lag.poll_seconds (%d s) apart again", self.every)

    def _judge(self, known_ms: int | None) -> Judged:
        wanted = self.judging.wanted()
        answer, stale = None, False
        times: RecordTimes | None = None
        try:
            answer = self.asker.ask(wanted)
        except Exception as exc:  # noqa: BLE001 - Py4J raises one type for every Java failure
            stale = True
            self._warn(exc)
        if answer is not None:
            # Where no history brackets a committed offset (a first poll, a group far behind
            # every observation), the record there tells when it was written: the rule of
            # ``analyze`` too (docs/lag.md), so both judge a stop alike.
            positions = self.judging.unbracketed(answer)
            if positions:
                try:
                    times = self.asker.record_times(positions)
                except Exception as exc:  # noqa: BLE001
                    log.warning(
                        "lag: could not read the records at %d committed offset(s) (%s); "
                        "their partitions are judged from the polls' history alone",
                        sum(len(v) for v in positions.values()),
                        exc,
                    )
        return self.judging.judge(answer, stale, known_ms, times)

    def _warn(self, exc: Exception) -> None:
        now = time.monotonic()
        every = max(1, self.config.source.wait_log_seconds)
        if self._warned_at is None or now - self._warned_at >= every:
            self._warned_at = now
            log.warning(
                "lag: the brokers did not answer listOffsets (%s); lag stays at its last "
                "value, marked stale",
                java_cause(exc),
            )

    def _write(self, judged: Judged) -> None:
        self.judging.write()

    def _metrics(self, result: PollResult) -> None:
        if self.metrics is not None:
            self._series = set_metrics(
                self.metrics, result, self.config.lag.partition_metrics, self._series
            )

    def close(self) -> None:
        """The process of its own, if polls are judged in one, ended."""
        self.judging.close()

    def _age(self) -> None:
        if self.metrics is not None and self._last_ok_ms is not None:
            self.metrics.lag_poll_age.set(max(0.0, time.time() - self._last_ok_ms / 1000))
