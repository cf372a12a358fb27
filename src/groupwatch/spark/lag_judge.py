"""A lag poll judged: :class:`LagJudge` reads the commits and owners, judges them with the
keeper against the brokers' answer, and writes the lag tables and findings; :class:`Judged`
is a judgement not yet written.  Nothing here asks the brokers or touches the JVM, so that it
can run in a process of its own (:mod:`groupwatch.spark.lag_process`): the driver's poller
(:mod:`groupwatch.spark.lag_poller`) asks, and hands the answer over as values
(:mod:`groupwatch.spark.lag_answer`).
"""

from __future__ import annotations

import dataclasses
import time

from groupwatch.config import Config
from groupwatch.detect.lag.fleet import COMMIT_SCHEMA, FleetKeeper, floors_of
from groupwatch.detect.lag.model import EndOffset
from groupwatch.detect.lag.poll import TP, PollResult
from groupwatch.spark import lag_store
from groupwatch.spark.lag_answer import Answer, RecordTimes, committed_partitions
from groupwatch.spark.lag_owners import OwnerReader
from groupwatch.spark.lag_read import read_commit_table, read_history
from groupwatch.spark.lag_rows import write_tables


@dataclasses.dataclass(frozen=True, slots=True)
class Judged:
    """A poll judged, not yet written: its verdicts and the brokers' answers.  Judged in a
    process of its own, ``result.rows`` holds only what the driver needs of them (the alerting
    rows, or every row with ``lag.partition_metrics``) and ``ends`` nothing: the rows and
    answers stay there, to be written there."""

    result: PollResult
    #: The brokers' answers to append to ``end_offsets`` (:meth:`LagKeeper.observe`).
    ends: list[EndOffset]
    #: The brokers' newest answer so far (epoch ms), the age of lag's figures.
    last_ok_ms: int | None = None


class LagJudge:
    """The part of a poll that needs no Spark: the commits and owners read from the tables,
    the keeper's judgement, the lag tables and findings written with delta-rs.  Lives in the
    driver, or in a process of its own (:mod:`groupwatch.spark.lag_process`), where the
    keeper's millions of values and the seconds of a judgement at fleet scale take nothing
    from the batches' interpreter.  ``writes``: how its commits are made (None: delta-rs; on
    an object store the driver's Spark, :class:`~groupwatch.spark.lag_store.SparkWrites`)."""

    def __init__(self, config: Config, writes: lag_store.PollWrites | None = None) -> None:
        self.config = config
        self.writes = writes
        self.keeper = FleetKeeper(config.lag.rules(), row_ms=config.lag.history_row_seconds * 1000)
        self.owners = OwnerReader(config)
        self._loaded = False
        #: The commits and owners of the poll under way are prepared (``wanted``).
        self._prepared = False
        self._last: Judged | None = None

    def wanted(self) -> dict[str, list[int]]:
        """The partitions to ask the brokers for: those some group commits to.  The commits
        and the owners are read now, and joined (:meth:`FleetKeeper.prepare`), before the
        brokers are asked: what follows their answer ages it, and at a fleet's scale the
        owners' side is the larger part of a judgement."""
        commits = read_commit_table(self.config)
        if not self._loaded:
            # Only the first reading needs each partition's lowest commit (how far back the
            # history it reads goes); the later ones need only which partitions there are.
            floors = floors_of(commits)
            history_ms = self.config.lag.history_hours * 3_600_000
            rows, newest = read_history(self.config, int(time.time() * 1000) - history_ms, floors)
            self.keeper.restore(rows)
            self.keeper.restore(newest, written=False)
            self._loaded = True
        self.keeper.prepare(commits, self.owners.read_table())
        self._prepared = True
        return committed_partitions(commits)

    def unbracketed(self, answer: Answer) -> dict[TP, list[int]]:
        """The committed offsets whose oldest waiting record's time the brokers must be asked
        for (:meth:`FleetKeeper.unbracketed`): a first poll's history brackets none."""
        return self.keeper.unbracketed(answer.offsets())

    def judge(
        self,
        answer: Answer | None,
        stale: bool,
        known_ms: int | None,
        times: RecordTimes | None = None,
    ) -> Judged:
        """The commits read by :meth:`wanted` judged with the brokers' ``answer`` (None with
        ``stale``: they did not answer) and the records they were asked for at the committed
        offsets no history brackets (``times``, :meth:`OffsetAsker.record_times`)."""
        history_ms = self.config.lag.history_hours * 3_600_000
        now_ms = int(time.time() * 1000)
        offsets = [] if answer is None else answer.offsets()
        ends = self.keeper.observe(offsets)
        if times is not None:
            self.keeper.told(times.asked, times.found, offsets)
        self.keeper.forget_older(now_ms - history_ms)
        if not self._prepared:  # judged without a reading: the tables as they are now
            self.keeper.prepare(COMMIT_SCHEMA.empty_table(), self.owners.read_table())
        self._prepared = False
        result = self.keeper.judge_prepared(stale=stale, known_ms=known_ms)
        self._last = Judged(result, ends, self.keeper.last_ok_ms)
        return self._last

    def write(self) -> None:
        """The last judgement's rows, answers and findings written (once)."""
        judged, self._last = self._last, None
        if judged is not None:
            write_tables(self.config, judged.result, judged.ends, self.writes)

    def close(self) -> None:
        """Nothing to end in the driver."""
