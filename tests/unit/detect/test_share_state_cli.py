"""Dumps of ``__share_group_state`` through ``groupwatch decode`` and ``groupwatch analyze``:
the topic of a line (or ``--topic``) picks the share coordinator's record types, the share
partitions' states come out the same from raw and decoded lines, bad bytes are decode-error
findings, and share state records tell no ``__consumer_offsets`` stream time."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupwatch.cli import main
from groupwatch.detect.engine import Analyzer
from groupwatch.detect.share import names
from groupwatch.protocol import encode_key, encode_value
from groupwatch.protocol.models import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
)
from groupwatch.protocol.specs import SHARE_STATE_RECORD_TYPES, SHARE_STATE_TOPIC

TOPIC_ID = uuid.UUID("6a3b1f1e-0c1d-4f7e-9a55-0d5b8a2c3e44")


def _line(key: object, value: object | None, offset: int, **extra: Any) -> dict[str, Any]:
    v = None if value is None else base64.b64encode(encode_value(value, 0)).decode()  # type: ignore[arg-type]
    return {
        "key": base64.b64encode(encode_key(key)).decode(),  # type: ignore[arg-type]
        "value": v,
        "partition": 7,
        "offset": offset,
        "timestamp": 1_000 + offset,
        **extra,
    }


def _dump(**extra: Any) -> list[dict[str, Any]]:
    snap = ShareSnapshotValue(0, 1, 0, -1, 900, 900, (), -1)
    upd = ShareUpdateValue(0, 0, 0, (StateBatch(0, 2, 2, 1), StateBatch(3, 3, 4, 5)), 4)
    return [
        _line(ShareSnapshotKey("orders", TOPIC_ID, 0), snap, 0, **extra),
        _line(ShareUpdateKey("orders", TOPIC_ID, 0), upd, 1, **extra),
    ]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_the_names_the_engine_checks_are_the_decoders() -> None:
    assert names.SHARE_STATE_TOPIC == SHARE_STATE_TOPIC
    assert {rt.name for rt in SHARE_STATE_RECORD_TYPES.values()} == names.SHARE_STATE_RECORD_NAMES


def test_decode_reads_the_topic_of_the_line_or_of_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _write(tmp_path / "in.jsonl", _dump())
    assert main(["decode", str(src)]) == 0
    as_offsets = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert {x["record_type"] for x in as_offsets} <= {"offset_commit"}  # ids 0, 1 there
    assert all(x["error"] is not None for x in as_offsets)
    assert main(["decode", "--topic", SHARE_STATE_TOPIC, str(src)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["record_type"], x["error"], x["topic"]) for x in lines] == [
        ("share_snapshot", None, SHARE_STATE_TOPIC),
        ("share_update", None, SHARE_STATE_TOPIC),
    ]
    assert lines[1]["value"]["data"]["delivery_complete_count"] == 4
    # A line's own topic wins over the option.
    mixed = _write(tmp_path / "mixed.jsonl", _dump(topic="__consumer_offsets"))
    assert main(["decode", "--topic", SHARE_STATE_TOPIC, str(mixed)]) == 0
    assert all(
        json.loads(x)["record_type"] == "offset_commit"
        for x in capsys.readouterr().out.splitlines()
    )


def test_analyze_folds_raw_and_decoded_dumps_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = _write(tmp_path / "raw.jsonl", _dump())
    out_raw, out_dec = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    args = ["--topic", SHARE_STATE_TOPIC, "--share-state"]
    assert main(["analyze", str(raw), *args, str(out_raw)]) == 0
    out, err = capsys.readouterr()
    [finding] = [json.loads(x) for x in out.splitlines()]
    assert (finding["kind"], finding["partition"]) == ("share_records_archived", 0)
    assert finding["evidence"]["archived_offsets"] == [[3, 3]]
    assert "share state: 1 share partition(s), 1 with archived records" in err
    assert "warning: 1" in err
    decoded = tmp_path / "dec.jsonl"
    assert main(["decode", "--topic", SHARE_STATE_TOPIC, str(raw)]) == 0
    decoded.write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["analyze", str(decoded), "--share-state", str(out_dec)]) == 0
    capsys.readouterr()
    rows = [json.loads(x) for x in out_raw.read_text().splitlines()]
    assert rows == [json.loads(x) for x in out_dec.read_text().splitlines()]
    [row] = rows
    assert (row["group"], row["partition"], row["start_offset"]) == ("orders", 0, 0)
    assert (row["archived_ranges"], row["max_delivery_count"]) == ([[3, 3]], 5)
    assert (row["delivery_complete_count"], row["state_epoch"], row["observed_at"]) == (4, 1, 1001)


def test_bad_share_state_bytes_are_a_decode_error_and_tell_no_time() -> None:
    analyzer = Analyzer()
    good, bad = _dump(topic=SHARE_STATE_TOPIC)
    bad["value"] = base64.b64encode(base64.b64decode(bad["value"])[:-5]).decode()
    assert analyzer.feed(good) == []
    [finding] = analyzer.feed(bad)
    assert finding.kind == "decode_error" and finding.group == "orders"
    assert finding.source.topic == SHARE_STATE_TOPIC and finding.evidence["field_path"]
    assert analyzer.clocks == {}  # partition 7 of __share_group_state is no group's clock
    [state] = list(analyzer.share_states)
    assert state.start_offset == -1  # the bad update changed nothing
