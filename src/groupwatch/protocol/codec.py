"""The interpreter: turns a :class:`MessageSpec` at one version into a reader and a writer.

Compilation happens once per (message, version) and is cached, so the version logic ("is this
field in v2?", "compact or classic string?") is evaluated at build time and decoding is a flat
loop of primitive readers.  The same compiled field list drives both directions, which is what
keeps encode and decode symmetric.
"""

from __future__ import annotations

import functools
from typing import Any

from groupwatch.protocol import _wire as w
from groupwatch.protocol import generated
from groupwatch.protocol.errors import DecodeError, EncodeError
from groupwatch.protocol.schema import ArrayOf, FieldSpec, MessageSpec, Prim, StructSpec, TypeSpec

Reader = w.Reader
Writer = w.Writer

_FIXED: dict[Prim, tuple[Reader, Writer]] = {
    Prim.INT8: (w.read_int8, w.write_int8),
    Prim.INT16: (w.read_int16, w.write_int16),
    Prim.UINT16: (w.read_uint16, w.write_uint16),
    Prim.INT32: (w.read_int32, w.write_int32),
    Prim.INT64: (w.read_int64, w.write_int64),
    Prim.UUID: (w.read_uuid, w.write_uuid),
}

UNKNOWN_TAGS = "unknown_tagged_fields"


def _compile_type(
    t: TypeSpec, version: int, flexible: bool, nullable: bool, *, tagged: bool = False
) -> tuple[Reader, Writer]:
    if isinstance(t, Prim):
        if t is Prim.STRING:
            return w.string_codec(flexible, nullable)
        if t is Prim.BYTES:
            return w.bytes_codec(flexible, nullable)
        return _FIXED[t]
    if isinstance(t, ArrayOf):
        return _compile_array(t, version, flexible, nullable)
    rw = _compile_struct(t, version, flexible)
    if not nullable:
        return rw
    return _tagged_nullable_struct(*rw) if tagged else _nullable_struct(*rw)


def _nullable_struct(read_struct: Reader, write_struct: Writer) -> tuple[Reader, Writer]:
    """A nullable struct field in the body: an int8 marker first (negative = null, else
    present), as Kafka's generator writes them."""

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        marker, pos = w.read_int8(buf, pos)
        if marker < 0:
            return None, pos
        return read_struct(buf, pos)

    def write(value: Any, out: bytearray) -> None:
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        write_struct(value, out)

    return read, write


def _tagged_nullable_struct(read_struct: Reader, write_struct: Writer) -> tuple[Reader, Writer]:
    """A nullable struct in a tagged field: Kafka's generator marks it with an unsigned varint,
    not an int8 -- 0 for null (the whole tagged payload is then the one byte ``00``), 1 before
    a present struct.  Its reader takes the varint as a Java int and calls anything but a
    positive value null, so a marker with bit 31 set is null too."""

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        marker, pos = w.read_uvarint(buf, pos)
        if not 0 < marker & 0xFFFFFFFF < 0x80000000:
            return None, pos
        return read_struct(buf, pos)

    def write(value: Any, out: bytearray) -> None:
        if value is None:
            out.append(0)
            return
        out.append(1)
        write_struct(value, out)

    return read, write


def _compile_array(
    t: ArrayOf, version: int, flexible: bool, nullable: bool
) -> tuple[Reader, Writer]:
    read_elem, write_elem = _compile_type(t.element, version, flexible, False)
    read_count = w.read_count

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        count, pos = read_count(buf, pos, flexible, nullable)
        if count is None:
            return None, pos
        items: list[Any] = []
        append = items.append
        i = 0
        try:
            for i in range(count):  # noqa: B007 - i names the failing element below
                item, pos = read_elem(buf, pos)
                append(item)
        except DecodeError as e:
            e.prefix_path(f"[{i}]")
            raise
        return tuple(items), pos

    def write(value: Any, out: bytearray) -> None:
        if value is None:
            if not nullable:
                raise EncodeError("null for a non-nullable array")
            w.write_count(None, out, flexible)
            return
        w.write_count(len(value), out, flexible)
        for item in value:
            write_elem(item, out)

    return read, write


def _compile_struct(
    s: StructSpec, version: int, flexible: bool, *, tagged_section: bool = True
) -> tuple[Reader, Writer]:
    regular: list[tuple[str, Reader, Writer]] = []
    tagged: dict[int, tuple[str, Reader, Writer]] = {}
    tag_defaults: dict[int, Any] = {}
    absent: dict[str, Any] = {}
    for f in s.fields:
        if version not in f.versions:
            absent[f.name] = f.default
            continue
        rw = _compile_type(
            f.type, version, flexible, version in f.nullable, tagged=f.tag is not None
        )
        if f.tag is not None:
            tagged[f.tag] = (f.name, *rw)
            # Unwritten: Kafka's default. None for most tagged fields; a nullable one whose
            # default is not null (an empty struct or list) keeps that default, so that a
            # written null stays apart from an unwritten field.
            absent[f.name] = f.default
            tag_defaults[f.tag] = f.default
        else:
            regular.append((f.name, *rw))
    cls = s.cls
    # Unknown tags go to the model's unknown_tagged_fields, so a re-encode is byte-identical;
    # only structs that are never flexible (keys, the consumer protocol) have no such field.
    keep_unknown = UNKNOWN_TAGS in cls.__dataclass_fields__  # type: ignore[attr-defined]
    if s.versioned:
        absent["version"] = version
    tag_order = sorted(tagged)

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        values = dict(absent)
        name = ""
        try:
            for name, read_field, _ in regular:
                values[name], pos = read_field(buf, pos)
            if flexible and tagged_section:
                name = "_tagged_fields"
                pos = _read_tagged(buf, pos, tagged, values, keep_unknown)
        except DecodeError as e:
            e.prefix_path(name)
            raise
        return cls(**values), pos

    def write(value: Any, out: bytearray) -> None:
        for name, _, write_field in regular:
            write_field(getattr(value, name), out)
        if not flexible:
            return
        fields: list[tuple[int, bytes]] = []
        for tag in tag_order:
            name, _, write_field = tagged[tag]
            v = getattr(value, name)
            default = tag_defaults[tag]
            # As Kafka's writers: a tagged field equal to its default is not written.
            if v is not default and (default is None or v != default):
                tmp = bytearray()
                write_field(v, tmp)
                fields.append((tag, bytes(tmp)))
        if keep_unknown:
            fields.extend(getattr(value, UNKNOWN_TAGS))
            fields.sort(key=lambda tf: tf[0])
        w.write_uvarint(len(fields), out)
        for tag, raw in fields:
            w.write_uvarint(tag, out)
            w.write_uvarint(len(raw), out)
            out += raw

    return read, write


