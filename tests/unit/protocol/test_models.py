"""One record vocabulary: every struct the decoder knows has a model class, every record decodes
into its models (share and streams groups too), unknown tagged fields are kept in them, and the
engine reads the same record from a model as from its printed JSON."""

from __future__ import annotations

import dataclasses
import typing
import uuid

import pytest

from groupwatch.detect.findings import Source
from groupwatch.detect.modern.adapt import ROLES, modern_from_record, modern_record
from groupwatch.protocol import decode_record, encode_key, encode_value, to_json_dict
from groupwatch.protocol import models as m
from groupwatch.protocol.codec import UNKNOWN_TAGS
from groupwatch.protocol.schema import ArrayOf, MessageSpec, StructSpec
from groupwatch.protocol.specs import RECORD_TYPES, SHARE_STATE_RECORD_TYPES
from tests.vectors import build, captured

VECTORS = build.stored()


def _structs(s: StructSpec) -> list[StructSpec]:
    out = [s]
    for f in s.fields:
        t = f.type
        while isinstance(t, ArrayOf):
            t = t.element
        if isinstance(t, StructSpec):
            out += _structs(t)
    return out


def _specs() -> list[tuple[int, str, MessageSpec]]:
    return [
        (rt.id, side, spec)
        for rt in RECORD_TYPES.values()
        for side, spec in (("key", rt.key), ("value", rt.value))
        if spec is not None
    ]


@pytest.mark.parametrize(("type_id", "side", "spec"), _specs(), ids=lambda x: str(x))
def test_every_struct_of_every_record_has_a_model(
    type_id: int, side: str, spec: MessageSpec
) -> None:
    flexible = any(v in spec.flexible for v in range(spec.valid.lo, (spec.valid.hi or 0) + 1))
    for s in _structs(spec.struct):
        assert dataclasses.is_dataclass(s.cls), (type_id, side, s.name)
        assert s.cls.__module__ == m.__name__, (type_id, side, s.name)
        params = s.cls.__dataclass_params__  # type: ignore[attr-defined]
        assert params.frozen, s.cls
        # A struct read at a flexible version can carry tags newer than ours: its model keeps
        # them, so that it encodes back to the same bytes.
        assert (UNKNOWN_TAGS in s.cls.__dataclass_fields__) == flexible, (type_id, s.name)


def test_the_record_unions_name_every_key_and_value_model() -> None:
    every = [*RECORD_TYPES.values(), *SHARE_STATE_RECORD_TYPES.values()]
    keys = {rt.key.struct.cls for rt in every if rt.key is not None}
    values = {rt.value.struct.cls for rt in every if rt.value is not None}
    assert set(typing.get_args(m.RecordKey)) == keys
    assert set(typing.get_args(m.RecordValue)) == values
    member_keys = {
        rt.key.struct.cls
        for rt in RECORD_TYPES.values()
        if rt.key is not None
        and [f.name for f in rt.key.struct.fields] == ["group_id", "member_id"]
    }
    assert set(typing.get_args(m.MemberKey)) == member_keys


_SHARE_STREAMS = sorted(
    p for p in VECTORS if p.startswith(("records/share_group_", "records/streams_group_"))
)


def test_there_are_share_and_streams_vectors() -> None:
    # Every share and streams type with a layout but 9, which only 3.9 and 4.0 wrote (below).
    kinds = {p.split("/")[1] for p in _SHARE_STREAMS}
    assert len(kinds) == 12, kinds


def test_a_share_group_partition_metadata_record_decodes_into_its_models() -> None:
    value = m.ShareGroupPartitionMetadataValue(
        topics=(
            m.TopicMetadata(
                topic_id=uuid.UUID(int=7),
                topic_name="orders",
                num_partitions=2,
                partition_metadata=(m.PartitionMetadata(0, ("r1",)),),
            ),
        )
    )
    key = encode_key(m.ShareGroupPartitionMetadataKey("sg"))
    rec = decode_record(key, encode_value(value, 0))
    assert rec.error is None and rec.record_type_id == 9
    assert rec.key == m.ShareGroupPartitionMetadataKey("sg") and rec.group == "sg"
    assert rec.value == value


@pytest.mark.parametrize("path", _SHARE_STREAMS)
def test_share_and_streams_vectors_decode_into_their_models(path: str) -> None:
    data, _ = VECTORS[path]
    key, value = data["key"], data["value"]
    assert key is not None
    rec = decode_record(key, value)
    assert rec.error is None
    assert rec.record_type_id is not None
    rt = RECORD_TYPES[rec.record_type_id]
    assert rt.key is not None and rt.value is not None
    assert type(rec.key) is rt.key.struct.cls
    assert rec.group == rec.key.group_id  # type: ignore[union-attr]
    if value is not None:
        assert type(rec.value) is rt.value.struct.cls


def test_unknown_tags_of_a_streams_record_are_kept_and_written_back() -> None:
    data, _ = VECTORS["records/streams_group_metadata/v0"]
    assert data["value"] is not None
    rec = decode_record(data["key"], data["value"])
    assert isinstance(rec.value, m.StreamsGroupMetadataValue)
    # One tag beyond the two we know (7: two bytes), on the value and on a nested KeyValue.
    configs = rec.value.last_assignment_configs
    assert configs
    extra = dataclasses.replace(
        rec.value,
        last_assignment_configs=(
            dataclasses.replace(configs[0], unknown_tagged_fields=((7, b"\x01\x02"),)),
            *configs[1:],
        ),
        unknown_tagged_fields=((7, b"\x03\x04"),),
    )
    raw = encode_value(extra, 0)
    again = decode_record(data["key"], raw)
    assert again.error is None
    assert again.value == extra
    assert encode_value(again.value, 0) == raw  # type: ignore[arg-type]
    # The JSON view leaves unknown tags out, as before.
    assert to_json_dict(again)["value"] == to_json_dict(rec)["value"]


def _modern_cases() -> list[tuple[bytes, bytes | None]]:
    cases = [
        (data["key"], data["value"])
        for p, (data, _) in sorted(VECTORS.items())
        if p.startswith("records/") and data["key"] is not None
    ]
    for kind in captured.KINDS:
        cases += [(r.key, r.value) for r in captured.load(kind)]
    return [(k, v) for k, v in cases if k is not None]


def test_the_engine_reads_a_model_as_it_reads_its_json() -> None:
    source = Source("__consumer_offsets", 0, 0)
    seen = set()
    for key, value in _modern_cases():
        rec = decode_record(key, value)
        if rec.record_type_id not in ROLES or rec.error is not None:
            continue
        seen.add(rec.record_type_id)
        typed = modern_from_record(rec, "g", source, 1)
        printed = modern_record(to_json_dict(rec), "g", source, 1)
        assert typed == printed, (rec.record_type, key.hex())
    assert {3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23} <= seen, sorted(seen)
