"""The JVM-side key reader agrees with the key layout, byte for byte."""

from __future__ import annotations

import struct

import pytest

from groupwatch.spark import keys

pytestmark = pytest.mark.spark


def kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def test_keys_are_taken_apart_in_the_jvm(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [
        (struct.pack(">h", 1) + kstr("orders-etl") + kstr("pay") + struct.pack(">i", 7),),
        (struct.pack(">h", 0) + kstr("old") + kstr("t") + struct.pack(">i", 2147483647),),
        (struct.pack(">h", 2) + kstr("grüppe"),),
        (struct.pack(">h", 3) + b"\x07group-x\x00",),
        (b"\x00",),  # truncated: nulls, never an exception in the query
        (struct.pack(">h", 1) + kstr("cut") + b"\x00",),
    ]
    df = spark.createDataFrame(rows, "key binary")
    out = df.select(
        keys.record_type(df.key).alias("type"),
        keys.group_id(df.key).alias("group"),
        keys.commit_topic(df.key).alias("topic"),
        keys.commit_partition(df.key).alias("partition"),
    ).collect()
    assert [tuple(r) for r in out] == [
        (1, "orders-etl", "pay", 7),
        (0, "old", "t", 2147483647),
        (2, "grüppe", None, None),
        (3, None, None, None),
        (None, None, None, None),
        (1, "cut", None, None),
    ]
