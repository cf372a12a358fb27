"""Hadoop's sidecar checksum as ``groupwatch.delta.checksum`` reads it (the real sidecars,
written by Spark, are ``tests/integration/test_checkpoint_checksum.py``'s)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from groupwatch.delta import checksum


def _sidecar(data: bytes, chunk: int = 512) -> bytes:
    sums = [zlib.crc32(data[i : i + chunk]) for i in range(0, len(data), chunk)]
    return b"crc\0" + struct.pack(">i", chunk) + b"".join(struct.pack(">I", s) for s in sums)


def test_a_sidecar_of_several_chunks_verifies_and_any_change_does_not() -> None:
    data = bytes(range(256)) * 5  # three chunks of 512, the last short
    crc = _sidecar(data)
    assert checksum.verifies(data, crc)
    assert not checksum.verifies(data[:-1], crc)
    assert not checksum.verifies(data + b"x", crc)
    assert not checksum.verifies(data[:100] + b"?" + data[101:], crc)
    assert not checksum.verifies(data, crc[:-4])


def test_what_is_not_a_sidecar_never_verifies() -> None:
    data = b'{"version":14,"size":20}'
    assert not checksum.verifies(data, b"")
    assert not checksum.verifies(data, b"crc\0")
    assert not checksum.verifies(data, b"CRC\0" + _sidecar(data)[4:])
    assert not checksum.verifies(data, b"crc\0" + struct.pack(">i", 0))


def test_forget_stale_removes_only_a_sidecar_that_fails(tmp_path: Path) -> None:
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    last = log / "_last_checkpoint"
    assert checksum.forget_stale(tmp_path / "t") is False  # no checkpoint yet
    last.write_bytes(b'{"version":10}')
    assert checksum.forget_stale(tmp_path / "t") is False  # no sidecar
    checksum.sidecar(last).write_bytes(_sidecar(last.read_bytes()))
    assert checksum.forget_stale(tmp_path / "t") is False
    assert checksum.sidecar(last).exists()
    last.write_bytes(b'{"version":20}')
    assert checksum.forget_stale(str(tmp_path / "t")) is True
    assert not checksum.sidecar(last).exists()


def test_a_table_on_an_object_store_is_left_alone(tmp_path: Path) -> None:
    assert checksum.forget_stale("s3a://bucket/delta/findings") is False
