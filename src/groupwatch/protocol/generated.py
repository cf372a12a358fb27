"""Fast readers: each (struct, version) turned into the source of one flat Python function.

The interpreter in :mod:`groupwatch.protocol.codec` is a tree of small closures: every field
costs a call, every integer a ``struct`` call, every error path a ``try``.  Group-metadata
records carry a subscription and an assignment per member, so that tree runs hundreds of times
per record, and it was a third of the streaming job's Python time.  Here the same schema tables
are written out once as straight-line code: each field is read inline (one ``unpack_from`` for
a fixed-width field, one for a whole ``int32`` array), nested structs are direct calls.

The generated code only knows the happy path.  Any exception it meets (a short buffer, a bad
length, invalid UTF-8) makes :func:`with_fallback` re-read the bytes with the interpreter,
which raises the precise :class:`~groupwatch.protocol.errors.DecodeError` (kind, field path,
byte offset).  So errors stay exactly as before, and a value is only ever returned by a path
that accepted every byte the interpreter would have accepted.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import struct
from collections.abc import Callable
from typing import Any

from groupwatch.protocol import _wire as w
from groupwatch.protocol.schema import ArrayOf, Prim, StructSpec, TypeSpec

Reader = Callable[[bytes, int], tuple[Any, int]]

_FORMAT: dict[Prim, tuple[str, int]] = {
    Prim.INT8: ("b", 1),
    Prim.INT16: ("h", 2),
    Prim.UINT16: ("H", 2),
    Prim.INT32: ("i", 4),
    Prim.INT64: ("q", 8),
}


_NOT_IDENTIFIER = re.compile(r"\W")


class _Reject(Exception):
    """The generated code saw something only the interpreter can describe."""


@functools.cache
def _array_of(fmt: str, count: int) -> Callable[..., tuple[Any, ...]]:
    # Partition lists repeat the same few lengths, so the compiled formats are cached.
    return struct.Struct(f">{count}{fmt}").unpack_from


class _Source:
    """Lines of one function, with fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._n = 0

    def var(self) -> str:
        self._n += 1
        return f"v{self._n}"

    def add(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


class _Generator:
    """Generates one module's worth of reader functions for one version of one message."""

    def __init__(
        self,
        version: int,
        flexible: bool,
        tagged_reader: Callable[..., Any],
        read_tagged: Callable[..., int],
    ) -> None:
        self.version = version
        self.flexible = flexible
        self.read_tagged = read_tagged
        self.namespace: dict[str, Any] = {
            "_Reject": _Reject,
            "_array_of": _array_of,
            "_uvarint": w.read_uvarint,
            "_uuid": w.read_uuid,
            "_MAX_STRING": w.MAX_STRING,
            "_object_new": object.__new__,
        }
        self._structs: dict[int, str] = {}
        self._consts = 0
        self.tagged_reader = tagged_reader

    def const(self, value: Any) -> str:
        self._consts += 1
        name = f"_c{self._consts}"
        self.namespace[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        """The name of a big-endian ``unpack_from`` of ``fmt`` in the generated code."""
        return self.const(struct.Struct(">" + fmt).unpack_from)

    # -- lengths -----------------------------------------------------------------------------
    def _length(self, src: _Source, ind: int, width_fmt: str, width: int) -> str:
        """Code reading a length prefix (classic ``width_fmt`` or compact uvarint); its name."""
        n = src.var()
        if self.flexible:
            src.add(ind, f"{n}, pos = _uvarint(buf, pos)")
            src.add(ind, f"{n} -= 1")
        else:
            src.add(ind, f"{n} = {self.unpacker(width_fmt)}(buf, pos)[0]")
            src.add(ind, f"pos += {width}")
        return n

    def _negative(self, src: _Source, ind: int, n: str, nullable: bool, target: str) -> None:
        """Code for a negative length or count ``n``: null if nullable and -1, else rejected."""
        src.add(ind, f"if {n} < 0:")
        if nullable:
            src.add(ind + 1, f"if {n} != -1: raise _Reject")
            src.add(ind + 1, f"{target} = None")
        else:
            src.add(ind + 1, "raise _Reject")

    # -- one value of a type into ``target`` -------------------------------------------------
    def value(self, src: _Source, ind: int, t: TypeSpec, nullable: bool, target: str) -> None:
        if isinstance(t, Prim):
            self._prim(src, ind, t, nullable, target)
        elif isinstance(t, ArrayOf):
            self._array(src, ind, t, nullable, target)
        else:
            fn = self.struct_reader(t)
            if nullable:
                marker = src.var()
                src.add(ind, f"{marker} = buf[pos]")
                src.add(ind, "pos += 1")
                # An int8 marker: negative (>= 0x80 unsigned) means null.
                src.add(ind, f"if {marker} >= 128:")
                src.add(ind + 1, f"{target} = None")
                src.add(ind, "else:")
                src.add(ind + 1, f"{target}, pos = {fn}(buf, pos)")
            else:
                src.add(ind, f"{target}, pos = {fn}(buf, pos)")

    def _prim(self, src: _Source, ind: int, t: Prim, nullable: bool, target: str) -> None:
        if t in _FORMAT:
            fmt, size = _FORMAT[t]
            src.add(ind, f"{target} = {self.unpacker(fmt)}(buf, pos)[0]")
            src.add(ind, f"pos += {size}")
            return
        if t is Prim.UUID:
            src.add(ind, f"{target}, pos = _uuid(buf, pos)")
            return
        string = t is Prim.STRING
        n = self._length(src, ind, "h" if string else "i", 2 if string else 4)
        self._negative(src, ind, n, nullable, target)
        src.add(ind, "else:")
        end = src.var()
        src.add(ind + 1, f"{end} = pos + {n}")
        check = f"{end} > len(buf)"
        # Only a compact (varint) length can exceed MAX_STRING; a classic int16 cannot.
        if string and self.flexible:
            check += f" or {n} > _MAX_STRING"
        src.add(ind + 1, f"if {check}: raise _Reject")
        decode = ".decode('utf-8')" if string else ""
        src.add(ind + 1, f"{target} = buf[pos:{end}]{decode}")
        src.add(ind + 1, f"pos = {end}")

    def _array(self, src: _Source, ind: int, t: ArrayOf, nullable: bool, target: str) -> None:
        count = self._length(src, ind, "i", 4)
        self._negative(src, ind, count, nullable, target)
        # Every element takes at least a byte: a larger count is corrupt (as read_count says).
        src.add(ind, f"elif {count} > len(buf) - pos: raise _Reject")
        src.add(ind, "else:")
        elem = t.element
        if isinstance(elem, Prim) and elem in _FORMAT:
            fmt, size = _FORMAT[elem]
            src.add(ind + 1, f"{target} = _array_of({fmt!r}, {count})(buf, pos)")
            src.add(ind + 1, f"pos += {size} * {count}")
            return
        items, item = src.var(), src.var()
        src.add(ind + 1, f"{items} = []")
        src.add(ind + 1, f"for _ in range({count}):")
        self.value(src, ind + 2, elem, False, item)
        src.add(ind + 2, f"{items}.append({item})")
        src.add(ind + 1, f"{target} = tuple({items})")

    # -- a struct: one function ----------------------------------------------------------------
    def struct_reader(self, s: StructSpec) -> str:
        """The name of the generated reader of ``s`` (generated on first use)."""
        name = self._structs.get(id(s))
        if name is not None:
            return name
        name = f"read_{_NOT_IDENTIFIER.sub('_', s.name)}_{len(self._structs)}"
        self._structs[id(s)] = name
        src = _Source()
        src.add(0, f"def {name}(buf, pos):")
        fields: dict[str, str] = {}
        constants: dict[str, Any] = {}
        tagged: dict[int, tuple[str, Any, Any]] = {}
        for f in s.fields:
            if self.version not in f.versions:
                constants[f.name] = f.default
            elif f.tag is not None:
                tagged[f.tag] = (f.name, self.tagged_reader(f), None)
                constants[f.name] = f.default  # unwritten: Kafka's default, as the interpreter
            else:
                target = src.var()
                self.value(src, 1, f.type, self.version in f.nullable, target)
                fields[f.name] = target
        if s.versioned:
            constants["version"] = self.version
        keep_unknown = "unknown_tagged_fields" in s.cls.__dataclass_fields__  # type: ignore[attr-defined]
        plain = _plain_defaults(s.cls, {*fields, *constants})
        if plain:
            # What the dataclass's __init__ would fill in (unknown_tagged_fields when the bytes
            # have no tagged section); a tagged section read below overrides it.
            constants = {**plain, **constants}
        build = ", ".join(f"{k!r}: {v}" for k, v in fields.items())
        src.add(1, f"values = {{**{self.const(constants)}, {build}}}")
        if self.flexible:
            src.add(
                1,
                f"pos = {self.const(self.read_tagged)}(buf, pos, {self.const(tagged)}, values, "
                f"{keep_unknown!r})",
            )
        if plain is not None:
            # Frozen dataclasses set each field through object.__setattr__ in __init__; filling
            # the instance dict directly builds the same object several times faster.
            obj = src.var()
            src.add(1, f"{obj} = _object_new({self.const(s.cls)})")
            src.add(1, f"{obj}.__dict__.update(values)")
            src.add(1, f"return {obj}, pos")
        else:  # pragma: no cover - every model is a plain dataclass today
            src.add(1, f"return {self.const(s.cls)}(**values), pos")
        exec("\n".join(src.lines), self.namespace)  # noqa: S102 - our own generated source
        return name


def _plain_defaults(cls: type, given: set[str]) -> dict[str, Any] | None:
    """The defaults of ``cls``'s fields outside ``given`` if its ``__init__`` only stores its
    fields (no slots, no post-init, no factories); ``None`` if it does more."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return None
    if "__slots__" in cls.__dict__:
        return None
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.default_factory is not dataclasses.MISSING:
            return None
        if f.name not in given:
            if f.default is dataclasses.MISSING:
                return None
            defaults[f.name] = f.default
    return defaults


def generate(
    s: StructSpec,
    version: int,
    flexible: bool,
    *,
    tagged_reader: Callable[..., Any],
    read_tagged: Callable[..., int],
) -> Reader:
    """The generated reader of ``s`` at ``version`` (raising anything on bad bytes).

    Tagged fields are rare and read from their own slice, so they stay interpreted:
    ``tagged_reader(field)`` is the interpreter's reader of one, ``read_tagged`` its reader of
    a tagged-field section.
    """
    gen = _Generator(version, flexible, tagged_reader, read_tagged)
    fn: Reader = gen.namespace[gen.struct_reader(s)]
    return fn


def with_fallback(fast: Reader, exact: Reader) -> Reader:
    """``fast`` for bytes it accepts; ``exact`` (raising the precise error) for the rest."""

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        try:
            return fast(buf, pos)
        except Exception:  # noqa: BLE001 - any failure is re-read by the interpreter
            return exact(buf, pos)

    return read
