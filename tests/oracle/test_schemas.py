"""Our schema tables against the wire layouts of Kafka's generated record classes.

Kafka's ``SCHEMAS`` of every record key and value version (and of the embedded consumer
protocol) must equal ours field for field: names, order, types (classic or compact), nullability,
tags and nested structs. The encoding details the layouts do not show (how a null struct in a
tagged field is marked, what an unwritten tagged field reads as) are covered by the vectors and
the captured corpus.

Each of the project's Kafka releases is asked (4.3.1 and 4.4.0). Our tables are the newest
release's; a tagged field a later release added to a version (4.4.0's topology-description
epochs of ``StreamsGroupMetadataValue`` v0) is allowed to be unknown to an older release, as
Kafka's flexible versions allow: an older reader skips it.
"""

from __future__ import annotations

from typing import Any

import pytest

from groupwatch.protocol.schema import ArrayOf, MessageSpec, Prim, StructSpec, TypeSpec
from groupwatch.protocol.specs import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
)
from groupwatch_dev.broker import KAFKA_VERSIONS, NEWEST_KAFKA_VERSION
from tests.vectors import build

pytestmark = pytest.mark.oracle

#: Tagged fields our tables have that an older release's classes lack, by release: (record type
#: id, value version) -> field names. Nothing else may differ.
_ADDED_AFTER: dict[str, dict[tuple[int, int], set[str]]] = {
    "4.3.1": {
        (17, 0): {"stored_description_topology_epoch", "failed_description_topology_epoch"},
    },
}

_FIXED = {
    Prim.INT8: "INT8",
    Prim.INT16: "INT16",
    Prim.UINT16: "UINT16",
    Prim.INT32: "INT32",
    Prim.INT64: "INT64",
    Prim.UUID: "UUID",
}


def _type(t: TypeSpec, version: int, flexible: bool, nullable: bool) -> dict[str, Any]:
    if isinstance(t, Prim):
        if t in _FIXED:
            return {"nullable": False, "prim": _FIXED[t]}
        name = ("COMPACT_" if flexible else "") + ("NULLABLE_" if nullable else "")
        return {"nullable": nullable, "prim": name + ("STRING" if t is Prim.STRING else "BYTES")}
    if isinstance(t, ArrayOf):
        return {"nullable": nullable, "array": _type(t.element, version, flexible, False)}
    return _struct(t, version, flexible, nullable)


def _struct(s: StructSpec, version: int, flexible: bool, nullable: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"nullable": nullable, "struct": [], "tagged": {}}
    if flexible:
        out["flexible"] = True
    for f in s.fields:
        if version not in f.versions:
            continue
        entry = {"name": f.name, "type": _type(f.type, version, flexible, version in f.nullable)}
        if f.tag is None:
            out["struct"].append(entry)
        else:
            out["tagged"][str(f.tag)] = entry
    return out


def layout(spec: MessageSpec, version: int) -> dict[str, Any]:
    return _struct(spec.struct, version, version in spec.flexible, False)


def _as_of(ours: dict[str, Any], added: set[str]) -> dict[str, Any]:
    """Our top-level layout less the tagged fields a later release added."""
    tagged = {t: e for t, e in ours["tagged"].items() if e["name"] not in added}
    return {**ours, "tagged": tagged}


@pytest.fixture(scope="module", params=KAFKA_VERSIONS, ids=lambda v: f"kafka-{v}")
def release(request: pytest.FixtureRequest) -> str:
    version: str = request.param
    return version


@pytest.fixture(scope="module")
def kafka(release: str) -> dict[str, Any]:
    [answer] = build.java_harness([{"op": "schemas"}], kafka_version=release)
    assert "error" not in answer, answer
    return answer


def test_every_record_type_kafka_knows_is_ours_field_for_field(
    kafka: dict[str, Any], release: str
) -> None:
    added_after = _ADDED_AFTER.get(release, {})
    diffs = []
    for type_id, theirs in kafka["record_types"].items():
        rt = RECORD_TYPES.get(int(type_id))
        if rt is None or rt.key is None or rt.value is None:
            diffs.append(f"type {type_id} ({theirs['name']}): we cannot decode it")
            continue
        if layout(rt.key, 0) != theirs["key"]:
            diffs.append(f"type {type_id} key: Kafka {theirs['key']} != ours {layout(rt.key, 0)}")
        versions = {int(v) for v in theirs["values"]}
        ours = {v for v in range(rt.value.valid.lo, (rt.value.valid.hi or 0) + 1)}
        if type_id == "0":
            # documented difference: type 0 values are read at any OffsetCommitValue version,
            # as brokers before 4.1 did; 4.1+ read only v0 there
            versions |= ours
        if versions != ours:
            diffs.append(f"type {type_id}: Kafka reads versions {versions}, we {ours}")
        for v, their_layout in theirs["values"].items():
            added = added_after.get((int(type_id), int(v)), set())
            ours_then = _as_of(layout(rt.value, int(v)), added)
            if int(v) in rt.value.valid and ours_then != their_layout:
                diffs.append(
                    f"type {type_id} value v{v}:\n Kafka {their_layout}\n ours  {ours_then}"
                )
            if added and release != NEWEST_KAFKA_VERSION:
                # What the older release lacks is exactly what we add, and all of it is tagged.
                assert {e["name"] for e in layout(rt.value, int(v))["tagged"].values()} >= added
    assert not diffs, "\n".join(diffs)


def test_share_state_record_types_are_kafkas_field_for_field(kafka: dict[str, Any]) -> None:
    theirs_all = kafka["share_state_record_types"]
    assert {int(t) for t in theirs_all} == set(SHARE_STATE_RECORD_TYPES)
    for type_id, theirs in theirs_all.items():
        rt = SHARE_STATE_RECORD_TYPES[int(type_id)]
        assert rt.key is not None and rt.value is not None
        assert layout(rt.key, 0) == theirs["key"], type_id
        hi = rt.value.valid.hi
        assert hi is not None
        assert {int(v) for v in theirs["values"]} == set(range(rt.value.valid.lo, hi + 1))
        for v, their_layout in theirs["values"].items():
            assert layout(rt.value, int(v)) == their_layout, f"type {type_id} value v{v}"


def test_we_know_no_record_type_kafka_has_dropped(kafka: dict[str, Any]) -> None:
    # Types Kafka 4.3.1 and 4.4.0 no longer have are decoded from older releases' layouts; name
    # them here so that a new disappearance is noticed (9: ShareGroupPartitionMetadata, 3.9-4.0;
    # 18 and 24 are known by name only).
    ours = {t for t, rt in RECORD_TYPES.items() if rt.value is not None}
    assert ours - {int(t) for t in kafka["record_types"]} == {9}


@pytest.mark.parametrize(
    ("name", "spec"),
    [
        ("consumer_protocol_subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
        ("consumer_protocol_assignment", CONSUMER_PROTOCOL_ASSIGNMENT),
    ],
)
def test_consumer_protocol_layouts(kafka: dict[str, Any], name: str, spec: MessageSpec) -> None:
    theirs = kafka[name]
    assert {int(v) for v in theirs} == set(range(spec.valid.lo, (spec.valid.hi or 0) + 1))
    for v, their_layout in theirs.items():
        assert layout(spec, int(v)) == their_layout, f"{name} v{v}"
