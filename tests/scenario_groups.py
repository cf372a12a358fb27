"""A library scenario run through the job's per-group step, as the tests of that step need it.

The records carry the bytes the scenario library encodes (with the decoder's own encoder), so
the step decodes them as the job does; the decoded lines come along for the tests' assertions.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from typing import Any

from groupwatch.config import load
from groupwatch.group_state import SavedGroupState
from groupwatch.processing import GroupResult, SourceRecord, process_group
from groupwatch_dev.scenarios.builder import LIBRARY, decoded_lines, raw_records
from groupwatch_dev.scenarios.builder import load as load_scenario

Lines = dict[tuple[int, int], dict[str, Any]]


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def scenario_records(name: str) -> tuple[list[SourceRecord], Lines]:
    """The scenario's records as Spark's Kafka source would deliver them, and their decoded
    lines by (partition, offset)."""
    scenario = load_scenario(LIBRARY / name)
    lines = decoded_lines(scenario)
    by_pos = {(ln["partition"], ln["offset"]): ln for ln in lines}
    records = [
        SourceRecord(
            _bytes(r["key"]),
            _bytes(r["value"]),
            r["topic"],
            r["partition"],
            r["offset"],
            r["timestamp"],
        )
        for r in raw_records(scenario)
    ]
    return records, by_pos


def run_group(
    group: str,
    records: Sequence[SourceRecord],
    detected_at: dt.datetime,
    state: SavedGroupState | None = None,
) -> GroupResult:
    """``process_group`` over ``records`` with the default detector configuration."""
    return process_group(
        group,
        state,
        records,
        detector=load(None, env={}).detect.detector(),
        detected_at=detected_at,
    )
