"""Golden vectors: the cases (as data), how Kafka builds their bytes, and how they are stored.

Every vector's bytes come from Kafka's own serialisers, run through our Java harness
(``groupwatch.oracle.RecordOracle``); its expected JSON is our decoder's output, reviewed when
the vector was added and pinned from then on.  ``tests/oracle/test_records_vectors.py`` rebuilds
everything through the harness and fails on any difference; ``tests/unit/protocol`` reads the
committed files without Java.

Regenerate (after adding a case):  ``.venv/bin/python -m tests.vectors.build``
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupwatch.protocol import (
    decode_assignment,
    decode_record,
    decode_subscription,
    decode_user_data,
    to_json_dict,
)
from groupwatch.protocol.jsonview import assignment_json, subscription_json, user_data_json

ROOT = Path(__file__).resolve().parent
Harness = Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]

# --- embedded payloads, built by Kafka's ConsumerProtocol / assignors --------------------------

SUBS: dict[str, dict[str, Any]] = {
    "sub_v0": {"version": 0, "topics": ["pay", "refund"]},
    "sub_v1_owned": {"version": 1, "topics": ["pay"], "owned_partitions": [["pay", 3], ["pay", 0]]},
    "sub_v2_gen": {
        "version": 2,
        "topics": ["pay"],
        "owned_partitions": [["pay", 1]],
        "generation_id": 11,
    },
    "sub_v3_full": {
        "version": 3,
        "topics": ["refund", "pay"],
        "owned_partitions": [["pay", 3], ["refund", 1], ["pay", 0]],
        "generation_id": 11,
        "rack_id": "rack-0",
    },
    "sub_v3_reset": {"version": 3, "topics": ["pay"], "generation_id": -1, "rack_id": ""},
    "sub_v3_userdata_empty": {"version": 3, "topics": ["pay"], "user_data_hex": ""},
}
ASGS: dict[str, dict[str, Any]] = {
    "asg_v0": {"version": 0, "partitions": [["pay", 0], ["refund", 2]]},
    "asg_v1": {"version": 1, "partitions": [["refund", 1], ["pay", 4], ["pay", 2]]},
    "asg_v2": {"version": 2, "partitions": []},
    "asg_v3": {"version": 3, "partitions": [["pay", 0], ["pay", 3]]},
    "asg_v3_userdata": {"version": 3, "partitions": [["pay", 1]], "user_data_hex": "cafe"},
}
USER_DATA: dict[str, dict[str, Any]] = {
    "sticky_v0": {
        "op": "sticky",
        "partitions": [["pay", 2], ["pay", 0], ["refund", 1]],
        "generation": None,
    },
    "sticky_v1": {"op": "sticky", "partitions": [["pay", 2], ["refund", 1]], "generation": 5},
    "sticky_v1_empty": {"op": "sticky", "partitions": [], "generation": -1},
    "coop_11": {"op": "coop", "generation": 11},
    "coop_fresh": {"op": "coop", "generation": -1},
}


def _with_user_data(sub: str, ud: str) -> dict[str, Any]:
    return {**SUBS[sub], "user_data_ref": ud}


SUBS.update(
    {
        "sub_v1_sticky_v0": _with_user_data("sub_v1_owned", "sticky_v0"),
        "sub_v2_sticky_v1": _with_user_data("sub_v2_gen", "sticky_v1"),
        "sub_v0_sticky_v1_empty": _with_user_data("sub_v0", "sticky_v1_empty"),
        "sub_v3_coop": _with_user_data("sub_v3_full", "coop_11"),
        "sub_v3_coop_fresh": _with_user_data("sub_v3_reset", "coop_fresh"),
    }
)

# A Kafka Streams SubscriptionInfo starts with int32 version (11) and int32 latest version; the
# rest is opaque to us.  Kafka Streams is not on the harness classpath, so these bytes are ours.
STREAMS_USER_DATA_HEX = "0000000b0000000b" + "00" * 16 + "00000000"

# --- records ------------------------------------------------------------------------------------


def _member(i: int, version: int, sub: str, asg: str, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {
        "memberId": f"m-{i}",
        "clientId": f"client-{i}",
        "clientHost": f"/10.0.0.{i}",
        "sessionTimeout": 45000,
        "subscription": "$" + sub,
        "assignment": "$" + asg,
    }
    if version >= 1:
        m["rebalanceTimeout"] = 300000
    if version >= 3:
        m["groupInstanceId"] = extra.pop("instance", f"pod-{i}")
    m.update(extra)
    return m


def _group(
    version: int,
    protocol: str | None,
    members: list[dict[str, Any]],
    protocol_type: str = "consumer",
    generation: int = 12,
) -> dict[str, Any]:
    v: dict[str, Any] = {
        "protocolType": protocol_type,
        "generation": generation,
        "protocol": protocol,
        "leader": members[0]["memberId"] if members else None,
        "members": members,
    }
    if version >= 2:
        v["currentStateTimestamp"] = 1700000123456
    return {"op": "record", "type": 2, "key": {"group": "payments"}, "version": version, "value": v}


def _offset(version: int, type_: int = 1, **value: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"offset": 200, "metadata": "", "commitTimestamp": 1700000000000}
    if version >= 3:
        v["leaderEpoch"] = 7
    if version == 1:
        v["expireTimestamp"] = 1700086400000
    v.update(value)
    return {
        "op": "record",
        "type": type_,
        "key": {"group": "payments", "topic": "pay", "partition": 3},
        "version": version,
        "value": v,
    }


def _rec(type_: int, key: dict[str, Any], value: dict[str, Any] | None) -> dict[str, Any]:
    return {"op": "record", "type": type_, "key": key, "version": 0, "value": value}


G = {"groupId": "cg"}
GM = {"groupId": "cg", "memberId": "member-a"}
TID = "MKXx1fIkQy2J9jXHhK8m1w"
TID2 = "AAAAAAAAAAEAAAAAAAAAAg"

RECORDS: dict[str, tuple[str, dict[str, Any]]] = {
    # name: (description, request)
    "offset_commit/v0": ("OffsetCommitValue v0 (0.8.2 layout)", _offset(0)),
    "offset_commit/v1": ("OffsetCommitValue v1 with expireTimestamp", _offset(1, metadata="m")),
    "offset_commit/v2": ("OffsetCommitValue v2", _offset(2)),
    "offset_commit/v3": ("OffsetCommitValue v3 (what 2.1-4.0 write)", _offset(3, metadata="x" * 3)),
    "offset_commit/v3_no_epoch": (
        "OffsetCommitValue v3, leaderEpoch -1",
        _offset(3, leaderEpoch=-1),
    ),
    "offset_commit/v4": ("OffsetCommitValue v4 flexible, no topic id", _offset(4)),
    "offset_commit/v4_topic_id": (
        "OffsetCommitValue v4 with tagged topicId (4.1+)",
        _offset(4, topicId=TID, metadata="ünïcode"),
    ),
    "offset_commit/tombstone": ("offset commit tombstone", {**_offset(3), "value": None}),
    "offset_commit/legacy_type0_v0": (
        "record type 0 (LegacyOffsetCommitKey) with a v0 value",
        {**_offset(0, type_=0)},
    ),
    "group_metadata/v0_range": (
        "GroupMetadataValue v0, range, subscription/assignment v0",
        _group(0, "range", [_member(1, 0, "sub_v0", "asg_v0")]),
    ),
    "group_metadata/v1_roundrobin": (
        "GroupMetadataValue v1, roundrobin, two members",
        _group(
            1,
            "roundrobin",
            [_member(1, 1, "sub_v1_owned", "asg_v1"), _member(2, 1, "sub_v0", "asg_v2")],
        ),
    ),
    "group_metadata/v2_sticky_v0": (
        "GroupMetadataValue v2, sticky with StickyAssignor V0 user data",
        _group(2, "sticky", [_member(1, 2, "sub_v1_sticky_v0", "asg_v1")]),
    ),
    "group_metadata/v3_sticky_v1": (
        "GroupMetadataValue v3, sticky V1 user data; an empty V1",
        _group(
            3,
            "sticky",
            [
                _member(1, 3, "sub_v2_sticky_v1", "asg_v3"),
                _member(2, 3, "sub_v0_sticky_v1_empty", "asg_v2", instance=None),
            ],
        ),
    ),
    "group_metadata/v3_cooperative": (
        "GroupMetadataValue v3, cooperative-sticky, sub v3 with rack",
        _group(
            3,
            "cooperative-sticky",
            [
                _member(1, 3, "sub_v3_coop", "asg_v3"),
                _member(2, 3, "sub_v3_coop_fresh", "asg_v3_userdata"),
            ],
        ),
    ),
    "group_metadata/v4_cooperative": (
        "GroupMetadataValue v4 (flexible), cooperative-sticky, 3 members",
        _group(
            4,
            "cooperative-sticky",
            [
                _member(1, 4, "sub_v3_coop", "asg_v3"),
                _member(2, 4, "sub_v3_coop_fresh", "asg_v2", instance=None),
                _member(3, 4, "sub_v3_userdata_empty", "asg_v0"),
            ],
        ),
    ),
    "group_metadata/v3_empty": (
        "GroupMetadataValue v3 of an emptied group (no protocol/leader)",
        _group(3, None, []),
    ),
    "group_metadata/v3_new_empty": (
        "4.x newEmptyGroupMetadataRecord: protocolType '', gen 0",
        _group(3, None, [], protocol_type="", generation=0),
    ),
    "group_metadata/v3_unassigned": (
        "GroupMetadataValue v3, member with empty assignment bytes",
        _group(3, "range", [_member(1, 3, "sub_v3_full", "empty")]),
    ),
    "group_metadata/v3_connect": (
        "GroupMetadataValue v3, protocolType connect: payloads stay raw",
        _group(
            3, "sessioned", [_member(1, 3, "raw_connect", "raw_connect")], protocol_type="connect"
        ),
    ),
    "group_metadata/v3_streams": (
        "GroupMetadataValue v3, Kafka Streams ('stream') user data",
        _group(3, "stream", [_member(1, 3, "sub_v3_streams", "asg_v3")]),
    ),
    "group_metadata/v3_bad_member": (
        "one member with a truncated subscription; the rest decodes",
        _group(
            3,
            "range",
            [
                _member(1, 3, "sub_v3_full", "asg_v3"),
                _member(2, 3, "sub_v3_truncated", "asg_v3"),
                _member(3, 3, "sub_v0", "asg_bad_version"),
            ],
        ),
    ),
    "group_metadata/v3_future_subscription": (
        "subscription version 100 (v3 + an unknown field)",
        _group(3, "range", [_member(1, 3, "sub_v100", "asg_v100")]),
    ),
    "group_metadata/v4_unknown_tag": (
        "GroupMetadataValue v4 members kept the tagged sections",
        _group(4, "range", [_member(1, 4, "sub_v0", "asg_v0")]),
    ),
    "group_metadata/tombstone": (
        "group metadata tombstone",
        {**_group(3, None, []), "value": None},
    ),
    "consumer_group_metadata/v0": ("ConsumerGroupMetadataValue", _rec(3, G, {"epoch": 9})),
    "consumer_group_metadata/v0_hash": (
        "ConsumerGroupMetadataValue with tagged metadataHash",
        _rec(3, G, {"epoch": 9, "metadataHash": 123456789}),
    ),
    "consumer_group_metadata/tombstone": ("tombstone", _rec(3, G, None)),
    "consumer_group_partition_metadata/v0": (
        "ConsumerGroupPartitionMetadataValue",
        _rec(
            4,
            G,
            {
                "topics": [
                    {
                        "topicId": TID,
                        "topicName": "pay",
                        "numPartitions": 2,
                        "partitionMetadata": [{"partition": 0, "racks": ["r1", "r2"]}],
                    }
                ]
            },
        ),
    ),
    "consumer_group_member_metadata/v0": (
        "ConsumerGroupMemberMetadataValue",
        _rec(
            5,
            GM,
            {
                "instanceId": "pod-a",
                "rackId": "r1",
                "clientId": "c",
                "clientHost": "/10.1.1.1",
                "subscribedTopicNames": ["pay", "refund"],
                "subscribedTopicRegex": None,
                "rebalanceTimeoutMs": 300000,
                "serverAssignor": "uniform",
            },
        ),
    ),
    "consumer_group_member_metadata/v0_classic": (
        "ConsumerGroupMemberMetadataValue of a classic member (tagged ClassicMemberMetadata)",
        _rec(
            5,
            GM,
            {
                "instanceId": None,
                "rackId": None,
                "clientId": "c",
                "clientHost": "h",
                "subscribedTopicNames": ["pay"],
                "subscribedTopicRegex": "pay.*",
                "rebalanceTimeoutMs": 1000,
                "serverAssignor": None,
                "classicMemberMetadata": {
                    "sessionTimeoutMs": 45000,
                    "supportedProtocols": [{"name": "range", "metadata": "$sub_v3_full"}],
                },
            },
        ),
    ),
    "consumer_group_member_metadata/v0_consumer_protocol": (
        "a member on the consumer protocol, as a broker writes it: ClassicMemberMetadata null "
        "(Kafka's default is an empty struct, so the null is written: tag 0, payload 00)",
        _rec(
            5,
            GM,
            {
                "instanceId": None,
                "rackId": None,
                "clientId": "c",
                "clientHost": "/127.0.0.1",
                "subscribedTopicNames": ["pay", "refund"],
                "subscribedTopicRegex": "",
                "rebalanceTimeoutMs": 300000,
                "serverAssignor": None,
                "classicMemberMetadata": None,
            },
        ),
    ),
    "consumer_group_member_metadata/tombstone": ("tombstone", _rec(5, GM, None)),
    "consumer_group_target_assignment_metadata/v0": (
        "ConsumerGroupTargetAssignmentMetadataValue",
        _rec(6, G, {"assignmentEpoch": 4}),
    ),
    "consumer_group_target_assignment_metadata/v0_timestamp": (
        "with the tagged assignmentTimestamp (4.3+)",
        _rec(6, G, {"assignmentEpoch": 4, "assignmentTimestamp": 1700000000000}),
    ),
    "consumer_group_target_assignment_member/v0": (
        "ConsumerGroupTargetAssignmentMemberValue",
        _rec(
            7,
            GM,
            {
                "topicPartitions": [
                    {"topicId": TID, "partitions": [3, 0]},
                    {"topicId": TID2, "partitions": []},
                ]
            },
        ),
    ),
    "consumer_group_current_member_assignment/v0": (
        "ConsumerGroupCurrentMemberAssignmentValue",
        _rec(
            8,
            GM,
            {
                "memberEpoch": 10,
                "previousMemberEpoch": 9,
                "state": 0,
                "assignedPartitions": [{"topicId": TID, "partitions": [1, 2]}],
                "partitionsPendingRevocation": [{"topicId": TID2, "partitions": [0]}],
            },
        ),
    ),
    "consumer_group_current_member_assignment/v0_epochs": (
        "with tagged assignmentEpochs (4.3+)",
        _rec(
            8,
            GM,
            {
                "memberEpoch": 10,
                "previousMemberEpoch": 9,
                "state": 2,
                "assignedPartitions": [
                    {"topicId": TID, "partitions": [1, 2], "assignmentEpochs": [8, 10]}
                ],
                "partitionsPendingRevocation": [],
            },
        ),
    ),
    "consumer_group_current_member_assignment/v0_null_epochs": (
        "assignmentEpochs written as null (its default is an empty list, so null is on the wire)",
        _rec(
            8,
            GM,
            {
                "memberEpoch": 3,
                "previousMemberEpoch": 2,
                "state": 0,
                "assignedPartitions": [
                    {"topicId": TID, "partitions": [0], "assignmentEpochs": None}
                ],
                "partitionsPendingRevocation": [],
            },
        ),
    ),
    "consumer_group_current_member_assignment/tombstone": ("tombstone", _rec(8, GM, None)),
    "share_group_member_metadata/v0": (
        "ShareGroupMemberMetadataValue",
        _rec(
            10,
            GM,
            {"rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": ["s"]},
        ),
    ),
    "share_group_metadata/v0": (
        "ShareGroupMetadataValue",
        _rec(11, G, {"epoch": 2, "metadataHash": 77}),
    ),
    "share_group_target_assignment_metadata/v0": (
        "ShareGroupTargetAssignmentMetadataValue",
        _rec(12, G, {"assignmentEpoch": 2}),
    ),
    "share_group_target_assignment_member/v0": (
        "ShareGroupTargetAssignmentMemberValue",
        _rec(13, GM, {"topicPartitions": [{"topicId": TID, "partitions": [0]}]}),
    ),
    "share_group_current_member_assignment/v0": (
        "ShareGroupCurrentMemberAssignmentValue",
        _rec(
            14,
            GM,
            {
                "memberEpoch": 3,
                "previousMemberEpoch": 2,
                "state": 0,
                "assignedPartitions": [{"topicId": TID, "partitions": [0, 1]}],
            },
        ),
    ),
    "share_group_state_partition_metadata/v0": (
        "ShareGroupStatePartitionMetadataValue",
        _rec(
            15,
            G,
            {
                "initializingTopics": [{"topicId": TID, "topicName": "a", "partitions": [0]}],
                "initializedTopics": [],
                "deletingTopics": [{"topicId": TID2, "topicName": "b"}],
            },
        ),
    ),
    "consumer_group_regular_expression/v0": (
        "ConsumerGroupRegularExpressionValue",
        _rec(
            16,
            {"groupId": "cg", "regularExpression": "pay.*"},
            {"topics": ["pay", "payouts"], "version": 42, "timestamp": 1700000000000},
        ),
    ),
    "streams_group_metadata/v0": (
        "StreamsGroupMetadataValue with both tagged fields",
        _rec(
            17,
            G,
            {
                "epoch": 5,
                "metadataHash": 99,
                "validatedTopologyEpoch": 2,
                "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}],
            },
        ),
    ),
    "streams_group_member_metadata/v0": (
        "StreamsGroupMemberMetadataValue",
        _rec(
            19,
            GM,
            {
                "instanceId": None,
                "rackId": "r",
                "clientId": "c",
                "clientHost": "h",
                "rebalanceTimeoutMs": 5,
                "topologyEpoch": 1,
                "processId": "p-1",
                "userEndpoint": {"host": "app-0", "port": 8080},
                "clientTags": [{"key": "zone", "value": "a"}],
            },
        ),
    ),
    "streams_group_target_assignment_metadata/v0": (
        "StreamsGroupTargetAssignmentMetadataValue",
        _rec(20, G, {"assignmentEpoch": 1}),
    ),
    "streams_group_target_assignment_member/v0": (
        "StreamsGroupTargetAssignmentMemberValue",
        _rec(
            21,
            GM,
            {
                "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1]}],
                "standbyTasks": [],
                "warmupTasks": [],
            },
        ),
    ),
    "streams_group_current_member_assignment/v0": (
        "StreamsGroupCurrentMemberAssignmentValue",
        _rec(
            22,
            GM,
            {
                "memberEpoch": 4,
                "previousMemberEpoch": 3,
                "state": 0,
                "activeTasks": [{"subtopologyId": "0", "partitions": [1], "assignmentEpochs": [4]}],
                "standbyTasks": [],
                "warmupTasks": [],
                "activeTasksPendingRevocation": [],
                "standbyTasksPendingRevocation": [],
                "warmupTasksPendingRevocation": [],
            },
        ),
    ),
    "streams_group_topology/v0": (
        "StreamsGroupTopologyValue",
        _rec(
            23,
            G,
            {
                "epoch": 1,
                "subtopologies": [
                    {
                        "subtopologyId": "0",
                        "sourceTopics": ["in"],
                        "sourceTopicRegex": [],
                        "stateChangelogTopics": [
                            {
                                "name": "app-store-changelog",
                                "partitions": 0,
                                "replicationFactor": 0,
                                "topicConfigs": [],
                            }
                        ],
                        "repartitionSinkTopics": ["app-rep"],
                        "repartitionSourceTopics": [
                            {
                                "name": "app-rep",
                                "partitions": 4,
                                "replicationFactor": -1,
                                "topicConfigs": [{"key": "cleanup.policy", "value": "delete"}],
                            }
                        ],
                        "copartitionGroups": [
                            {
                                "sourceTopics": [0],
                                "sourceTopicRegex": [],
                                "repartitionSourceTopics": [0],
                            }
                        ],
                    }
                ],
            },
        ),
    ),
}

# Payloads that are not Kafka-built on purpose (damaged or foreign): hex by hand, documented.
HANDMADE_PAYLOADS: dict[str, str] = {
    "empty": "",
    "raw_connect": "0001000000057b2e2e2e7d",  # a Connect worker's protocol bytes: opaque to us
    "sub_v3_truncated": "$sub_v3_full[:-3]",  # cut inside rack_id
    "asg_bad_version": "ffff00000000ffffffff",  # version -1
    "sub_v100": "0064" + "$sub_v3_full[2:]" + "0003616263",  # v3 body + an unknown string field
    "asg_v100": "0064" + "$asg_v3[2:]" + "00000000",
}


def _bytes_of(payloads: dict[str, bytes], spec: str) -> bytes:
    """Resolve ``$name``, ``$name[:-3]`` and ``$name[2:]`` references inside a hex spec."""
    out = b""
    rest = spec
    while rest:
        if rest.startswith("$"):
            name_end = 1
            while name_end < len(rest) and (rest[name_end].isalnum() or rest[name_end] == "_"):
                name_end += 1
            name = rest[1:name_end]
            data = payloads[name]
            end = name_end
            if rest[end : end + 1] == "[":
                close = rest.index("]", end)
                a, b = rest[end + 1 : close].split(":")
                data = data[int(a) if a else None : int(b) if b else None]
                end = close + 1
            out += data
            rest = rest[end:]
        else:
            nxt = rest.find("$")
            chunk = rest if nxt < 0 else rest[:nxt]
            out += bytes.fromhex(chunk)
            rest = rest[len(chunk) :]
    return out


@dataclass(frozen=True)
class Vector:
    path: str  # e.g. "group_metadata/v3_sticky_v1" (no extension)
    description: str
    lines: tuple[tuple[str, bytes | None], ...]  # ("key", b"..."), ("value", None), ...
    expected: dict[str, Any]


def _payload_requests() -> list[tuple[str, dict[str, Any]]]:
    reqs: list[tuple[str, dict[str, Any]]] = []
    for name, ud in USER_DATA.items():
        reqs.append((name, ud))
    return reqs


def build(harness: Harness) -> list[Vector]:
    """All vectors, with bytes from Kafka (two harness runs: payloads, then records)."""
    payloads: dict[str, bytes] = {}
    ud_names = list(USER_DATA)
    for name, answer in zip(ud_names, harness([USER_DATA[n] for n in ud_names]), strict=True):
        payloads[name] = _answer_bytes(answer)
    sub_reqs: list[tuple[str, dict[str, Any]]] = []
    for name, sub in SUBS.items():
        req = {"op": "subscription", **{k: v for k, v in sub.items() if k != "user_data_ref"}}
        if "user_data_ref" in sub:
            req["user_data_hex"] = payloads[sub["user_data_ref"]].hex()
        sub_reqs.append((name, req))
    sub_reqs.append(
        (
            "sub_v3_streams",
            {
                "op": "subscription",
                "version": 3,
                "topics": ["in"],
                "user_data_hex": STREAMS_USER_DATA_HEX,
            },
        )
    )
    for name, asg in ASGS.items():
        sub_reqs.append((name, {"op": "assignment", **asg}))
    for (name, _), answer in zip(sub_reqs, harness([r for _, r in sub_reqs]), strict=True):
        payloads[name] = _answer_bytes(answer)
    for name, spec in HANDMADE_PAYLOADS.items():
        payloads[name] = _bytes_of(payloads, spec)

    def resolve(obj: Any) -> Any:
        if isinstance(obj, str) and obj.startswith("$"):
            return base64.b64encode(payloads[obj[1:]]).decode()
        if isinstance(obj, dict):
            return {k: resolve(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [resolve(v) for v in obj]
        return obj

    names = list(RECORDS)
    answers = harness([resolve(RECORDS[n][1]) for n in names])
    vectors = []
    for name, answer in zip(names, answers, strict=True):
        key = bytes.fromhex(answer["key_hex"])
        value = None if answer["value_hex"] is None else bytes.fromhex(answer["value_hex"])
        if name == "group_metadata/v4_unknown_tag":
            value = _add_unknown_member_tag(value)
        vectors.append(
            Vector(
                f"records/{name}",
                RECORDS[name][0],
                (("key", key), ("value", value)),
                record_expected(key, value),
            )
        )
    for name in [*SUBS, "sub_v3_streams", "sub_v100"]:
        data = payloads[name]
        vectors.append(
            Vector(
                f"consumer_protocol/{name}",
                f"ConsumerProtocolSubscription {name}",
                (("subscription", data),),
                subscription_expected(data),
            )
        )
    for name in [*ASGS, "asg_v100"]:
        data = payloads[name]
        vectors.append(
            Vector(
                f"consumer_protocol/{name}",
                f"ConsumerProtocolAssignment {name}",
                (("assignment", data),),
                assignment_expected(data),
            )
        )
    for name in USER_DATA:
        data = payloads[name]
        protocol = "sticky" if name.startswith("sticky") else "cooperative-sticky"
        vectors.append(
            Vector(
                f"user_data/{name}",
                f"{protocol} user data {name}",
                (("user_data", data),),
                {"protocol": protocol, "decoded": user_data_json(decode_user_data(protocol, data))},
            )
        )
    return vectors


def _add_unknown_member_tag(value: bytes | None) -> bytes | None:
    """Kafka writes no tagged fields in GroupMetadataValue; a newer writer might.  Replace the
    single member's empty tag section (second-to-last byte) with one unknown tag 7 = 'hi'."""
    assert value is not None and value[-2:] == b"\x00\x00"
    return value[:-2] + bytes([1, 7, 2]) + b"hi" + b"\x00"


