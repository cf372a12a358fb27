"""Hypothesis strategies derived from the schema tables themselves, so every record type and
version gets generated values without a hand-written strategy per struct.

Tagged fields avoid Kafka's defaults (0, -1, the nil uuid, empty arrays): Kafka does not write
a tagged field that equals its default, so such a value could not survive a trip through
Kafka's serialiser.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from groupwatch.protocol.codec import UNKNOWN_TAGS
from groupwatch.protocol.models import TopicPartitions
from groupwatch.protocol.schema import ArrayOf, FieldSpec, MessageSpec, Prim, StructSpec
from groupwatch.protocol.specs import RECORD_TYPES
from groupwatch.protocol.user_data import StickyUserData

MAX_ITEMS = 3

_INTS = {
    Prim.INT8: st.integers(-(2**7), 2**7 - 1),
    Prim.INT16: st.integers(-(2**15), 2**15 - 1),
    Prim.UINT16: st.integers(0, 2**16 - 1),
    Prim.INT32: st.integers(-(2**31), 2**31 - 1),
    Prim.INT64: st.integers(-(2**63), 2**63 - 1),
}


def _prim(p: Prim, tagged: bool) -> st.SearchStrategy[Any]:
    if p in _INTS:
        s = _INTS[p]
        return s.filter(lambda v: v not in (0, -1)) if tagged else s
    if p is Prim.UUID:
        return (
            st.uuids(allow_nil=False)
            if tagged
            else st.uuids(allow_nil=True) | st.just(uuid.UUID(int=0))
        )
    if p is Prim.STRING:
        return st.text(max_size=12)
    return st.binary(max_size=24)


def _type(t: Any, version: int, tagged: bool = False) -> st.SearchStrategy[Any]:
    if isinstance(t, Prim):
        return _prim(t, tagged)
    if isinstance(t, ArrayOf):
        # Kafka's default for a tagged array is empty, and an empty one is not written.
        return st.lists(
            _type(t.element, version), min_size=1 if tagged else 0, max_size=MAX_ITEMS
        ).map(tuple)
    return struct_values(t, version)


def _field(f: FieldSpec, version: int) -> st.SearchStrategy[Any]:
    if version not in f.versions:
        return st.just(f.default)
    s = _type(f.type, version, tagged=f.tag is not None)
    if f.tag is not None and isinstance(f.type, StructSpec):
        # ... and a tagged struct whose fields are all defaults counts as unset too.
        blank = f.type.cls(**{g.name: g.default for g in f.type.fields})
        s = s.filter(lambda v: v != blank)
    if f.tag is not None and f.default is not None and version not in f.nullable:
        # A tagged field with a default (-1 for a share state's delivery-complete count): unset
        # or a value.
        return st.just(f.default) | s
    if f.tag is not None and f.default is not None:
        # A nullable tagged field with a non-null default: unset, a written null, or a value.
        return st.just(f.default) | st.none() | s
    if f.tag is not None or version in f.nullable:
        return st.none() | s
    return s


def struct_values(s: StructSpec, version: int) -> st.SearchStrategy[Any]:
    fields = {f.name: _field(f, version) for f in s.fields}
    if s.versioned:
        fields["version"] = st.just(version)
    return st.builds(s.cls, **fields)


def message_values(spec: MessageSpec, version: int) -> st.SearchStrategy[Any]:
    return struct_values(spec.struct, version)


def versions(spec: MessageSpec) -> list[int]:
    hi = spec.valid.hi
    assert hi is not None
    return list(range(spec.valid.lo, hi + 1))


# (record type id, value version) for every decodable pair; type 0 shares type 1's specs.
RECORD_CASES = [
    (rt.id, v)
    for rt in RECORD_TYPES.values()
    if rt.value is not None and rt.id != 0
    for v in versions(rt.value)
]


def records(type_id: int, version: int) -> st.SearchStrategy[tuple[Any, Any]]:
    rt = RECORD_TYPES[type_id]
    assert rt.key is not None and rt.value is not None
    return st.tuples(message_values(rt.key, 0), message_values(rt.value, version))


topic_partitions = st.builds(
    TopicPartitions,
    topic=st.text(max_size=8),
    partitions=st.lists(st.integers(-(2**31), 2**31 - 1), max_size=4).map(tuple),
)
sticky_user_data = st.builds(
    StickyUserData,
    version=st.just(1),
    previous_assignment=st.lists(topic_partitions, max_size=3).map(tuple),
    generation=st.integers(-(2**31), 2**31 - 1),
) | st.builds(
    StickyUserData,
    version=st.just(0),
    previous_assignment=st.lists(topic_partitions, max_size=3).map(tuple),
    generation=st.none(),
)

__all__ = ["RECORD_CASES", "UNKNOWN_TAGS", "message_values", "records", "sticky_user_data"]


@st.composite
def corrupted(draw: st.DrawFn, data: bytes, min_ops: int = 1, max_ops: int = 4) -> bytes:
    """``data`` after a few random byte flips, cuts, insertions and deletions."""
    out = bytearray(data)
    for _ in range(draw(st.integers(min_ops, max_ops))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "delete"]))
        pos = draw(st.integers(0, len(out)))
        if op == "flip" and pos < len(out):
            out[pos] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del out[pos:]
        elif op == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and pos < len(out):
            del out[pos]
    return bytes(out)
