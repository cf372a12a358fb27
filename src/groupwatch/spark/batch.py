"""One micro-batch as the query's steps take it (:mod:`groupwatch.spark.query`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from groupwatch.spark.source import BatchStats, SplitBatch


@dataclass(frozen=True)
class Batch:
    """A micro-batch: its id, when it began, its rows (keys taken apart, persisted) and what
    they hold, and what the steps before learnt of it (each step gets the value, and the
    batch function adds what a step found with ``dataclasses.replace``)."""

    batch_id: int
    #: When the batch began: the time its findings are detected at.
    detected_at: dt.datetime
    #: The commits are known up to then: Spark planned the batch after the last one ended.
    read_to_ms: int
    split: SplitBatch
    stats: BatchStats
    #: The batch read everything available (:class:`groupwatch.spark.source.CaughtUp`).
    quiescent: bool = False
    #: Offset commits whose keys the JVM could not take apart, for Python to quarantine.
    malformed: Column | None = None

    @property
    def rows(self) -> DataFrame:
        """The rows of the groups the job watches."""
        return self.split.mine

    @property
    def clock_ms(self) -> int | None:
        """The stream's own clock: the newest record time of the batch."""
        return max(self.stats.clocks.values(), default=None)
