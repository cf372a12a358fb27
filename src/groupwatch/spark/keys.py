"""Reading ``__consumer_offsets`` keys in the JVM, so Python never sees most records.

Offset commits are most of the topic's volume. Their keys (record types 0 and 1), group
metadata keys (type 2) and the keys of the KIP-848, share and streams records (types 3-17 and
19-23) are never flexible: an int16 record type, then int16-length strings, the group first,
and, for commits, an int32 partition. Spark SQL can take them apart with byte arithmetic, which
keeps offset commits out of the Python workers entirely and hands every other record to Python
already grouped by its consumer group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupwatch.protocol.specs import GROUP_KEYED_TYPES

if TYPE_CHECKING:
    from pyspark.sql import Column


def _uint(key: Column, pos: Column | int, width: int) -> Column:
    """An unsigned big-endian integer of ``width`` bytes at 1-based ``pos`` (null if short)."""
    from pyspark.sql import functions as F

    pos_col = F.lit(pos) if isinstance(pos, int) else pos
    raw = key.substr(pos_col, F.lit(width))
    return F.when(F.length(raw) == width, F.conv(F.hex(raw), 16, 10).cast("long"))


def record_type(key: Column) -> Column:
    """The int16 record type (key version before Kafka 4.1) that starts every key."""
    return _uint(key, 1, 2).cast("int")


def group_id(key: Column) -> Column:
    """The group of a key of one of :data:`GROUP_KEYED_TYPES` (null for other types, and when
    the group is not valid UTF-8): the group a record is routed to, even if the rest of its key
    turns out malformed (the decoder then quarantines it under that group)."""
    from pyspark.sql import functions as F

    length = _uint(key, 3, 2)
    return F.when(
        record_type(key).isin(*GROUP_KEYED_TYPES),
        _utf8(key.substr(F.lit(5), length.cast("int"))),
    )


def share_group_id(key: Column) -> Column:
    """The group of a ``__share_group_state`` key (ShareSnapshotKey, ShareUpdateKey: an int16
    record type 0 or 1, then the group as an int16-length string, the topic id and the
    partition), null for other types and when the group is not valid UTF-8."""
    from pyspark.sql import functions as F

    length = _uint(key, 3, 2)
    return F.when(record_type(key).isin(0, 1), _utf8(key.substr(F.lit(5), length.cast("int"))))


# --- offset commits, aggregated before they are parsed ------------------------------------------
# A commit key is type(2) | group length(2) | group | topic length(2) | topic | partition(4). Its
# bytes between the type and the partition (the "prefix") name the (group, topic) it counts for, so
# commits are grouped by those raw bytes and only the few aggregated prefixes are parsed and
# checked: per-row string decoding was most of the aggregation's cost.


def commit_prefix(key: Column) -> Column:
    """The bytes between record type and partition (null for a key too short to hold both)."""
    from pyspark.sql import functions as F

    n = F.octet_length(key)
    return F.when(n >= 10, key.substr(F.lit(3), n - 6))


def commit_partition_bytes(key: Column) -> Column:
    """The last four bytes of a commit key (its partition), null for a negative partition.

    Big-endian non-negative int32s order as their bytes do, so the highest partition is the
    maximum of these bytes; Kafka has no negative partitions.
    """
    from pyspark.sql import functions as F

    last = key.substr(F.lit(-4), F.lit(4))
    return F.when((F.octet_length(key) >= 10) & (last < F.lit(bytearray(b"\x80"))), last)


def _utf8(raw: Column) -> Column:
    """``raw`` as text, or null if it is not valid UTF-8 (Spark's ``decode`` would fail the
    whole query on such bytes, and a key must never do that)."""
    from pyspark.sql import functions as F

    return F.try_validate_utf8(raw.cast("string"))


def _prefix_lengths(prefix: Column) -> tuple[Column, Column]:
    """The group and topic lengths a commit prefix declares (read unsigned)."""
    glen = _uint(prefix, 1, 2)
    return glen, _uint(prefix, (glen + 3).cast("int"), 2)


def prefix_group(prefix: Column) -> Column:
    """The group of a commit prefix, null unless the prefix is well formed."""
    from pyspark.sql import functions as F

    glen, _ = _prefix_lengths(prefix)
    return F.when(prefix_ok(prefix), _utf8(prefix.substr(F.lit(3), glen.cast("int"))))


def prefix_topic(prefix: Column) -> Column:
    """The topic of a commit prefix, null unless the prefix is well formed."""
    from pyspark.sql import functions as F

    glen, tlen = _prefix_lengths(prefix)
    return F.when(prefix_ok(prefix), _utf8(prefix.substr((glen + 5).cast("int"), tlen.cast("int"))))


def prefix_ok(prefix: Column) -> Column:
    """Both lengths are within the prefix and add up to it exactly (as the decoder requires:
    no string may run past the key, no bytes may be left after the partition)."""
    from pyspark.sql import functions as F

    glen, tlen = _prefix_lengths(prefix)
    # Lengths are read unsigned; a negative int16 (>= 32768 here) is malformed, as the
    # decoder says, even where it would add up.
    fits = (glen < 0x8000) & (tlen < 0x8000) & (F.octet_length(prefix) == glen + tlen + 4)
    return F.coalesce(fits, F.lit(False))


def partition_of(raw: Column) -> Column:
    """The int32 of four big-endian bytes (from :func:`commit_partition_bytes`)."""
    return _uint(raw, 1, 4).cast("int")
