"""A group's saved state (``SavedGroupState``) is saved as the text the job wrote before the type
existed: ``group_state`` rows already written load unchanged and are saved again as the same
bytes; text that is not a saved state is one domain error, raised from its cause."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from groupwatch.config import load
from groupwatch.detect import GroupState
from groupwatch.errors import GroupwatchError
from groupwatch.group_state import SavedGroupState
from groupwatch.processing import process_group
from groupwatch.tables import OwnershipInterval

#: Texts the job's step wrote before ``SavedGroupState`` existed (the dict it built, through
#: ``json.dumps(state, sort_keys=True)``), over the scenario library: a classic group with
#: ownership and the assignment the engine keeps, one with a finding awaiting confirmation, a
#: modern group holding partitions, and a group known from offset commits only.
OLD = [
    doc["text"]
    for doc in json.loads((Path(__file__).parent / "saved_group_states_v1.json").read_text())
]
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize("text", OLD)
def test_an_old_text_loads_and_is_saved_as_the_same_bytes(text: str) -> None:
    state = SavedGroupState.decode(text)
    assert state.encode() == text
    assert SavedGroupState.decode(state.encode()) == state


@pytest.mark.parametrize("text", OLD)
def test_a_batch_without_records_saves_an_old_state_as_it_was(text: str) -> None:
    detector = load(None, env={}).detect.detector()
    result = process_group(
        "g", SavedGroupState.decode(text), [], detector=detector, detected_at=NOW
    )
    assert result.state.encode() == text


def test_the_old_texts_cover_every_part_of_the_state() -> None:
    states = [SavedGroupState.decode(t) for t in OLD]
    assert all(s.detect is not None for s in states)
    assert any(s.ownership and s.last_generation is not None for s in states)
    assert any(s.modern_ownership and s.detect and s.detect.modern for s in states)
    assert any(s.last_event_ms is None and not s.ownership for s in states)
    assert any(s.detect and s.detect.pending for s in states)
    assert any(s.detect and s.detect.assigned for s in states)


def test_the_fields_hold_what_the_keys_held() -> None:
    [modern] = [t for t in OLD if '"modern_ownership"' in t]
    doc = json.loads(modern)
    state = SavedGroupState.decode(modern)
    assert state.detect == GroupState.from_json(doc["detect"])
    assert state.last_event_ms == doc["last_event_ms"] and state.last_generation is None
    [(member, held)] = state.modern_ownership.items()
    key, interval = next(iter(held.items()))
    topic, client_id, from_epoch, from_time_ms, last_epoch = doc["modern_ownership"][member][key]
    assert interval == OwnershipInterval(
        topic=topic,
        partition=int(key.split("/")[0]),
        member_id=member,
        client_id=client_id,
        from_generation=from_epoch,
        from_time_ms=from_time_ms,
        last_epoch=last_epoch,
    )


def test_an_empty_state_writes_the_keys_it_always_wrote() -> None:
    assert SavedGroupState().encode() == '{"detect": null, "ownership": {}}'
    assert SavedGroupState.decode("{}") == SavedGroupState()
    assert SavedGroupState.version == 1


def test_a_version_key_of_version_1_reads_as_version_1() -> None:
    text = OLD[0]
    doc = json.loads(text)
    assert "v" not in doc  # the top level: the engine's state has its own
    doc["v"] = 1
    assert SavedGroupState.decode(json.dumps(doc)).encode() == text


def _bad(doc: dict[str, Any], **change: Any) -> str:
    return json.dumps({**doc, **change}, sort_keys=True)


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("not json", json.JSONDecodeError),
        ("[1, 2]", TypeError),
        (_bad(json.loads(OLD[0]), v=2), ValueError),
        (_bad(json.loads(OLD[0]), surprise=1), ValueError),
        (_bad(json.loads(OLD[0]), detect={"v": 99}), ValueError),
        (_bad(json.loads(OLD[0]), detect={"v": 4}), KeyError),
        (_bad(json.loads(OLD[0]), ownership={"0/t": ["m", None, 1]}), ValueError),
        (_bad(json.loads(OLD[0]), ownership=[1]), AttributeError),
        (_bad(json.loads(OLD[0]), last_event_ms="9000"), TypeError),
        (_bad(json.loads(OLD[0]), last_generation=True), TypeError),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "newer-version",
        "unknown-key",
        "engine-version",
        "engine-field-missing",
        "short-interval",
        "intervals-not-an-object",
        "time-as-string",
        "generation-as-bool",
    ],
)
def test_text_that_is_not_a_saved_state_is_one_error_from_its_cause(
    text: str, cause: type[Exception]
) -> None:
    with pytest.raises(GroupwatchError) as raised:
        SavedGroupState.decode(text)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value.__cause__, cause)


@pytest.mark.parametrize("text", OLD)
def test_the_workers_step_reads_an_old_row_and_writes_it_back_unchanged(text: str) -> None:
    """``spark/python_stage.py``'s per-group step (Arrow in, rows out; no Spark): a group with a
    saved state and no records of its own, as a batch whose clocks or brokers' view woke it."""
    import pyarrow as pa  # type: ignore[import-untyped]

    from groupwatch.spark import python_stage

    records = pa.table(
        {
            "group": pa.array([], pa.string()),
            "key": pa.array([], pa.binary()),
            "value": pa.array([], pa.binary()),
            "topic": pa.array([], pa.string()),
            "partition": pa.array([], pa.int32()),
            "offset": pa.array([], pa.int64()),
            "ts": pa.array([], pa.int64()),
        }
    )
    saved = pa.table(
        {
            "group": ["g"],
            "state": [text],
            "last_event_ms": pa.array([9000], pa.int64()),
            "topic": pa.array([None], pa.string()),
            "max_partition": pa.array([None], pa.int32()),
            "last_commit_ms": pa.array([None], pa.int64()),
        }
    )
    detector = load(None, env={}).detect.detector()
    group, rows = python_stage._group_rows(records, saved, detector, NOW, {})
    [row] = rows["group_state"]
    assert (group, row.state, row.deleted) == ("g", text, False)


