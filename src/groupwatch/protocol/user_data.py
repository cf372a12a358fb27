"""Assignor user data inside a consumer-protocol subscription, chosen by the group's protocol.

* ``sticky``: StickyAssignor's Struct-encoded previous assignment, V1 with a trailing int32
  generation (KIP-341, 2.3+) or V0 without.  There is no version header, so -- as Kafka does --
  read V1 first and fall back to V0.
* ``cooperative-sticky``: one int32 generation.
* ``stream``: Kafka Streams' SubscriptionInfo/AssignmentInfo, recognised by their leading int32
  version only; the bytes stay raw.
* anything else (range, roundrobin -- which send none -- and custom assignors): raw bytes.

Bytes that do not parse as their assignor's format are kept raw rather than reported as errors:
Kafka's assignors fall back too (StickyAssignor treats them as "no previous assignment").
"""

from __future__ import annotations

from dataclasses import dataclass

from groupwatch.protocol import _wire as w
from groupwatch.protocol.codec import decode_body, encode_body
from groupwatch.protocol.errors import DecodeError
from groupwatch.protocol.models import TopicPartitions
from groupwatch.protocol.schema import INT32, STRING, ArrayOf, field, message, struct

STICKY = "sticky"
COOPERATIVE_STICKY = "cooperative-sticky"
STREAMS = "stream"


@dataclass(frozen=True)
class StickyUserData:
    version: int  # 0 or 1 -- which layout parsed
    previous_assignment: tuple[TopicPartitions, ...]
    generation: int | None = None  # V1 only


@dataclass(frozen=True)
class CooperativeStickyUserData:
    generation: int


@dataclass(frozen=True)
class RawUserData:
    """Bytes we keep as they are; ``recognised_as`` names a format we identified but do not
    decode (``streams_subscription_info``), with its ``format_version``."""

    data: bytes
    recognised_as: str | None = None
    format_version: int | None = None


UserData = StickyUserData | CooperativeStickyUserData | RawUserData

# StickyAssignor's hand-written Struct schemas, as our tables.  Version here = V0 / V1.
STICKY_USER_DATA = message(
    "StickyAssignorUserData",
    "0-1",
    "none",
    struct(
        "StickyAssignorUserData",
        StickyUserData,
        field(
            "previous_assignment",
            ArrayOf(
                struct(
                    "TopicAssignment",
                    TopicPartitions,
                    field("topic", STRING),
                    field("partitions", ArrayOf(INT32)),
                )
            ),
        ),
        field("generation", INT32, "1+", default=None),
        versioned=True,
    ),
)

COOPERATIVE_STICKY_USER_DATA = message(
    "CooperativeStickyAssignorUserData",
    "0",
    "none",
    struct(
        "CooperativeStickyAssignorUserData",
        CooperativeStickyUserData,
        field("generation", INT32),
    ),
)


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """V1, else V0; raises the V0 error when neither parses.  Trailing bytes are ignored, as by
    Kafka's Struct reader."""
    try:
        v1, _ = decode_body(STICKY_USER_DATA, 1, data)
    except DecodeError:
        v0, _ = decode_body(STICKY_USER_DATA, 0, data)
        assert isinstance(v0, StickyUserData)
        return v0
    assert isinstance(v1, StickyUserData)
    return v1


def decode_user_data(
    protocol: str | None, data: bytes | None, *, assignment: bool = False
) -> UserData | None:
    """Interpret user data for the group's selected ``protocol``; never raises.

    Sticky formats live in *subscriptions*; the sticky assignors send no assignment user data,
    so assignment bytes are only recognised for Streams and otherwise kept raw."""
    if data is None:
        return None
    try:
        if protocol == STICKY and not assignment:
            return decode_sticky_user_data(data)
        if protocol == COOPERATIVE_STICKY and not assignment:
            coop, _ = decode_body(COOPERATIVE_STICKY_USER_DATA, 0, data)
            assert isinstance(coop, CooperativeStickyUserData)
            return coop
        if protocol == STREAMS:
            version, _ = w.read_int32(data, 0)
            name = "streams_assignment_info" if assignment else "streams_subscription_info"
            return RawUserData(data, name, version)
    except DecodeError:
        pass
    return RawUserData(data)


def encode_sticky_user_data(
    previous_assignment: tuple[TopicPartitions, ...], generation: int | None
) -> bytes:
    """V1 when a generation is given (what 2.3+ clients write), else V0."""
    version = 0 if generation is None else 1
    out = bytearray()
    encode_body(
        STICKY_USER_DATA, version, StickyUserData(version, previous_assignment, generation), out
    )
    return bytes(out)


def encode_cooperative_sticky_user_data(generation: int) -> bytes:
    out = bytearray()
    encode_body(COOPERATIVE_STICKY_USER_DATA, 0, CooperativeStickyUserData(generation), out)
    return bytes(out)
