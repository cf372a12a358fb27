"""The Hadoop checksum of ``_last_checkpoint`` that a delta-rs commit leaves stale, removed.

On a local file system Spark writes through Hadoop's checksummed file system: beside each file
it writes a hidden ``.<name>.crc`` holding a CRC-32 of every 512 bytes, and checks a file
against it on every read.  Delta's log files are written once, except ``_last_checkpoint``,
which each new checkpoint overwrites.  delta-rs writes checkpoints too (its commits do at the
table's ``delta.checkpointInterval``) and knows nothing of the sidecar, so after a delta-rs
checkpoint on a table Spark had checkpointed before, the sidecar describes a file that is no
longer there.  Spark then fails to read ``_last_checkpoint`` ("Checksum error"), tries three
more times a second apart and falls back to listing the log: about 4 s per table on each load,
a dozen tables at every start of the job, and the same for an analyst's Spark session.

A file without its sidecar is read unchecked, and Spark writes a fresh one with its next
checkpoint; so every delta-rs commit on a local table is followed by :func:`forget_stale`,
which removes the sidecar only when it does not verify: a sidecar that matches is Spark's own,
and left alone.  Object stores have no sidecars.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

#: The sidecar's header: magic, then the chunk size as a big-endian int.
_MAGIC = b"crc\0"
_HEADER = struct.Struct(">4si")
_CHECKSUM = struct.Struct(">I")


def sidecar(path: Path) -> Path:
    """The Hadoop checksum file of ``path``."""
    return path.with_name(f".{path.name}.crc")


def verifies(data: bytes, crc: bytes) -> bool:
    """Whether the sidecar ``crc`` holds the CRC-32 of each chunk of ``data`` (False for a
    sidecar that is not one)."""
    if len(crc) < _HEADER.size:
        return False
    magic, chunk = _HEADER.unpack_from(crc)
    if magic != _MAGIC or chunk <= 0:
        return False
    stored = [
        _CHECKSUM.unpack_from(crc, offset)[0]
        for offset in range(_HEADER.size, len(crc) - _CHECKSUM.size + 1, _CHECKSUM.size)
    ]
    computed = [zlib.crc32(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    return stored == computed


def forget_stale(table: str | Path) -> bool:
    """Remove the sidecar of the local table's ``_delta_log/_last_checkpoint`` if it does not
    verify; whether it did.  A path with a scheme other than ``file`` is left alone."""
    text = str(table)
    if "://" in text:
        if not text.startswith("file://"):
            return False
        text = text.removeprefix("file://")
    last = Path(text) / "_delta_log" / "_last_checkpoint"
    crc = sidecar(last)
    try:
        # The sidecar first: after its first removal a table has none, and that is all the
        # check after each commit then reads.
        held = crc.read_bytes()
        if verifies(last.read_bytes(), held):
            return False
        crc.unlink()
    except FileNotFoundError:  # no checkpoint yet, no sidecar, or another writer's race
        return False
    return True
