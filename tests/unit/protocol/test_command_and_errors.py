"""``groupwatch decode`` line contract, and the decoder's error model."""

from __future__ import annotations

import argparse
import base64
import dataclasses
import io
import json
import struct
import sys

import pytest

from groupwatch.protocol import (
    DecodeError,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    command,
    decode_record,
    decode_subscription,
    encode_key,
    encode_value,
)
from groupwatch.protocol.schema import Versions
from groupwatch.protocol.specs import RECORD_TYPES
from tests.vectors import build

VECTORS = build.stored()


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _run(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(line + "\n" for line in lines)))
    monkeypatch.setattr(sys, "stdout", out)
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    assert command.run(parser.parse_args([])) == 0
    return [json.loads(line) for line in out.getvalue().split("\n") if line]


def test_cli_one_line_per_input_line_in_order_even_when_bad(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data, expected = VECTORS["records/group_metadata/v3_cooperative"]
    good = json.dumps(
        {
            "key": _b64(data["key"]),
            "value": _b64(data["value"]),
            "topic": "__consumer_offsets",
            "partition": 7,
            "offset": 200,
            "timestamp": 1700000123456,
        }
    )
    lines = [
        good,
        "not json",
        '{"key": "!!!", "value": null}',
        "[1]",
        json.dumps({"key": _b64(b"\x00\x02\x00"), "value": None, "offset": 5}),
        "",
    ]
    out = _run(lines, monkeypatch)
    assert len(out) == len(lines)
    assert out[0] == {
        **expected,
        "topic": "__consumer_offsets",
        "partition": 7,
        "offset": 200,
        "timestamp": 1700000123456,
    }
    assert list(out[0])[:4] == ["topic", "partition", "offset", "timestamp"]
    assert [o["error"]["kind"] for o in out[1:]] == [  # type: ignore[index]
        "invalid_input",
        "invalid_base64",
        "invalid_input",
        "truncated",
        "invalid_input",
    ]
    assert out[4]["offset"] == 5 and out[4]["record_type"] == "group_metadata"


def test_cli_contract_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    _, expected = VECTORS["records/group_metadata/v4_cooperative"]
    assert set(expected) == {
        "partition",
        "offset",
        "timestamp",
        "record_type",
        "record_type_id",
        "group",
        "tombstone",
        "key",
        "value",
        "error",
    }
    value = expected["value"]
    assert set(value) == {
        "version",
        "protocol_type",
        "generation",
        "protocol",
        "leader",
        "current_state_timestamp",
        "members",
    }
    member = value["members"][0]
    assert set(member) == {
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
        "rebalance_timeout",
        "session_timeout",
        "subscription",
        "assignment",
        "subscription_error",
        "assignment_error",
    }
    assert member["subscription"]["user_data"] == {"kind": "cooperative-sticky", "generation": 11}
    _, oc = VECTORS["records/offset_commit/v1"]
    assert set(oc["value"]) == {
        "version",
        "offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "expire_timestamp",
        "topic_id",
    }
    assert oc["value"]["leader_epoch"] is None  # absent in v1


def test_cli_reads_a_file(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import pathlib

    p = pathlib.Path(str(tmp_path)) / "in.jsonl"
    p.write_text(json.dumps({"key": _b64(encode_key(GroupMetadataKey("g"))), "value": None}) + "\n")
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    assert command.run(argparse.Namespace(file=str(p))) == 0
    line = json.loads(out.getvalue())
    assert line["tombstone"] is True and line["group"] == "g" and line["value"] is None


# --- errors -------------------------------------------------------------------------------------


def _err(key: bytes | None, value: bytes | None) -> DecodeError:
    rec = decode_record(key, value)
    assert rec.error is not None
    return rec.error


KEY = encode_key(OffsetCommitKey("g", "t", 0))
VALUE = encode_value(OffsetCommitValue(1, "meta", 2, leader_epoch=3), 3)


def test_error_kinds_paths_and_offsets() -> None:
    e = _err(KEY, VALUE + b"\x00")
    assert (e.kind, e.byte_offset) == ("trailing_bytes", len(VALUE))
    e = _err(KEY, b"\x00\x09" + VALUE[2:])
    assert (e.kind, e.byte_offset) == ("unsupported_version", 0)
    e = _err(b"\x00\x63\x00\x00", None)
    assert e.kind == "unknown_record_type"
    e = _err(None, VALUE)
    assert e.kind == "missing_key"
    bad_utf8 = VALUE[:14] + b"\x00\x02\xff\xfe" + VALUE[20:]
    e = _err(KEY, bad_utf8)
    assert (e.kind, e.field_path, e.byte_offset) == ("invalid_utf8", "metadata", 14)
    assert isinstance(e.__cause__, UnicodeDecodeError)
    e = _err(KEY, VALUE[:14] + b"\xff\xfe" + VALUE[20:])
    assert (e.kind, e.field_path) == ("negative_length", "metadata")
    e = _err(KEY, VALUE[:5])
    assert (e.kind, e.field_path, e.byte_offset) == ("truncated", "offset", 2)
    assert isinstance(e.__cause__, struct.error)
    e = _err(KEY[:7], None)
    assert (e.kind, e.field_path) == ("truncated", "key.topic")


def test_error_path_reaches_into_nested_arrays() -> None:
    data, _ = VECTORS["consumer_protocol/sub_v3_full"]
    sub = data["subscription"]
    assert sub is not None
    # cut inside owned_partitions[0].partitions
    with pytest.raises(DecodeError) as info:
        decode_subscription(sub[:40])
    assert info.value.field_path.startswith("owned_partitions[")
    assert info.value.kind == "truncated"


def test_member_error_stays_with_the_member() -> None:
    data, expected = VECTORS["records/group_metadata/v3_bad_member"]
    rec = decode_record(data["key"], data["value"])
    assert rec.error is None
    errs = [(m.subscription_error, m.assignment_error) for m in rec.members]
    assert errs[0] == (None, None)
    assert errs[1][0] is not None
    assert errs[1][0].field_path == "members[1].subscription.rack_id"
    assert errs[2][1] is not None and errs[2][1].kind == "unsupported_version"


def test_types_without_layout_and_all_newer_types_are_named() -> None:
    for type_id in range(3, 25):
        rt = RECORD_TYPES[type_id]
        assert rt.name.islower() and rt.name != "unknown"
        rec = decode_record(type_id.to_bytes(2, "big") + b"\x00\x01g", None)
        assert rec.record_type == rt.name and rec.tombstone
    rec = decode_record(b"\x00\x18\x00\x01g", b"\x00\x00\x01")
    assert (
        rec.error is None
        and rec.record_type == "streams_group_target_assignment_resolved_topic_ids"
    )


def test_the_record_type_ids_derived_from_the_table() -> None:
    # The JVM reads keys of these types by byte arithmetic (spark/keys.py): a type joining
    # GROUP_KEYED_TYPES must really start its key with the group.
    from groupwatch.protocol.specs import (
        GROUP_KEYED_TYPES,
        GROUP_METADATA_TYPE,
        OFFSET_COMMIT_TYPES,
        RECORD_TYPE_IDS,
    )

    assert OFFSET_COMMIT_TYPES == (0, 1)
    assert GROUP_METADATA_TYPE == 2
    assert GROUP_KEYED_TYPES == (*range(0, 18), *range(19, 24))
    assert RECORD_TYPE_IDS["OffsetCommit"] == 1 and RECORD_TYPE_IDS["StreamsGroupTopology"] == 23
    assert len(RECORD_TYPE_IDS) == len(RECORD_TYPES)


def test_decode_error_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError):
        DecodeError("oops", "x")


def test_versions_parse() -> None:
    assert 3 in Versions.parse("2+") and 1 not in Versions.parse("2+")
    assert 2 in Versions.parse("1-3") and 4 not in Versions.parse("1-3")
    assert 0 not in Versions.parse("none") and str(Versions.parse("none")) == "none"


def test_specs_match_dataclasses() -> None:
    """Drift guard: every typed struct's dataclass has the spec's fields (plus ``version`` for
    versioned structs); anything else it has is defaulted."""
    from groupwatch.protocol.schema import ArrayOf, StructSpec

    def walk(s: StructSpec) -> None:
        names = {f.name for f in dataclasses.fields(s.cls)}
        spec_names = {f.name for f in s.fields} | ({"version"} if s.versioned else set())
        assert spec_names <= names, s.name
        # extras are fields another use of the same class has (TopicIdPartitions'
        # assignment_epochs): they must default, so this use never has to set them
        for f in dataclasses.fields(s.cls):
            if f.name not in spec_names:
                assert f.default is not dataclasses.MISSING, (s.name, f.name)
        for f in s.fields:
            t = f.type
            while isinstance(t, ArrayOf):
                t = t.element
            if isinstance(t, StructSpec):
                walk(t)

    for rt in RECORD_TYPES.values():
        for spec in (rt.key, rt.value):
            if spec is not None:
                walk(spec.struct)


def test_no_spark_in_the_protocol_package() -> None:
    import pathlib

    import groupwatch.protocol as p

    for f in pathlib.Path(p.__file__).parent.rglob("*.py"):
        text = f.read_text()
        assert "pyspark" not in text and "import delta" not in text, f
