"""The vocabulary of our schema tables: versions, field types, fields, structs and messages.

It mirrors Kafka's JSON message specs (``"versions": "2+"``, ``"nullableVersions"``,
``"flexibleVersions"``, ``"tag"``) so that a Kafka spec change translates line for line.  The
tables themselves live in :mod:`groupwatch.protocol.specs`; :mod:`groupwatch.protocol.codec`
interprets them.  Specs are checked when they are built, never while decoding.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``hi=None`` means open-ended ("3+")."""

    lo: int
    hi: int | None

    @staticmethod
    def parse(text: str) -> Versions:
        if text == "none":
            return NO_VERSIONS
        if text.endswith("+"):
            return Versions(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return Versions(int(lo), int(hi))
        return Versions(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return (
            isinstance(version, int)
            and self.lo <= version
            and (self.hi is None or version <= self.hi)
        )

    def __str__(self) -> str:
        if self.hi is None:
            return f"{self.lo}+"
        if self.hi < self.lo:
            return "none"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


NO_VERSIONS = Versions(0, -1)


class Prim(enum.Enum):
    INT8 = "int8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    INT64 = "int64"
    UUID = "uuid"
    STRING = "string"
    BYTES = "bytes"


INT8, INT16, UINT16, INT32, INT64 = Prim.INT8, Prim.INT16, Prim.UINT16, Prim.INT32, Prim.INT64
UUID, STRING, BYTES = Prim.UUID, Prim.STRING, Prim.BYTES

_PRIM_DEFAULTS: dict[Prim, Any] = {
    INT8: 0,
    INT16: 0,
    UINT16: 0,
    INT32: 0,
    INT64: 0,
    UUID: None,
    STRING: "",
    BYTES: b"",
}


@dataclass(frozen=True)
class ArrayOf:
    element: TypeSpec


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: TypeSpec
    versions: Versions
    nullable: Versions
    default: Any
    tag: int | None


# eq=False: identity hashing, so the compile cache never walks the whole tree.
@dataclass(frozen=True, eq=False)
class StructSpec:
    """A struct: fields in wire order.  ``cls`` is the frozen dataclass built from it.
    ``versioned`` structs also receive the version they were read at, as their ``version``
    field."""

    name: str
    fields: tuple[FieldSpec, ...]
    cls: type
    versioned: bool = False

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate field names")
        tags = [f.tag for f in self.fields if f.tag is not None]
        if len(set(tags)) != len(tags):
            raise ValueError(f"{self.name}: duplicate tags")
        known = {f.name for f in dataclasses.fields(self.cls)}
        missing = set(names) - known
        if missing:
            raise ValueError(f"{self.name}: {self.cls.__name__} lacks fields {sorted(missing)}")
        if self.versioned and "version" not in known:
            raise ValueError(f"{self.name}: versioned but {self.cls.__name__} has no version")


TypeSpec = Prim | ArrayOf | StructSpec


@dataclass(frozen=True, eq=False)
class MessageSpec:
    """A top-level message: its valid and flexible version ranges and its struct."""

    name: str
    valid: Versions
    flexible: Versions
    struct: StructSpec

    def __post_init__(self) -> None:
        # Kafka's MessageSpec insists on an explicit flexibleVersions; so do we, and a tagged field
        # in a version that is not flexible could never be written.
        for f in _all_fields(self.struct):
            if f.tag is not None and f.versions.lo not in self.flexible:
                raise ValueError(f"{self.name}.{f.name}: tagged in a non-flexible version")

    def present(self, field_name: str, version: int) -> bool:
        """Whether a top-level field exists at ``version`` (absent fields show as null)."""
        for f in self.struct.fields:
            if f.name == field_name:
                return version in f.versions
        raise KeyError(field_name)


def _all_fields(s: StructSpec) -> list[FieldSpec]:
    out: list[FieldSpec] = []
    for f in s.fields:
        out.append(f)
        t = f.type
        while isinstance(t, ArrayOf):
            t = t.element
        if isinstance(t, StructSpec):
            out.extend(_all_fields(t))
    return out


_UNSET: Any = object()


def field(
    name: str,
    type_: TypeSpec,
    versions: str = "0+",
    *,
    nullable: str = "none",
    default: Any = _UNSET,
    tag: int | None = None,
) -> FieldSpec:
    """One field, in the spirit of a Kafka JSON spec line."""
    nullable_v = Versions.parse(nullable)
    if default is _UNSET:
        if tag is not None or nullable_v != NO_VERSIONS:
            # absent tagged fields and nullable fields read as None, as in Kafka's generated code
            default = None
        elif isinstance(type_, Prim):
            default = _PRIM_DEFAULTS[type_]
        elif isinstance(type_, ArrayOf):
            default = ()
        else:
            default = None
    return FieldSpec(name, type_, Versions.parse(versions), nullable_v, default, tag)


def struct(name: str, cls: type, *fields: FieldSpec, versioned: bool = False) -> StructSpec:
    return StructSpec(name, tuple(fields), cls, versioned)


def message(name: str, valid: str, flexible: str, body: StructSpec) -> MessageSpec:
    return MessageSpec(name, Versions.parse(valid), Versions.parse(flexible), body)
