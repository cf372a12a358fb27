"""Kafka's primitive wire encodings, as ``(buf, pos) -> (value, new_pos)`` readers and
``(value, out)`` writers.

These are the only functions that touch raw bytes; everything above them is driven by the schema
tables.  Readers raise :class:`DecodeError` (with the byte offset, empty field path) and nothing
else; writers raise :class:`EncodeError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from groupwatch.protocol.errors import DecodeError, EncodeError

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray], None]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# Kafka's generated readers refuse strings longer than a non-flexible int16 length can say.
MAX_STRING = 0x7FFF


def _fixed(s: struct.Struct, what: str) -> tuple[Reader, Writer]:
    size = s.size
    unpack = s.unpack_from
    pack = s.pack

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        try:
            return unpack(buf, pos)[0], pos + size
        except struct.error as exc:
            raise DecodeError(
                "truncated",
                f"{what} needs {size} bytes, {max(len(buf) - pos, 0)} left",
                byte_offset=pos,
            ) from exc

    def write(value: Any, out: bytearray) -> None:
        try:
            out += pack(value)
        except struct.error as exc:
            raise EncodeError(f"{value!r} does not fit {what}") from exc

    return read, write


read_int8, write_int8 = _fixed(_I8, "int8")
read_int16, write_int16 = _fixed(_I16, "int16")
read_uint16, write_uint16 = _fixed(_U16, "uint16")
read_int32, write_int32 = _fixed(_I32, "int32")
read_int64, write_int64 = _fixed(_I64, "int64")


def read_uuid(buf: bytes, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeError(
            "truncated", f"uuid needs 16 bytes, {max(len(buf) - pos, 0)} left", byte_offset=pos
        )
    return uuid.UUID(bytes=buf[pos:end]), end


def write_uuid(value: uuid.UUID, out: bytearray) -> None:
    out += value.bytes


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint as Kafka's ``ByteUtils.readUnsignedVarint``: at most 5 bytes (32 bits)."""
    start = pos
    value = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise DecodeError("truncated", "varint runs past the end", byte_offset=start)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("invalid_varint", "varint is longer than 5 bytes", byte_offset=start)


def write_uvarint(value: int, out: bytearray) -> None:
    if not 0 <= value <= 0xFFFFFFFF:
        raise EncodeError(f"{value} does not fit an unsigned varint")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _take(buf: bytes, pos: int, length: int, what: str, start: int) -> tuple[bytes, int]:
    end = pos + length
    if end > len(buf):
        raise DecodeError(
            "truncated", f"{what} of {length} bytes, only {len(buf) - pos} left", byte_offset=start
        )
    return buf[pos:end], end


def _utf8(raw: bytes, start: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(
            "invalid_utf8", f"string is not UTF-8: {exc.reason}", byte_offset=start
        ) from exc


# --- strings and bytes: (compact?, nullable?) -> reader/writer --------------------------------


def _read_length(buf: bytes, pos: int, compact: bool, classic: Reader) -> tuple[int, int]:
    """A length prefix: unsigned varint minus one (compact) or the classic signed integer."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    length: int
    length, pos = classic(buf, pos)
    return length, pos


def _null_marker(length: int, nullable: bool, what: str, start: int) -> None:
    """A negative length is the null marker of a nullable field (-1) or an error."""
    if not (nullable and length == -1):
        raise DecodeError(
            "negative_length", f"non-nullable {what} length {length}", byte_offset=start
        )


def _write_length(
    length: int | None,
    out: bytearray,
    compact: bool,
    classic: struct.Struct,
    what: str,
    nullable: bool,
) -> None:
    if length is None and not nullable:
        raise EncodeError(f"null for a non-nullable {what}")
    if compact:
        write_uvarint(0 if length is None else length + 1, out)
    else:
        out += classic.pack(-1 if length is None else length)


def string_codec(compact: bool, nullable: bool) -> tuple[Reader, Writer]:
    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos
        length, pos = _read_length(buf, pos, compact, read_int16)
        if length < 0:
            _null_marker(length, nullable, "string has", start)
            return None, pos
        if length > MAX_STRING:
            raise DecodeError(
                "invalid_length", f"string length {length} exceeds {MAX_STRING}", byte_offset=start
            )
        raw, pos = _take(buf, pos, length, "string", start)
        return _utf8(raw, start), pos

    def write(value: Any, out: bytearray) -> None:
        raw = None if value is None else value.encode("utf-8")
        if raw is not None and len(raw) > MAX_STRING:
            raise EncodeError(f"string of {len(raw)} bytes is longer than {MAX_STRING}")
        _write_length(None if raw is None else len(raw), out, compact, _I16, "string", nullable)
        if raw is not None:
            out += raw

    return read, write


def bytes_codec(compact: bool, nullable: bool) -> tuple[Reader, Writer]:
    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        start = pos
        length, pos = _read_length(buf, pos, compact, read_int32)
        if length < 0:
            _null_marker(length, nullable, "bytes have", start)
            return None, pos
        return _take(buf, pos, length, "bytes", start)

    def write(value: Any, out: bytearray) -> None:
        _write_length(None if value is None else len(value), out, compact, _I32, "bytes", nullable)
        if value is not None:
            out += value

    return read, write


def read_count(buf: bytes, pos: int, compact: bool, nullable: bool) -> tuple[int | None, int]:
    """An array's element count; ``None`` for a null array.

    Like Kafka's generated readers, a count larger than the bytes left is rejected at once (every
    element takes at least one byte), so a corrupt count never makes us allocate a huge list.
    """
    start = pos
    if compact:
        n, pos = read_uvarint(buf, pos)
        count = n - 1
    else:
        count, pos = read_int32(buf, pos)
    if count < 0:
        if nullable and count == -1:
            return None, pos
        raise DecodeError(
            "negative_length", f"non-nullable array has count {count}", byte_offset=start
        )
    if count > len(buf) - pos:
        raise DecodeError(
            "truncated",
            f"array of {count} elements, only {len(buf) - pos} bytes left",
            byte_offset=start,
        )
    return count, pos


def write_count(count: int | None, out: bytearray, compact: bool) -> None:
    if compact:
        write_uvarint(0 if count is None else count + 1, out)
    else:
        out += _I32.pack(-1 if count is None else count)
