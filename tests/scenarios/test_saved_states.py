"""Both scenario libraries through the job's step one record a batch, each group's state crossing
batches as the ``group_state`` text (as ``spark/python_stage.py`` carries it): every state saved
reads back equal, is saved again as the same bytes, and is the text the step wrote before
``SavedGroupState`` existed -- its dict through ``json.dumps(state, sort_keys=True)``, with no
key that dict did not have."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from groupwatch import processing
from groupwatch.detect import DetectorConfig
from groupwatch.group_state import SavedGroupState
from groupwatch_dev.scenarios.builder import load, raw_records, scenario_files
from tests.scenarios.modern_records import build, load_all

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
KEYS = {"detect", "ownership", "modern_ownership", "last_generation", "last_event_ms"}
CLASSIC = scenario_files()
MODERN = load_all()


def _records(raw: Sequence[Mapping[str, Any]]) -> dict[str, list[processing.SourceRecord]]:
    """The scenario's records by group, in offset order."""

    def b(text: str | None) -> bytes | None:
        return None if text is None else base64.b64decode(text)

    out: dict[str, list[processing.SourceRecord]] = defaultdict(list)
    for r in sorted(raw, key=lambda r: (r["partition"], r["offset"])):
        rec = processing.SourceRecord(
            b(r["key"]), b(r["value"]), r["topic"], r["partition"], r["offset"], r["timestamp"]
        )
        out[processing.decode(rec).group or ""].append(rec)
    return out


def saved_texts(raw: Sequence[Mapping[str, Any]], detector: DetectorConfig) -> int:
    """Checks every state the step saves over the records; returns how many it saved."""
    count = 0
    for group, records in sorted(_records(raw).items()):
        text: str | None = None
        for record in records:
            result = processing.process_group(
                group,
                None if text is None else SavedGroupState.decode(text),
                [record],
                detector=detector,
                detected_at=NOW,
                clocks={record.partition: record.timestamp_ms},
            )
            saved = result.state.encode()
            assert SavedGroupState.decode(saved) == result.state
            assert SavedGroupState.decode(saved).encode() == saved
            doc = json.loads(saved)
            assert json.dumps(doc, sort_keys=True) == saved and set(doc) <= KEYS
            text = None if result.deleted else saved
            count += 1
    return count


@pytest.mark.parametrize("path", CLASSIC, ids=[p.stem for p in CLASSIC])
def test_classic_scenario_states_round_trip(path: Any) -> None:
    doc = load(path)
    detector = DetectorConfig(partitions_per_topic=doc.get("partitions") or {})
    assert saved_texts(raw_records(doc), detector) > 0


@pytest.fixture(scope="module")
def modern_raw() -> dict[str, list[dict[str, Any]]]:
    return build(MODERN)


@pytest.mark.oracle  # the records come from Kafka's serialisers (one JVM run)
@pytest.mark.parametrize("name", sorted(MODERN))
def test_modern_scenario_states_round_trip(
    name: str, modern_raw: dict[str, list[dict[str, Any]]]
) -> None:
    doc = MODERN[name]
    detector = DetectorConfig(
        partitions_per_topic=doc.get("partitions") or {}, **(doc.get("config") or {})
    )
    assert saved_texts(modern_raw[name], detector) > 0
