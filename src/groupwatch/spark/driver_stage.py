"""The Python stage of a small batch, run on the driver.

A live batch holds a few thousand records, and the driver already holds what the stage needs
besides them: the groups' state (the state cache) and their offset hints (read with
delta-rs). In Spark the stage is a plan of seven exchanges, run one query stage at a time, a
cogroup through the Python workers, then a job to count its output and another to collect
it: about three seconds a batch at 1,000 commits/s on two cores, most of it fixed costs.
On the driver it is one Spark job (:func:`groupwatch.spark.source.driver_rows` collected)
and the same per-group function the workers run
(:func:`groupwatch.spark.python_stage.process_arrow`), group by group.

Each group gets its records in offset order, as in the workers, with *every* offset commit
of the group in the batch rather than the first of each partition, the last before each
generation and the newest (:func:`groupwatch.spark.source.first_commits`,
:func:`~groupwatch.spark.source.commits_before`): those are what the other commits add
nothing to, chosen in Spark so that a backlog's millions of commits never reach Python; a
small batch's commits are few, and all of them are what :func:`groupwatch.analyze.analyze`
reads.  The engine ends in the same state from either, so a batch saves the same states
wherever it runs (``tests/scenarios/test_reduced_commits.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from groupwatch.detect import DetectorConfig
from groupwatch.detect.model import BrokerView
from groupwatch.spark import python_stage
from groupwatch.spark.source import RECORD_COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]


def records_of(rows: pa.Table, due: Sequence[str]) -> tuple[pa.Table, list[str]]:
    """The batch's records for the stage, in ``RECORD_COLUMNS``, and its groups (those of its
    records and those ``due``), from :func:`~groupwatch.spark.source.driver_rows`' rows: every
    record marked ``python``, and the offset commits of those groups."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    python = rows.filter(rows.column("python"))
    groups = sorted(set(python.column("group").to_pylist()) | set(due))
    commits = rows.filter(
        pc.and_(
            pc.invert(rows.column("python")),
            pc.is_in(rows.column("group"), pa.array(groups, pa.string())),
        )
    )
    records = pa.concat_tables([python, commits]).select(list(RECORD_COLUMNS))
    return records, groups


def run(
    records: pa.Table,
    state: pa.Table,
    detector: DetectorConfig,
    schema: pa.Schema,
    detected_at: dt.datetime,
    clocks: dict[int, int],
    quiescent: bool,
    views: Mapping[str, BrokerView] | None = None,
) -> pa.Table:
    """Every group's records with its prior state through the workers' per-group function,
    here: the output rows of all groups (``schema``: the stage's output schema)."""
    import pyarrow as pa

    mine = _slices(records)
    known = _slices(state)
    looked = dict(views or {})
    out = [
        python_stage.process_arrow(
            mine.get(group, records.schema.empty_table()),
            known.get(group, state.schema.empty_table()),
            detector,
            detected_at,
            schema,
            clocks,
            quiescent,
            looked,
        )
        for group in sorted(mine.keys() | known.keys())
    ]
    return pa.concat_tables([schema.empty_table(), *out])


def _slices(table: pa.Table) -> dict[str, pa.Table]:
    """The rows of each group (``group`` column), as the cogroup hands them over."""
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return {}
    table = table.take(pc.sort_indices(table.column("group")))
    names = table.column("group").to_pylist()
    slices: dict[str, pa.Table] = {}
    start = 0
    for i in range(1, len(names) + 1):
        if i == len(names) or names[i] != names[start]:
            slices[names[start]] = table.slice(start, i - start)
            start = i
    return slices
