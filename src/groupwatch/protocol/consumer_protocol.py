"""The consumer protocol embedded in classic groups: ``int16 version`` + a non-flexible struct.

Reading follows Kafka's ``ConsumerProtocol``: a version above the newest we know is read as the
newest (fields are only ever appended, so the known prefix is valid) and bytes after the known
fields are ignored; a negative version, or a known version cut short, is an error.
"""

from __future__ import annotations

import dataclasses

from groupwatch.protocol import _wire as w
from groupwatch.protocol.codec import decode_body, encode_body
from groupwatch.protocol.errors import DecodeError, EncodeError
from groupwatch.protocol.models import (
    CONSUMER_PROTOCOL_HIGHEST_VERSION,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from groupwatch.protocol.schema import MessageSpec
from groupwatch.protocol.specs import CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION


def _decode(spec: MessageSpec, data: bytes) -> object:
    version, pos = w.read_int16(data, 0)
    if version < 0:
        raise DecodeError(
            "unsupported_version", f"{spec.name} version {version} is negative", byte_offset=0
        )
    read_as = min(version, CONSUMER_PROTOCOL_HIGHEST_VERSION)
    value, _end = decode_body(spec, read_as, data, pos)  # trailing bytes ignored, as Kafka does
    if read_as != version:
        value = dataclasses.replace(value, version=version)
    return value


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    sub = _decode(CONSUMER_PROTOCOL_SUBSCRIPTION, data)
    assert isinstance(sub, ConsumerProtocolSubscription)
    return sub


def decode_assignment(data: bytes) -> ConsumerProtocolAssignment:
    asg = _decode(CONSUMER_PROTOCOL_ASSIGNMENT, data)
    assert isinstance(asg, ConsumerProtocolAssignment)
    return asg


def _encode(spec: MessageSpec, value: object, version: int) -> bytes:
    if version < 0:
        raise EncodeError(f"{spec.name} version {version} is negative")
    # Kafka's serializeSubscription clamps a too-new version to the newest it knows.
    version = min(version, CONSUMER_PROTOCOL_HIGHEST_VERSION)
    out = bytearray()
    w.write_int16(version, out)
    encode_body(spec, version, value, out)
    return bytes(out)


def encode_subscription(sub: ConsumerProtocolSubscription, version: int | None = None) -> bytes:
    """Bytes of ``sub`` at ``version`` (default ``sub.version``); fields the version lacks are
    dropped, as Kafka drops its ignorable fields."""
    return _encode(CONSUMER_PROTOCOL_SUBSCRIPTION, sub, sub.version if version is None else version)


def encode_assignment(asg: ConsumerProtocolAssignment, version: int | None = None) -> bytes:
    return _encode(CONSUMER_PROTOCOL_ASSIGNMENT, asg, asg.version if version is None else version)
