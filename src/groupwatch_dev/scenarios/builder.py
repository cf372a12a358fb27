"""Turn a scenario file into records: decoded lines (the ``groupwatch decode`` contract) and
raw ``__consumer_offsets`` records (key/value bytes, built with the decoder's encoder).

The scenario format is the stable part; the streaming job and the demo replay the raw records
into a Kafka topic (:func:`raw_records`, or ``python -m groupwatch_dev.scenarios.builder FILE``).

A scenario is a JSON object::

    {"name": "...", "incident": "KAFKA-7026", "reference": "...", "summary": "...",
     "partitions": {"t": 3} | absent,          # known counts (as --partitions); absent: infer
     "records": [RECORD, ...],
     "expect": [MATCH, ...],                   # each must match at least one finding
     "forbid": [MATCH, ...],                   # none may match any finding
     "exhaustive": true}                       # no warning/critical beyond those expected

RECORD is one of
    {"group": g, "generation": n, "protocol": "sticky", "leader": id, "version": 3,
     "protocol_type": "consumer", "time": seconds, "members": [MEMBER, ...]}
    {"tombstone": g, "time": s}
    {"commit": {"group": g, "topic": t, "partition": p, "topic_id": UUID | absent}, "time": s}
    {"garbage": g, "time": s}        # a group-metadata record whose value does not decode
    {"repeat": n, "every": seconds, "record": RECORD}   # generations n, n+1, ... (time += every)

MEMBER is
    {"id": "C1", "instance": null, "topics": ["t"], "version": 3,
     "owned": {"t": [0, 1]}, "generation_id": 5 | -1 | "prev",
     "sticky": {"previous": {"t": [0]}, "generation": 4 | null | "prev"},   # sticky user data
     "coop": 4 | "prev",                                                   # cooperative user data
     "assigned": {"t": [0, 1]}, "rack": null,
     "subscription_error": null, "assignment_error": null}
``"prev"`` stands for the record's generation minus one.  MATCH is a partial finding:
``{"kind": ..., "generation"?, "topic"?, "partition"?, "member"?, "group"?}``.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from groupwatch.protocol.jsonview import kafka_uuid
from groupwatch_dev.scenarios.encoding import encode_line

#: The scenario library: ``incidents/`` (public incidents) and ``kinds/`` (one per finding).
LIBRARY = Path(__file__).resolve().parent
BASE_TIME_MS = 1_700_000_000_000
OFFSETS_PARTITIONS = 50


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    doc.setdefault("name", path.stem)
    return doc


def scenario_files() -> list[Path]:
    return sorted(p for d in ("incidents", "kinds") for p in (LIBRARY / d).glob("*.json"))


def _tps(spec: Mapping[str, list[int]] | None) -> list[dict[str, Any]]:
    if not spec:
        return []
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(spec.items())]


def _gen(value: Any, generation: int) -> int | None:
    if value == "prev":
        return generation - 1
    return None if value is None else int(value)


def coordinator_partition(group: str) -> int:
    """``abs(group.hashCode) % 50``, as Kafka places a group (Java String.hashCode)."""
    h = 0
    for unit in group.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (abs(h) if h != -(1 << 31) else 0) % OFFSETS_PARTITIONS


def member_value(m: Mapping[str, Any], generation: int) -> dict[str, Any]:
    """One MEMBER -> the decoder contract's ``members[i]`` object."""
    version = int(m.get("version", 3))
    user_data: dict[str, Any] | None = None
    if "sticky" in m:
        st = m["sticky"]
        ud_gen = _gen(st.get("generation"), generation)
        user_data = {
            "kind": "sticky",
            "version": 0 if ud_gen is None else 1,
            "previous_assignment": _tps(st.get("previous")),
            "generation": ud_gen,
        }
    elif "coop" in m:
        user_data = {"kind": "cooperative-sticky", "generation": _gen(m["coop"], generation)}
    elif "user_data" in m:
        user_data = m["user_data"]
    gen_id = _gen(m.get("generation_id", -1), generation)
    subscription = {
        "version": version,
        "topics": sorted(m.get("topics", [])),
        "owned_partitions": _tps(m.get("owned")) if version >= 1 else [],
        "generation_id": (gen_id if gen_id is not None else -1) if version >= 2 else -1,
        "rack_id": m.get("rack") if version >= 3 else None,
        "user_data": user_data,
    }
    assignment = {
        "version": version,
        "assigned_partitions": _tps(m.get("assigned")),
        "user_data": None,
    }
    return {
        "member_id": m["id"],
        "group_instance_id": m.get("instance"),
        "client_id": m.get("client_id", str(m["id"]).split("-")[0]),
        "client_host": m.get("host", "/127.0.0.1"),
        "rebalance_timeout": 300000,
        "session_timeout": 45000,
        "subscription": None if m.get("subscription_error") else subscription,
        "assignment": None if m.get("assignment_error") else assignment,
        "subscription_error": _error(m.get("subscription_error"), "subscription"),
        "assignment_error": _error(m.get("assignment_error"), "assignment"),
    }