def _answer_bytes(answer: dict[str, Any]) -> bytes:
    if "error" in answer:
        raise RuntimeError(f"harness error: {answer['error']}")
    return bytes.fromhex(answer["hex"])


def record_expected(key: bytes, value: bytes | None) -> dict[str, Any]:
    return to_json_dict(decode_record(key, value))


def subscription_expected(data: bytes) -> dict[str, Any]:
    result: dict[str, Any] = subscription_json(decode_subscription(data), None)
    return result


def assignment_expected(data: bytes) -> dict[str, Any]:
    result: dict[str, Any] = assignment_json(decode_assignment(data), None)
    return result


# --- storage ------------------------------------------------------------------------------------


def render_hex(v: Vector) -> str:
    lines = [f"# {v.description}", "# bytes built by Kafka's own serialisers (see build.py)"]
    for label, data in v.lines:
        lines.append(f"{label}: {'null' if data is None else data.hex()}")
    return "\n".join(lines) + "\n"


def parse_hex(text: str) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, _, data = line.partition(":")
        data = data.strip()
        out[label.strip()] = None if data == "null" else bytes.fromhex(data)
    return out


def render_json(obj: Any) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False) + "\n"


def stored() -> dict[str, tuple[dict[str, bytes | None], Any]]:
    """The committed vectors: path -> (labelled bytes, expected JSON)."""
    out = {}
    for hex_file in sorted(ROOT.rglob("*.hex")):
        path = hex_file.relative_to(ROOT).with_suffix("").as_posix()
        expected = json.loads(hex_file.with_suffix(".json").read_text(encoding="utf-8"))
        out[path] = (parse_hex(hex_file.read_text(encoding="utf-8")), expected)
    return out


def write(vectors: list[Vector]) -> None:
    for v in vectors:
        base = ROOT / v.path
        base.parent.mkdir(parents=True, exist_ok=True)
        base.with_suffix(".hex").write_text(render_hex(v), encoding="utf-8")
        base.with_suffix(".json").write_text(render_json(v.expected), encoding="utf-8")


def java_harness(
    requests: Sequence[dict[str, Any]], kafka_version: str | None = None
) -> list[dict[str, Any]]:
    """Kafka's answers to ``requests`` (RecordOracle), on the default release's classes or on
    ``kafka_version``'s."""
    from groupwatch_dev.broker import DEFAULT_KAFKA_VERSION
    from tests.jvm import run_java

    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    out = run_java(
        "groupwatch.oracle.RecordOracle",
        stdin=stdin,
        kafka_version=kafka_version or DEFAULT_KAFKA_VERSION,
    )
    # split on "\n" only: splitlines() would also cut at U+0085/U+2028 inside JSON strings
    return [json.loads(line) for line in out.split("\n") if line.strip()]


if __name__ == "__main__":
    vs = build(java_harness)
    write(vs)
    print(f"wrote {len(vs)} vectors under {ROOT}")
