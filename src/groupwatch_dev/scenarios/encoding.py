"""Decoded lines -> raw records (key/value bytes), through the decoder's encoder (issue 3).

This is the only place the scenario library touches the encoder. A scenario's bad parts
(``garbage`` records, members with a subscription or assignment error) become bytes that
really fail to decode: a value of an unknown version, and member bytes cut short.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from groupwatch.protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicPartitions,
    encode_assignment,
    encode_cooperative_sticky_user_data,
    encode_key,
    encode_sticky_user_data,
    encode_subscription,
    encode_value,
)


def _tps(value: Any) -> tuple[TopicPartitions, ...]:
    return tuple(TopicPartitions(e["topic"], tuple(e["partitions"])) for e in value or [])


def _user_data(ud: dict[str, Any] | None) -> bytes | None:
    if ud is None:
        return None
    if ud.get("kind") == "sticky":
        return encode_sticky_user_data(_tps(ud.get("previous_assignment")), ud.get("generation"))
    if ud.get("kind") == "cooperative-sticky":
        return encode_cooperative_sticky_user_data(int(ud["generation"]))
    if ud.get("kind") == "raw":
        return base64.b64decode(ud["base64"])
    raise ValueError(f"unknown user data {ud!r}")


def _member(m: dict[str, Any]) -> MemberMetadata:
    sub, asg = m.get("subscription"), m.get("assignment")
    if sub is not None:
        sub_bytes = encode_subscription(
            ConsumerProtocolSubscription(
                version=sub["version"],
                topics=tuple(sub["topics"]),
                user_data=_user_data(sub.get("user_data")),
                owned_partitions=_tps(sub.get("owned_partitions")),
                generation_id=sub.get("generation_id", -1),
                rack_id=sub.get("rack_id"),
            ),
            sub["version"],
        )
    else:  # a subscription that must fail to decode: a known version, then nothing
        sub_bytes = b"\x00\x03\x00\x00"
    if asg is not None:
        asg_bytes = encode_assignment(
            ConsumerProtocolAssignment(
                version=asg["version"],
                assigned_partitions=_tps(asg.get("assigned_partitions")),
                user_data=_user_data(asg.get("user_data")),
            ),
            asg["version"],
        )
    else:
        asg_bytes = b"\x00\x03\x00\x00"
    return MemberMetadata(
        member_id=m["member_id"],
        client_id=m.get("client_id") or "",
        client_host=m.get("client_host") or "",
        session_timeout=m.get("session_timeout", 45000),
        subscription=sub_bytes,
        assignment=asg_bytes,
        group_instance_id=m.get("group_instance_id"),
        rebalance_timeout=m.get("rebalance_timeout", -1),
    )


def _uuid(printed: str | None) -> uuid.UUID | None:
    """A uuid as Kafka prints it (URL-safe Base64, unpadded) -> the uuid."""
    if not printed:
        return None
    return uuid.UUID(bytes=base64.urlsafe_b64decode(printed + "=" * (-len(printed) % 4)))


def encode_line(line: dict[str, Any]) -> dict[str, Any]:
    """One ``groupwatch decode`` output line -> ``{"key", "value" (base64), position...}``."""
    group = line["key"]["group"]
    if line["record_type"] == "offset_commit":
        key = encode_key(OffsetCommitKey(group, line["key"]["topic"], line["key"]["partition"]))
        v = line["value"]
        value: bytes | None = encode_value(
            OffsetCommitValue(
                offset=v["offset"],
                metadata=v.get("metadata") or "",
                commit_timestamp=v["commit_timestamp"],
                leader_epoch=v.get("leader_epoch") if v.get("leader_epoch") is not None else -1,
                topic_id=_uuid(v.get("topic_id")),
            ),
            v["version"],
        )
    else:
        key = encode_key(GroupMetadataKey(group))
        if line.get("error"):
            value = b"\x00\x09garbage"  # GroupMetadataValue version 9 does not exist
        elif line["value"] is None:
            value = None
        else:
            v = line["value"]
            value = encode_value(
                GroupMetadataValue(
                    protocol_type=v["protocol_type"],
                    generation=v["generation"],
                    protocol=v.get("protocol"),
                    leader=v.get("leader"),
                    members=tuple(_member(m) for m in v["members"]),
                    current_state_timestamp=v.get("current_state_timestamp") or -1,
                ),
                v["version"],
            )
    return {
        "key": base64.b64encode(key).decode(),
        "value": None if value is None else base64.b64encode(value).decode(),
        "topic": line.get("topic"),
        "partition": line.get("partition"),
        "offset": line.get("offset"),
        "timestamp": line.get("timestamp"),
    }
