"""``newer_record_version``: a record written by a newer Kafka than groupwatch knows.

The decoder reads such a value by the fields it knows (:class:`~groupwatch.protocol.NewerVersion`)
and the engine judges it like any other record; this finding says so, once per group, record
type and version, so that an upgrade of the brokers is seen and groupwatch's own upgrade follows.
"""

from __future__ import annotations

from groupwatch.detect.findings import Finding, Source

__all__ = ["newer_version_finding"]


def newer_version_finding(
    group: str,
    record_type: str,
    record_type_id: int | None,
    version: int,
    read_as: int,
    unread: bytes,
    source: Source,
) -> Finding:
    """The info finding of one record whose value's ``version`` is newer than ``read_as``, the
    newest groupwatch knows for ``record_type``; ``unread``: the bytes after the known fields."""
    left = (
        f"; {len(unread)} bytes after them left unread"
        if unread
        else "; the bytes are exactly that version's layout"
    )
    return Finding(
        kind="newer_record_version",
        group=group,
        generation=None,
        detail=f"record at {source.topic}/{source.partition}@{source.offset} was written by a "
        f"newer Kafka: {record_type} value version {version}, groupwatch knows up to "
        f"version {read_as}; read by the fields of version {read_as}{left}",
        source=source,
        evidence={
            "record_type": record_type,
            "record_type_id": record_type_id,
            "version": version,
            "known_version": read_as,
            "unread_bytes": len(unread),
            "unread_hex": unread.hex(),
        },
        # One per group, record type and version: a newer broker writes every record so.
        id_extra=f"{record_type}/v{version}",
    )