def _read_tagged(
    buf: bytes,
    pos: int,
    tagged: dict[int, tuple[str, Reader, Writer]],
    values: dict[str, Any],
    keep_unknown: bool,
) -> int:
    count, pos = w.read_uvarint(buf, pos)
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        start = pos
        tag, pos = w.read_uvarint(buf, pos)
        size, pos = w.read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise DecodeError(
                "truncated",
                f"tagged field {tag} of {size} bytes runs past the end",
                byte_offset=start,
            )
        known = tagged.get(tag)
        if known is None:
            # Unknown tags are how newer Kafka versions add data; skip them, as Kafka does.
            unknown.append((tag, buf[pos:end]))
            pos = end
            continue
        name, read_field, _ = known
        try:
            # Read from a slice so a lying size cannot make the field read past its own bytes.
            value, used = read_field(buf[pos:end], 0)
        except DecodeError as e:
            e.byte_offset += pos
            e.prefix_path(name)
            raise
        if used != size:
            raise DecodeError(
                "invalid_tagged_field",
                f"tagged field {name} declares {size} bytes but uses {used}",
                byte_offset=start,
                field_path=name,
            )
        values[name] = value
        pos = end
    if keep_unknown:
        values[UNKNOWN_TAGS] = tuple(unknown)
    return pos


@functools.cache
def interpreted(spec: MessageSpec, version: int) -> tuple[Reader, Writer]:
    """The interpreter's reader and writer of ``spec`` at ``version`` (which must be valid)."""
    if version not in spec.valid:
        raise ValueError(f"{spec.name} has no version {version}")
    return _compile_struct(spec.struct, version, version in spec.flexible)


@functools.cache
def compiled(spec: MessageSpec, version: int) -> tuple[Reader, Writer]:
    """The reader and writer of ``spec`` at ``version`` (which must be valid).

    The reader is the generated one (:mod:`groupwatch.protocol.generated`), falling back to
    the interpreter for the exact error whenever the generated code rejects the bytes.
    """
    exact, write = interpreted(spec, version)
    return generated.with_fallback(generated_reader(spec, version), exact), write


@functools.cache
def generated_reader(spec: MessageSpec, version: int) -> Reader:
    """The generated reader alone: raises anything (not only DecodeError) on bad bytes."""
    if version not in spec.valid:
        raise ValueError(f"{spec.name} has no version {version}")
    flexible = version in spec.flexible

    def tagged_reader(f: FieldSpec) -> Reader:
        return _compile_type(f.type, version, flexible, version in f.nullable, tagged=True)[0]

    return generated.generate(
        spec.struct, version, flexible, tagged_reader=tagged_reader, read_tagged=_read_tagged
    )


@functools.cache
def _prefix_reader(spec: MessageSpec, version: int) -> Reader:
    return _compile_struct(spec.struct, version, version in spec.flexible, tagged_section=False)[0]


def decode_prefix(spec: MessageSpec, version: int, buf: bytes, pos: int = 0) -> tuple[Any, int]:
    """Read the regular (untagged) fields of ``spec``'s struct at ``version`` from ``buf[pos:]``
    and stop there, before the struct's own tagged-field section: the fields a newer version
    of the message still starts with, when it appended its new fields after them.  Known
    tagged fields read as their defaults.  Returns (value, end of the fields read)."""
    if version not in spec.valid:
        raise ValueError(f"{spec.name} has no version {version}")
    return _prefix_reader(spec, version)(buf, pos)


def decode_body(spec: MessageSpec, version: int, buf: bytes, pos: int = 0) -> tuple[Any, int]:
    """Read ``spec``'s struct at ``version`` from ``buf[pos:]``; returns (value, end)."""
    if version not in spec.valid:
        raise DecodeError(
            "unsupported_version",
            f"{spec.name} version {version} is outside {spec.valid}",
            byte_offset=max(pos - 2, 0),
        )
    return compiled(spec, version)[0](buf, pos)


def encode_body(spec: MessageSpec, version: int, value: Any, out: bytearray) -> None:
    if version not in spec.valid:
        raise EncodeError(f"{spec.name} has no version {version} (valid {spec.valid})")
    compiled(spec, version)[1](value, out)
