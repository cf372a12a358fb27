"""The JVM-side key reader agrees with the decoder, key for key.

The decoder is checked against Kafka's own serialisers (``tests/oracle``); here the Spark SQL
expressions that keep offset commits out of Python must read the same keys the same way, and
must call malformed exactly the commit keys the decoder rejects, so that those go to Python to
be quarantined instead of being dropped.
"""

from __future__ import annotations

import struct

import pytest

from groupwatch.protocol import decode_key
from groupwatch.protocol.errors import DecodeError
from groupwatch.spark import keys

pytestmark = pytest.mark.spark


def kstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack(">h", len(b)) + b


def commit(group: str | bytes, topic: str | bytes, partition: int, kind: int = 1) -> bytes:
    return struct.pack(">h", kind) + kstr(group) + kstr(topic) + struct.pack(">i", partition)


COMMIT_KEYS = [
    commit("orders-etl", "pay", 7),
    commit("old", "t", 2147483647, kind=0),
    commit("grüppe", "töpic", 0),
    commit("", "", 3),  # empty names are valid strings
    commit("g", "t", 5) + b"\x00",  # a byte after the partition
    commit("g", "t", 5)[:-1],  # partition cut short
    struct.pack(">h", 1) + kstr("cut") + b"\x00",  # topic length cut short
    struct.pack(">h", 1) + struct.pack(">h", 40) + b"short" + kstr("t") + b"\x00\x00\x00\x01",
    struct.pack(">h", 1) + struct.pack(">h", -1) + kstr("t") + b"\x00\x00\x00\x01\x00\x00",
    commit(b"\xff\xfe", "t", 1),  # group not UTF-8
    commit("g", b"\xc3", 1),  # topic not UTF-8 (a cut two-byte sequence)
    commit(b"\xed\xa0\x80", "t", 1),  # an encoded surrogate is not UTF-8 either
    commit("g", b"\xc0\xaf", 1),  # nor an overlong encoding
    b"\x00\x01",  # a type and nothing else
    b"\x00\x01\x00\x01g\x00\x01t",  # ten bytes short of nothing but the partition
]


def python_view(key: bytes) -> tuple[str, str, int] | None:
    try:
        _, k = decode_key(key)
    except DecodeError:
        return None
    return (k.group, k.topic, k.partition)


def test_record_type_and_group(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [
        (commit("orders-etl", "pay", 7),),
        (struct.pack(">h", 2) + kstr("grüppe"),),
        (struct.pack(">h", 3) + b"\x00\x07group-x\x00",),  # a byte too many: still routed
        (b"\x00",),  # truncated: nulls, never an exception in the query
        (struct.pack(">h", 2) + kstr(b"\xff\xfe"),),  # not UTF-8: null, no exception either
    ]
    df = spark.createDataFrame(rows, "key binary")
    out = df.select(keys.record_type(df.key), keys.group_id(df.key)).collect()
    assert [tuple(r) for r in out] == [
        (1, "orders-etl"),
        (2, "grüppe"),
        (3, "group-x"),
        (None, None),
        (2, None),
    ]


def modern(type_id: int, group: str | bytes, *more: str) -> bytes:
    return struct.pack(">h", type_id) + kstr(group) + b"".join(kstr(m) for m in more)


#: One key of every type with a released layout after the classic ones, as the broker writes
#: them (member and regex keys carry a second string after the group).
MEMBER_KEYED = {5, 7, 8, 10, 13, 14, 16, 19, 21, 22}
MODERN_KEYS = [
    modern(t, f"grp-{t}-ü", *(["member-1"] if t in MEMBER_KEYED else []))
    for t in (*range(3, 18), *range(19, 24))
]


def decoder_group(key: bytes) -> str:
    _, k = decode_key(key)
    group = k["group_id"] if isinstance(k, dict) else k.group_id
    assert isinstance(group, str)
    return group


def test_modern_keys_are_routed_to_the_group_the_decoder_reads(spark) -> None:  # type: ignore[no-untyped-def]
    unrouted = [
        modern(18, "grp-18"),  # no released layout: the decoder names no group either
        modern(24, "grp-24"),
        modern(8, b"\xff\xfe", "member-1"),  # not UTF-8
        struct.pack(">h", 8) + b"\x00",  # the group's length cut short
    ]
    df = spark.createDataFrame([(k,) for k in MODERN_KEYS + unrouted], "key binary")
    out = {
        bytes(r.key): r.group
        for r in df.select("key", keys.group_id(df.key).alias("group")).collect()
    }
    assert {k: out[k] for k in MODERN_KEYS} == {k: decoder_group(k) for k in MODERN_KEYS}
    assert len(MODERN_KEYS) == 20 and all(out[k] for k in MODERN_KEYS)
    assert [out[k] for k in unrouted] == [None, None, None, None]


def test_commit_keys_read_as_the_decoder_reads_them(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(k,) for k in COMMIT_KEYS], "key binary")
    prefix = keys.commit_prefix(F.col("key"))
    out = df.select(
        "key",
        keys.prefix_group(prefix).alias("group"),
        keys.prefix_topic(prefix).alias("topic"),
        keys.partition_of(keys.commit_partition_bytes(F.col("key"))).alias("partition"),
    ).collect()
    jvm = {
        bytes(r.key): (r.group, r.topic, r.partition)
        if r.group is not None and r.topic is not None
        else None
        for r in out
    }
    python = {k: python_view(k) for k in COMMIT_KEYS}
    assert jvm == python
    # Both kinds are present, so the comparison covers acceptance and rejection.
    assert sum(v is None for v in python.values()) >= 8
    assert sum(v is not None for v in python.values()) == 4


def test_highest_partition_from_raw_bytes(spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    partitions = [0, 9, 255, 256, 70000, 2147483647, -1, 12]
    df = spark.createDataFrame([(commit("g", "t", p),) for p in partitions], "key binary")
    top = df.groupBy(keys.commit_prefix(F.col("key"))).agg(
        keys.partition_of(F.max(keys.commit_partition_bytes(F.col("key")))).alias("p")
    )
    # A negative partition (no Kafka partition is) never wins, as before the byte-wise max.
    assert [r.p for r in top.collect()] == [2147483647]
