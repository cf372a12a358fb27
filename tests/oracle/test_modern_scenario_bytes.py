"""The modern scenario library is valid input: Kafka wrote every record as the scenario says,
and the project's decoder reads each one without error, exactly as Kafka reads it back.

* Kafka's serialiser wrote what was asked: Kafka's own deserialiser, reading the bytes back,
  shows every field the scenario's JSON set, with that value (a misspelt optional field would
  otherwise be dropped in silence);
* :func:`groupwatch.protocol.decode_record` reads every record with no error, the record type,
  group and tombstone-ness the scenario meant, and Kafka's JSON view of the record field for
  field (uuids as Kafka prints them);
* the records are laid out as the broker lays them out: one ``__consumer_offsets`` partition per
  scenario, offsets from 0 without gaps, timestamps that never go back, and all records of a
  write sharing one timestamp.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

import pytest

from groupwatch.protocol import decode_record, to_json_dict
from tests.oracle.test_records_vectors import assert_matches_kafka
from tests.scenarios.modern_records import (
    OFFSETS_TOPIC,
    Record,
    build,
    java_harness,
    load_all,
    records,
)

pytestmark = pytest.mark.oracle

DOCS = load_all()


@pytest.fixture(scope="module")
def raw() -> dict[str, list[dict[str, Any]]]:
    return build(DOCS)


@pytest.fixture(scope="module")
def kafka_read(raw: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Kafka's deserialiser over every record of every scenario (one JVM run)."""
    flat = [(name, rec) for name, recs in raw.items() for rec in recs]
    answers = java_harness(
        [
            {
                "op": "decode_record",
                "key_hex": _hex(rec["key"]),
                "value_hex": _hex(rec["value"]),
            }
            for _, rec in flat
        ]
    )
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in raw}
    for (name, _), ans in zip(flat, answers, strict=True):
        out[name].append(ans)
    return out


def _bytes(b64: str | None) -> bytes | None:
    return None if b64 is None else base64.b64decode(b64)


def _hex(b64: str | None) -> str | None:
    data = _bytes(b64)
    return None if data is None else data.hex()


def _asked_is_written(asked: Any, read: Any, path: str) -> None:
    """Every field of the request (Kafka's JSON form) is in Kafka's reading, equal."""
    if isinstance(asked, Mapping) and set(asked) == {"$payload"}:
        # consumer-protocol bytes Kafka built in the builder's first run
        assert isinstance(read, str) and base64.b64decode(read), path
    elif isinstance(asked, Mapping):
        assert isinstance(read, Mapping), path
        for k, v in asked.items():
            assert k in read, f"{path}.{k}: asked for, not written"
            _asked_is_written(v, read[k], f"{path}.{k}")
    elif isinstance(asked, list):
        assert isinstance(read, list) and len(read) == len(asked), path
        for i, (a, b) in enumerate(zip(asked, read, strict=True)):
            _asked_is_written(a, b, f"{path}[{i}]")
    else:
        assert asked == read, f"{path}: asked {asked!r}, Kafka wrote {read!r}"


def test_the_library_has_every_section() -> None:
    sections = {name.split("/")[0] for name in DOCS}
    assert sections == {"kinds", "incidents", "healthy"}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_kafka_wrote_what_the_scenario_says(
    name: str, raw: dict[str, list[dict[str, Any]]], kafka_read: dict[str, list[dict[str, Any]]]
) -> None:
    expected = records(DOCS[name])
    assert len(expected) == len(raw[name]) == len(kafka_read[name])
    for i, (want, got) in enumerate(zip(expected, kafka_read[name], strict=True)):
        assert "error" not in got, f"record {i}: Kafka cannot read it back: {got['error']}"
        _asked_is_written(want.key, got["key"], f"record {i} key")
        if want.value is None:
            assert got["value"] is None, f"record {i}: a tombstone was asked for"
        elif want.type == 2:
            # Embedded consumer-protocol bytes: Kafka's own, filled in by the builder.
            assert got["value"]["generation"] == want.value["generation"]
            ids = [m["memberId"] for m in got["value"]["members"]]
            assert ids == [m["memberId"] for m in want.value["members"]]
        else:
            _asked_is_written(want.value, got["value"], f"record {i} value")
            assert got["version"] == want.version


@pytest.mark.parametrize("name", sorted(DOCS))
def test_the_decoder_reads_every_record(
    name: str, raw: dict[str, list[dict[str, Any]]], kafka_read: dict[str, list[dict[str, Any]]]
) -> None:
    expected: list[Record] = records(DOCS[name])
    for i, (rec, want, kafka) in enumerate(zip(raw[name], expected, kafka_read[name], strict=True)):
        decoded = decode_record(
            _bytes(rec["key"]),
            _bytes(rec["value"]),
            topic=rec["topic"],
            partition=rec["partition"],
            offset=rec["offset"],
            timestamp=rec["timestamp"],
        )
        where = f"{name} record {i} (type {want.type})"
        assert decoded.error is None, f"{where}: {decoded.error}"
        assert decoded.record_type_id == want.type, where
        assert decoded.group == want.group, where
        assert decoded.tombstone == (want.value is None), where
        view = to_json_dict(decoded)
        assert_matches_kafka(kafka["key"], view["key"], f"{where} key")
        if want.value is None:
            assert view["value"] is None, where
        elif want.type == 2:
            value = view["value"]
            assert value["generation"] == want.value["generation"], where
            for m in value["members"]:
                assert m["subscription"] is not None and m["assignment"] is not None, where
        else:
            ours = view["value"] if want.type in (0, 1) else view["value"]["data"]
            assert_matches_kafka(kafka["value"], ours, f"{where} value")
        # The decoder's JSON line is itself valid JSON (the `groupwatch decode` contract).
        json.dumps(view)


@pytest.mark.parametrize("name", sorted(DOCS))
def test_records_are_laid_out_as_the_broker_writes_them(
    name: str, raw: dict[str, list[dict[str, Any]]]
) -> None:
    recs = raw[name]
    assert {r["topic"] for r in recs} == {OFFSETS_TOPIC}
    assert {r["partition"] for r in recs} == {DOCS[name]["partition"]}
    assert [r["offset"] for r in recs] == list(range(len(recs)))
    times = [r["timestamp"] for r in recs]
    assert times == sorted(times)
    # One write, one timestamp: the writes of the file map onto distinct times.
    writes = DOCS[name]["writes"]
    distinct_ats = {w.get("at") for w in writes}
    assert None not in distinct_ats, "every write names its time"
    assert len(set(times)) == len(distinct_ats)
