"""The notifier's typed input from a table's rows as ``groupwatch notify`` reads them (delta-rs,
pandas records): nulls arrive as NaN, NaT or None, integers with nulls as floats, and come out
as ``None`` and ``int``."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from groupwatch.delta.read import DeltaStore
from groupwatch.notify import Notifier, NotifierConfig
from groupwatch.notify.inputs import AlertSnapshot, finding_of, lag_row_of, snapshot_of
from groupwatch.notify.routing import Rule
from groupwatch.tables import FindingRow, PartitionLagRow
from tests.dashboard.scenario import write

T = dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=dt.UTC)


def _records(root: Path, table: str) -> list[dict[str, object]]:
    records: list[dict[str, object]] = DeltaStore(root).read(table).to_dict("records")
    return records


def test_a_findings_row_read_with_delta_rs(tmp_path: Path) -> None:
    write(tmp_path, "findings", [
        {"finding_id": "f1", "kind": "assignment_overlap", "severity": "critical",
         "group": "orders-etl", "generation": 3, "topic": "orders", "partition": 2,
         "member": "m-1", "detail": "two owners", "evidence": '{"a": 1}', "detected_at": T},
        # A lag finding: no generation, and nothing per member.
        {"finding_id": "f2", "kind": "consumer_stopped", "severity": "error",
         "group": "billing", "generation": None, "topic": "orders", "partition": 3,
         "member": None, "detail": None, "evidence": None},
    ])  # fmt: skip
    records = sorted(_records(tmp_path, "findings"), key=lambda r: str(r["finding_id"]))
    # What pandas hands over: the null generation as NaN, the others as floats.
    assert isinstance(records[1]["generation"], float)
    assert math.isnan(records[1]["generation"])
    first, second = (finding_of(r) for r in records)
    assert first == FindingRow(
        finding_id="f1",
        kind="assignment_overlap",
        severity="critical",
        group="orders-etl",
        generation=3,
        topic="orders",
        partition=2,
        member="m-1",
        detail="two owners",
        evidence='{"a": 1}',
    )
    assert type(first.generation) is int and type(first.partition) is int
    assert (second.generation, second.member, second.detail, second.evidence) == (None,) * 4
    assert type(second.partition) is int


def test_a_snapshot_read_with_delta_rs(tmp_path: Path) -> None:
    write(tmp_path, "group_snapshots", [
        {"group": "orders-etl", "generation": 4, "tombstone": False, "source_offset": 7,
         "source_timestamp": T},
        # A tombstone: no generation; and a row without a time or a tombstone flag.
        {"group": "orders-etl", "generation": None, "tombstone": True, "source_offset": 8,
         "source_timestamp": T},
        {"group": "payments", "generation": 2, "tombstone": None, "source_offset": None,
         "source_timestamp": None},
    ])  # fmt: skip
    snaps = sorted(
        (snapshot_of(r) for r in _records(tmp_path, "group_snapshots")),
        key=lambda s: (s.group, s.source_offset or 0),
    )
    assert snaps == [
        AlertSnapshot("orders-etl", 4, tombstone=False, source_timestamp=T, source_offset=7),
        AlertSnapshot("orders-etl", None, tombstone=True, source_timestamp=T, source_offset=8),
        AlertSnapshot("payments", 2, tombstone=False, source_timestamp=None, source_offset=None),
    ]
    assert type(snaps[0].generation) is int and type(snaps[0].source_offset) is int
    assert type(snaps[0].tombstone) is bool


def test_a_partition_lag_row_read_with_delta_rs(tmp_path: Path) -> None:
    write(tmp_path, "partition_lag", [
        {"group": "billing", "topic": "orders", "partition": 3, "status": "stopped",
         "committed_offset": 5, "observed_at": T},
        {"group": "billing", "topic": "orders", "partition": None, "status": None},
    ])  # fmt: skip
    rows = sorted(
        (lag_row_of(r) for r in _records(tmp_path, "partition_lag")),
        key=lambda r: r.partition is None,
    )
    assert rows == [
        PartitionLagRow(group="billing", topic="orders", partition=3, status="stopped"),
        PartitionLagRow(group="billing", topic="orders", partition=None, status=None),
    ]
    assert type(rows[0].partition) is int


def test_the_conversions_take_nan_and_nat_as_null() -> None:
    import numpy as np
    import pandas as pd

    f = finding_of({"finding_id": "f", "generation": np.float64(4.0), "partition": math.nan,
                    "topic": math.nan, "member": None})  # fmt: skip
    assert (f.generation, f.partition, f.topic, f.member) == (4, None, None, None)
    s = snapshot_of({"group": "g", "generation": math.nan, "tombstone": np.bool_(True),
                     "source_timestamp": pd.NaT, "source_offset": np.int64(9)})  # fmt: skip
    assert s == AlertSnapshot("g", None, tombstone=True, source_timestamp=None, source_offset=9)
    assert type(s.source_offset) is int and type(s.tombstone) is bool
    stamp = snapshot_of({"group": "g", "source_timestamp": pd.Timestamp(T)}).source_timestamp
    assert stamp == T
    # Whatever is not a time is refused, not read as none.
    with pytest.raises(TypeError, match="timestamp"):
        snapshot_of({"group": "g", "source_timestamp": "2026-01-01T00:00:05"})


def test_the_notifier_over_rows_read_with_delta_rs(tmp_path: Path) -> None:
    """A finding and the later healthy generation, read back as ``groupwatch notify`` does:
    the alert fires, then resolves."""
    write(tmp_path, "findings", [
        {"finding_id": "f1", "kind": "assignment_overlap", "severity": "critical",
         "group": "orders-etl", "generation": 3, "topic": "orders", "partition": 0},
    ])  # fmt: skip
    write(tmp_path, "group_snapshots", [
        {"group": "orders-etl", "generation": 3, "tombstone": False, "source_offset": 1,
         "source_timestamp": T},
    ])  # fmt: skip
    n = Notifier(NotifierConfig(rules=(Rule("all"),), log=False))
    findings = [finding_of(r) for r in _records(tmp_path, "findings")]
    (alert,) = n.process(findings, [snapshot_of(r) for r in _records(tmp_path, "group_snapshots")])
    assert (alert.status, alert.generation, alert.partition, alert.member) == (
        "firing",
        3,
        0,
        None,
    )
    write(tmp_path, "group_snapshots", [
        {"group": "orders-etl", "generation": 4, "tombstone": None, "source_offset": 2,
         "source_timestamp": T},
    ], mode="append")  # fmt: skip
    snaps = [snapshot_of(r) for r in _records(tmp_path, "group_snapshots")]
    assert [(e.finding_id, e.status) for e in n.process(findings, snaps)] == [("f1", "resolved")]
