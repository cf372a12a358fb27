"""What a finished micro-batch tells: its log line (joined with the query's progress by
:class:`groupwatch.spark.batchlog.BatchLog`) and the job's Prometheus counters."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from groupwatch.protocol.specs import GROUP_METADATA_TYPE, OFFSET_COMMIT_TYPES, RECORD_TYPES

if TYPE_CHECKING:
    from groupwatch.spark.batchlog import BatchLog
    from groupwatch.spark.driver_tally import DriverTally
    from groupwatch.spark.metrics import JobMetrics

#: Record types by the name the log and the metrics use (any other type is ``type_<n>``).
RECORD_NAMES: dict[int | None, str] = {
    t: RECORD_TYPES[t].name for t in (*OFFSET_COMMIT_TYPES, GROUP_METADATA_TYPE)
}


@dataclass(frozen=True)
class BatchReport:
    """One batch's figures."""

    batch_id: int
    #: Watched records per record type (None: a key too short to have one).
    counts: dict[int | None, int]
    #: Rows written per table.
    written: dict[str, int]
    #: Findings per severity.
    findings: dict[str, int]
    #: Quarantine rows per stage (decode, validate).
    quarantined: dict[str, int]
    seconds: float
    #: Rows and bytes the batch collected to the driver (None: not counted).
    to_driver: DriverTally | None = None


def records_by_name(counts: dict[int | None, int]) -> dict[str, int]:
    """Record counts per record type name (``type_<n>`` for types without one)."""
    # Types 0 and 1 share a name: their counts add up.
    merged: dict[str, int] = {}
    for k, n in counts.items():
        name = RECORD_NAMES.get(k, f"type_{k}" if k is not None else "unreadable_key")
        merged[name] = merged.get(name, 0) + n
    return merged


def findings_by_severity(findings: dict[tuple[str, str], int]) -> dict[str, int]:
    """Findings per (kind, severity) summed per severity."""
    out: dict[str, int] = {}
    for (_, severity), n in findings.items():
        out[severity] = out.get(severity, 0) + n
    return out


def count_findings(metrics: JobMetrics | None, findings: dict[tuple[str, str], int]) -> None:
    """Add a batch's findings to the job's counters."""
    if metrics is None:
        return
    for (kind, severity), n in findings.items():
        metrics.findings.labels(kind, severity).inc(n)


def report(batch_log: BatchLog, metrics: JobMetrics | None, batch: BatchReport) -> None:
    """Hand the batch's line to the batch log, and count its records and quarantine rows."""
    merged = records_by_name(batch.counts)
    batch_log.batch_done(
        batch.batch_id,
        f"{sum(merged.values())} records ("
        + ", ".join(f"{k} {v}" for k, v in sorted(merged.items()))
        + "); findings "
        + (", ".join(f"{k} {v}" for k, v in sorted(batch.findings.items())) or "none")
        + f"; quarantined {batch.written.get('quarantine', 0)}"
        + ("" if batch.to_driver is None else f"; {batch.to_driver.line()}")
        + f"; {batch.seconds:.1f}s",
    )
    if metrics is not None:
        for name, n in merged.items():
            metrics.records.labels(name).inc(n)
        for stage, n in batch.quarantined.items():
            metrics.quarantined.labels(stage).inc(n)
        metrics.last_batch_time.set(time.time())
        if batch.to_driver is not None:
            metrics.driver_collected_rows.inc(batch.to_driver.rows)
            metrics.driver_collected_bytes.inc(batch.to_driver.nbytes)
