"""A library scenario run through the job's per-group step, as the tests of that step need it.

The decoder is injected: the scenario library gives decoded lines, and each record's raw bytes
are placeholders (``raw(i)``) that the quarantine and snapshot rows carry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groupwatch.config import load
from groupwatch.processing import GroupResult, SourceRecord, process_group
from groupwatch.processors import EngineAnalysis
from groupwatch_dev.scenarios.builder import LIBRARY, decoded_lines
from groupwatch_dev.scenarios.builder import load as load_scenario

Lines = dict[tuple[int, int], dict[str, Any]]


def scenario_records(
    name: str, raw: Callable[[int], tuple[bytes, bytes]] = lambda i: (b"k", b"v")
) -> tuple[list[SourceRecord], Lines]:
    """The scenario's records (raw key/value from ``raw(i)``) and their decoded lines."""
    lines = decoded_lines(load_scenario(LIBRARY / name))
    by_pos = {(ln["partition"], ln["offset"]): ln for ln in lines}
    records = [
        SourceRecord(*raw(i), ln["topic"], ln["partition"], ln["offset"], ln["timestamp"])
        for i, ln in enumerate(lines)
    ]
    return records, by_pos


def run_group(
    group: str,
    records: Sequence[SourceRecord],
    by_pos: Lines,
    detected_at: dt.datetime,
    state: Mapping[str, Any] | None = None,
) -> GroupResult:
    """``process_group`` over ``records`` with the default detector configuration."""
    return process_group(
        group,
        state,
        records,
        decode=lambda r: by_pos[(r.partition, r.offset)],
        analysis=EngineAnalysis(load(None, env={})),
        detected_at=detected_at,
    )
