"""The job's edge to the notifier (``BatchOutput.alert_rows`` in ``spark/writes``): a batch's
findings and snapshots, already on the driver as Arrow (a batch written from there) or collected
from Spark's frames as Arrow, become the notifier's typed values, nulls as ``None``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pytest

from groupwatch import tables
from groupwatch.delta.read import schema
from groupwatch.notify.inputs import AlertSnapshot
from groupwatch.spark import writes
from groupwatch.tables import FindingRow

T = dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=dt.UTC)
FINDINGS = [
    {"finding_id": "f1", "kind": "assignment_overlap", "severity": "critical", "group": "g",
     "generation": 3, "topic": "t", "partition": 0, "member": "m", "detail": "d",
     "evidence": "{}", "members": ["m"], "detected_at": T},
    {"finding_id": "f2", "kind": "consumer_stopped", "severity": "error", "group": "g",
     "generation": None, "topic": "t", "partition": 1, "member": None, "detail": None,
     "evidence": None},
]  # fmt: skip
SNAPSHOTS = [
    {"group": "g", "generation": 4, "tombstone": False, "source_offset": 7, "source_timestamp": T,
     "member_count": 2},
    {"group": "g", "generation": None, "tombstone": True, "source_offset": None,
     "source_timestamp": None},
]  # fmt: skip
EXPECTED = (
    [
        FindingRow(finding_id="f1", kind="assignment_overlap", severity="critical", group="g",
                   generation=3, topic="t", partition=0, member="m", detail="d", evidence="{}"),
        FindingRow(finding_id="f2", kind="consumer_stopped", severity="error", group="g",
                   generation=None, topic="t", partition=1),
    ],
    [
        AlertSnapshot("g", 4, tombstone=False, source_timestamp=T, source_offset=7),
        AlertSnapshot("g", None, tombstone=True, source_timestamp=None, source_offset=None),
    ],
)  # fmt: skip


def _arrow(table: tables.Table, rows: list[dict[str, Any]]) -> pa.Table:
    target = schema(table.name)
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in target} for r in rows], target)


def test_a_batch_collected_as_arrow() -> None:
    collected = {
        tables.FINDINGS.name: _arrow(tables.FINDINGS, FINDINGS),
        tables.GROUP_SNAPSHOTS.name: _arrow(tables.GROUP_SNAPSHOTS, SNAPSHOTS),
    }
    got = _driver(collected).alert_rows(True)
    assert got == EXPECTED
    # A batch without findings or snapshots collects none.
    assert _driver({}).alert_rows(False) == ([], [])


def _driver(collected: writes.Collected) -> writes.DriverOutput:
    return writes.DriverOutput(None, None, 0, collected)  # type: ignore[arg-type]


def _spark(snapshots: _Frame) -> writes.SparkOutput:
    rows = writes.BatchRows(snapshots, None, None)  # type: ignore[arg-type]
    return writes.SparkOutput(None, None, 0, None, rows)  # type: ignore[arg-type]


class _Frame:
    """What ``SparkOutput.alert_rows`` asks of a Spark frame: ``select`` and ``toArrow``
    (the rows in the table's declared types, as Spark hands them over)."""

    def __init__(self, table: tables.Table, rows: list[dict[str, Any]]) -> None:
        self.table = table
        self.rows = rows
        self.selected: tuple[str, ...] = ()

    def select(self, *names: str) -> _Frame:
        self.selected = names
        return self

    def toArrow(self) -> pa.Table:  # noqa: N802 - Spark's name
        full = _arrow(self.table, self.rows)
        return full.select(list(self.selected)) if self.selected else full


def test_a_batch_written_by_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _Frame(tables.FINDINGS, FINDINGS)
    monkeypatch.setattr(writes, "table_rows", lambda out, table: found)
    snaps = _Frame(tables.GROUP_SNAPSHOTS, SNAPSHOTS)
    got = _spark(snaps).alert_rows(True)
    assert got == EXPECTED
    assert snaps.selected == (
        "group",
        "generation",
        "tombstone",
        "source_timestamp",
        "source_offset",
    )
    # No findings in the batch: none collected.
    monkeypatch.setattr(writes, "table_rows", lambda out, table: pytest.fail("collected"))
    got = _spark(snaps).alert_rows(False)
    assert got == ([], EXPECTED[1])