def _error(text: Any, what: str) -> dict[str, Any] | None:
    if not text:
        return None
    return {"kind": "truncated", "field_path": f"{what}", "byte_offset": 0, "message": str(text)}


def _expand(records: list[Mapping[str, Any]]) -> Iterator[tuple[dict[str, Any], float]]:
    time = 0.0
    for rec in records:
        if "repeat" in rec:
            base = dict(rec["record"])
            start = float(base.get("time", time))
            for i in range(int(rec["repeat"])):
                r = dict(base)
                r["generation"] = int(base["generation"]) + i
                time = start + i * float(rec.get("every", 1))
                yield r, time
            continue
        time = float(rec.get("time", time + 1))
        yield dict(rec), time


def decoded_lines(scenario: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scenario as ``groupwatch decode`` output lines, in order."""
    out: list[dict[str, Any]] = []
    offsets: dict[int, int] = {}
    for rec, time in _expand(list(scenario["records"])):
        group = rec.get("group") or rec.get("tombstone") or rec.get("garbage")
        if "commit" in rec:
            group = rec["commit"]["group"]
        assert isinstance(group, str), rec
        partition = coordinator_partition(group)
        offset = offsets.get(partition, 0)
        offsets[partition] = offset + 1
        line: dict[str, Any] = {
            "topic": "__consumer_offsets",
            "partition": partition,
            "offset": offset,
            "timestamp": BASE_TIME_MS + int(time * 1000),
            "group": group,
            "error": None,
        }
        if "commit" in rec:
            c = rec["commit"]
            line.update(
                record_type="offset_commit",
                record_type_id=1,
                tombstone=False,
                key={"group": group, "topic": c["topic"], "partition": c["partition"]},
                value={
                    # v4 (Kafka 4.1+) carries the topic's id, printed as Kafka prints it
                    "version": 4 if c.get("topic_id") else 3,
                    "offset": 42,
                    "leader_epoch": -1,
                    "metadata": "",
                    "commit_timestamp": line["timestamp"],
                    "expire_timestamp": None,
                    "topic_id": kafka_uuid(uuid.UUID(c["topic_id"])) if c.get("topic_id") else None,
                },
            )
        elif "tombstone" in rec:
            line.update(
                record_type="group_metadata",
                record_type_id=2,
                tombstone=True,
                key={"group": group},
                value=None,
            )
        elif "garbage" in rec:
            line.update(
                record_type="group_metadata",
                record_type_id=2,
                tombstone=False,
                key={"group": group},
                value=None,
                error={
                    "kind": "unsupported_version",
                    "field_path": "version",
                    "byte_offset": 0,
                    "message": "GroupMetadataValue version 9",
                },
            )
        else:
            generation = int(rec["generation"])
            members = [member_value(m, generation) for m in rec.get("members", [])]
            line.update(
                record_type="group_metadata",
                record_type_id=2,
                tombstone=False,
                key={"group": group},
                value={
                    "version": int(rec.get("version", 3)),
                    "protocol_type": rec.get("protocol_type", "consumer"),
                    "generation": generation,
                    "protocol": rec.get("protocol"),
                    "leader": rec.get("leader", members[0]["member_id"] if members else None),
                    "current_state_timestamp": line["timestamp"],
                    "members": members,
                },
            )
        out.append(line)
    return out


def raw_records(scenario: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scenario as raw records ``{"key", "value" (base64), topic, partition, offset,
    timestamp}`` -- what ``groupwatch decode`` and ``analyze`` read, and what a replay
    produces into a topic.  Built with the decoder's encoder."""
    return [encode_line(line) for line in decoded_lines(scenario)]


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def main(argv: list[str]) -> int:
    """``python -m groupwatch_dev.scenarios.builder [--decoded] FILE...``: records as JSON lines."""
    decoded = "--decoded" in argv
    for name in (a for a in argv if not a.startswith("--")):
        scenario = load(Path(name))
        for line in decoded_lines(scenario) if decoded else raw_records(scenario):
            print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
