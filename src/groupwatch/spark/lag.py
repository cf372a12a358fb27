"""The lag poll's names where they were before the poll was split into the ``lag_*`` modules
beside this one (:mod:`groupwatch.spark.lag_poller` describes the parts), for the benchmarks
in bench/ alone: nothing in src/ or tests/ imports this module.

A shim rather than new imports in bench/ for now, because bench/ is being changed in the same
tree at the same time; its imports move to the ``lag_*`` modules in a commit of their own, which
deletes this module.  ``_read`` and ``_ms`` are the names the restart benchmark's baseline
calls.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from groupwatch import tables
from groupwatch.detect.lag.poll import TP
from groupwatch.spark.lag_answer import by_topic, committed_partitions
from groupwatch.spark.lag_ask import OffsetAsker
from groupwatch.spark.lag_owners import OwnerReader
from groupwatch.spark.lag_read import read_commit_table, read_commits, read_history
from groupwatch.spark.lag_rows import _arrow, partition_lag_table, timed, topic_rows
from groupwatch.spark.lag_store import read_columns as _read

__all__ = [
    "TP",
    "OffsetAsker",
    "OwnerReader",
    "_arrow",
    "_ms",
    "_read",
    "by_topic",
    "committed_partitions",
    "partition_lag_table",
    "read_commit_table",
    "read_commits",
    "read_history",
    "tables",
    "timed",
    "topic_rows",
]


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    return int(value)