def _share_state() -> SavedGroupState:
    from groupwatch.detect.share.state import (
        Batch,
        RaisedShare,
        SavedShare,
        SharePartitionKey,
        SharePartitionState,
    )

    key = SharePartitionKey("queue", "AAAAAAAAAAAAAAAAAAAAAA", 3)
    part = SharePartitionState(
        key, 40, 1, 2, 0, 5, (Batch(40, 41, 0, 4), Batch(42, 42, 4, 5)), 1_000, 900, 7
    )
    raised = RaisedShare("f-1", key.topic_id, 3, 40)
    return SavedGroupState(
        last_event_ms=1_000, share=SavedShare("queue", (part,), (raised,), 1_000)
    )


def test_a_share_groups_partitions_are_saved_and_read_back() -> None:
    """The share partitions (and the share findings that could come again) are saved under
    ``share``, read back equal, records_applied included; a group without any saves no key."""
    state = _share_state()
    back = SavedGroupState.decode(state.encode())
    assert back == state and back.encode() == state.encode()
    assert state.share is not None and back.share is not None
    assert back.share.partitions[0].records_applied == 7
    assert "share" in json.loads(state.encode())
    assert "share" not in json.loads(SavedGroupState(last_event_ms=1).encode())


@pytest.mark.parametrize(
    "share",
    [[], {"group": "q", "partitions": [{"topic_id": "x"}], "raised": []}, {"partitions": []}],
)
def test_a_share_state_that_is_not_one_is_a_group_state_error(share: Any) -> None:
    doc = json.loads(_share_state().encode())
    doc["share"] = share
    with pytest.raises(GroupwatchError, match="not a saved group state"):
        SavedGroupState.decode(json.dumps(doc))
