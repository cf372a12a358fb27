"""The decoder's one error type.

Every failure to read bytes is a :class:`DecodeError`; the low-level exception that revealed it
(``struct.error``, ``UnicodeDecodeError``, ...) is kept as ``__cause__``.  The error knows
*where* it happened twice over: ``field_path`` in Kafka's field names
(``members[2].subscription.topics[0]``) and ``byte_offset`` into the buffer being read, so a
quarantined record can be inspected by hand.
"""

from __future__ import annotations

from groupwatch.errors import GroupwatchError

# The closed set of kinds; the CLI and the Delta quarantine table group by them.
KINDS = frozenset(
    {
        "truncated",  # the bytes end before the schema says they should
        "negative_length",  # a non-nullable string/bytes/array was written with length -1 (or < -1)
        "invalid_length",  # a length no writer could produce (string > 32767 bytes, ...)
        "invalid_varint",  # an unsigned varint longer than 5 bytes
        "invalid_utf8",
        "invalid_tagged_field",  # a known tagged field whose size does not match its content
        "unsupported_version",  # a value/payload version outside the known range
        "newer_version",  # a value newer than known, read by the fields known (not a failure)
        "trailing_bytes",  # bytes left after a complete top-level key or value
        "unknown_record_type",  # a key whose record type we do not know at all
        "missing_key",  # a record without key bytes
        "invalid_input",  # the CLI line was not a JSON object of the documented shape
        "invalid_base64",
        "internal_error",  # a decoder bug caught by decode_record's last-resort guard
    }
)


class DecodeError(GroupwatchError):
    """Bytes that do not decode; carries kind, field path, byte offset and a message."""

    def __init__(self, kind: str, message: str, *, byte_offset: int = 0, field_path: str = ""):
        if kind not in KINDS:  # a typo here would silently create a new quarantine bucket
            raise ValueError(f"unknown DecodeError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.byte_offset = byte_offset
        self.field_path = field_path

    def prefix_path(self, segment: str) -> None:
        """Prepend a path segment while the error unwinds (``name`` or ``[3]``)."""
        if not self.field_path:
            self.field_path = segment
        elif self.field_path.startswith("["):
            self.field_path = segment + self.field_path
        else:
            self.field_path = f"{segment}.{self.field_path}"

    def __str__(self) -> str:
        where = f" at {self.field_path}" if self.field_path else ""
        return f"{self.kind}{where} (byte {self.byte_offset}): {self.message}"

    def __repr__(self) -> str:
        return (
            f"DecodeError(kind={self.kind!r}, field_path={self.field_path!r}, "
            f"byte_offset={self.byte_offset}, message={self.message!r})"
        )


class EncodeError(GroupwatchError, ValueError):
    """A value that cannot be written at the requested version (too long, out of range, ...)."""
