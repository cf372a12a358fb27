"""Reading ``__consumer_offsets`` keys in the JVM, so Python never sees most records.

Offset commits are most of the topic's volume. Their keys (record types 0 and 1) and group
metadata keys (type 2) are never flexible: an int16 record type, then int16-length strings and,
for commits, an int32 partition. Spark SQL can take them apart with byte arithmetic, which keeps
offset commits out of the Python workers entirely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column

OFFSET_COMMIT_TYPES = (0, 1)
GROUP_METADATA_TYPE = 2


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
    """The group of a type 0, 1 or 2 key (null for newer types, which Python decodes)."""
    from pyspark.sql import functions as F

    length = _uint(key, 3, 2)
    return F.when(
        record_type(key).isin(*OFFSET_COMMIT_TYPES, GROUP_METADATA_TYPE),
        F.decode(key.substr(F.lit(5), length.cast("int")), "UTF-8"),
    )


def commit_topic(key: Column) -> Column:
    """The topic of an offset-commit key."""
    from pyspark.sql import functions as F

    glen = _uint(key, 3, 2)
    tlen = _uint(key, (glen + 5).cast("int"), 2)
    return F.when(
        record_type(key).isin(*OFFSET_COMMIT_TYPES),
        F.decode(key.substr((glen + 7).cast("int"), tlen.cast("int")), "UTF-8"),
    )


def commit_partition(key: Column) -> Column:
    """The partition of an offset-commit key."""
    from pyspark.sql import functions as F

    glen = _uint(key, 3, 2)
    tlen = _uint(key, (glen + 5).cast("int"), 2)
    return F.when(
        record_type(key).isin(*OFFSET_COMMIT_TYPES),
        _uint(key, (glen + tlen + 7).cast("int"), 4).cast("int"),
    )
