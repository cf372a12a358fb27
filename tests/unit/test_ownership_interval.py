"""The open ownership intervals a group's saved state keeps (``OwnershipInterval``) are saved as
the JSON lists they were before the type existed: ``group_state`` rows written by running jobs
load unchanged, and saving them again gives the same text."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from groupwatch.config import load
from groupwatch.group_state import SavedGroupState
from groupwatch.processing import process_group
from groupwatch.rows import classic_ownership, modern_ownership
from groupwatch.tables import OwnershipInterval, timestamp

#: A state as the list form wrote it: a classic group's intervals (a topic with '/' in its name
#: among them) and a modern one's (a topic id resolved to its name, a null client id).
OLD: dict[str, Any] = {
    "detect": None,
    "last_event_ms": 9000,
    "last_generation": 4,
    "ownership": {
        "0/orders": ["a-1", "client-a", 3, 7000],
        "1/orders": ["b-2", None, 4, 9000],
        "2/t/x": ["a-1", "client-a", 1, 1000],
    },
    "modern_ownership": {
        "A": {"0/Zq9x": ["orders", "client-a", 1, 1000, 2], "1/Zq9x": ["orders", None, 2, 3000, 5]},
        "B": {"3/payments": ["payments", "client-b", 0, 500, 0]},
    },
}


def text(state: Any) -> str:
    return json.dumps(state, sort_keys=True)  # as the job saves a group's state


def test_an_old_state_round_trips_to_the_same_text() -> None:
    saved = json.loads(text(OLD))
    again = dict(saved)
    again["ownership"] = classic_ownership.encode(classic_ownership.decode(saved["ownership"]))
    again["modern_ownership"] = modern_ownership.encode(
        modern_ownership.decode(saved["modern_ownership"])
    )
    assert text(again) == text(OLD)


def test_the_group_step_saves_an_old_state_it_did_not_change_as_it_was() -> None:
    detector = load(None, env={}).detect.detector()
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    saved = SavedGroupState.decode(text(OLD))
    result = process_group("g", saved, [], detector=detector, detected_at=now)
    assert result.state.encode() == text(OLD)


def test_decoding_reads_each_list_into_its_fields() -> None:
    classic = classic_ownership.decode(OLD["ownership"])
    assert classic["2/t/x"] == OwnershipInterval(
        topic="t/x",
        partition=2,
        member_id="a-1",
        client_id="client-a",
        from_generation=1,
        from_time_ms=1000,
    )
    modern = modern_ownership.decode(OLD["modern_ownership"])
    assert modern["A"]["1/Zq9x"] == OwnershipInterval(
        topic="orders",
        partition=1,
        member_id="A",
        client_id=None,
        from_generation=2,
        from_time_ms=3000,
        last_epoch=5,
    )


def test_closing_an_old_interval_writes_the_row_it_opened_closed() -> None:
    rows = classic_ownership.close_all(
        "g", classic_ownership.decode({"2/t/x": ["a-1", "c", 1, 1000]}), 5, 9000
    )
    assert [
        (r.group_type, r.topic, r.partition, r.member_id, r.client_id, r.from_generation)
        for r in rows
    ] == [("classic", "t/x", 2, "a-1", "c", 1)]
    assert (rows[0].from_time, rows[0].to_generation, rows[0].to_time) == (
        timestamp(1000),
        5,
        timestamp(9000),
    )
    saved = {"A": {"1/Zq9x": ["orders", None, 2, 3000, 5]}}
    closed = modern_ownership.close_all("g", modern_ownership.decode(saved), "consumer", 9000)
    # a member gone is closed at the epoch after the last one it was seen holding at
    assert [
        (r.topic, r.partition, r.member_id, r.from_generation, r.to_generation) for r in closed
    ] == [("orders", 1, "A", 2, 6)]
