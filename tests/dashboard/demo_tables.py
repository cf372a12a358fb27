"""The demo's replayed incidents (``groupwatch_dev.demo``: KAFKA-7026 and KAFKA-13419, records
of 2023) as the job's tables, written with delta-rs: each group's records through the job's own
per-group step (:func:`groupwatch.processing.process_group`), detected now, then the job's
upkeep turns over every table, as the demo's job runs them in its first batches."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]
from deltalake import write_deltalake

from groupwatch import tables, upkeep
from groupwatch.config import load
from groupwatch.delta import read as deltaread
from groupwatch.processing import SourceRecord, decode, process_group
from groupwatch_dev.demo.main import INCIDENTS
from tests.scenario_groups import scenario_records

#: The tables the per-group step writes.
WRITTEN = (
    tables.GROUP_SNAPSHOTS,
    tables.MEMBER_ASSIGNMENTS,
    tables.PARTITION_OWNERSHIP,
    tables.FINDINGS,
    tables.QUARANTINE,
)


def build(root: Path, detected_at: dt.datetime | None = None) -> set[str]:
    """The tables under ``root``; the groups they hold."""
    now = detected_at or dt.datetime.now(tz=dt.UTC)
    detector = load(None, env={}).detect.detector()
    by_group: dict[str, list[SourceRecord]] = defaultdict(list)
    for name in INCIDENTS:
        records, _ = scenario_records(name)
        for record in records:
            group = decode(record).group
            if group is not None:
                by_group[group].append(record)
    rows: dict[str, list[dict[str, object]]] = defaultdict(list)
    for group, records in by_group.items():
        result = process_group(group, None, records, detector=detector, detected_at=now)
        for table in WRITTEN:
            for row in result.rows.get(table.name, ()):
                rows[table.name].append({c: getattr(row, c) for c in table.column_names})
    settings = load(None, env={}).upkeep
    for table in WRITTEN:
        data = pa.Table.from_pylist(rows[table.name], schema=deltaread.schema(table.name))
        write_deltalake(
            str(root / table.name),
            data,
            partition_by=list(table.partition_by) or None,
            configuration=upkeep.properties(settings),
        )
    clock_ms = max(r.timestamp_ms for rs in by_group.values() for r in rs)
    paths = {t.name: root / t.name for t in WRITTEN}
    upkeep.expire_history(
        paths,
        upkeep.history_cutoff(settings, clock_ms),
        upkeep.written_before(settings.history_retention_days),
    )
    for table in WRITTEN:
        upkeep.tidy(
            paths[table.name],
            table,
            settings,
            None,
            closed_before=upkeep.closed_cutoff(settings, clock_ms),
            detected_before=upkeep.findings_cutoff(settings, clock_ms),
            today=upkeep.clock_day(clock_ms),
            closed_written_before=upkeep.written_before(settings.ownership_retention_days),
        )
    return set(by_group)
