"""The modern-group scenario library (KIP-848 consumer, KIP-1071 streams and KIP-932 share
groups) as raw ``__consumer_offsets`` records, every byte written by Kafka's own serialisers.

Test tooling, not product: the scenarios live in ``tests/scenarios/modern/{kinds,incidents,
healthy}/*.json``; :func:`build` turns them into raw records (``{"key", "value"`` base64 or
null, ``"topic": "__consumer_offsets", "partition", "offset", "timestamp"}``) through the
project's Java harness ``groupwatch.oracle.RecordOracle`` (op ``record``, which reads Kafka's
JSON form of a record with ``CoordinatorRecordJsonConverters`` and writes it with
``GroupCoordinatorRecordSerde``), one JVM run for any number of scenarios. Nothing is cached.

A scenario is a JSON object::

    {"name": ..., "incident": "KAFKA-16147" | absent, "reference": url, "summary": ...,
     "partition": 7,                   # the __consumer_offsets partition of every record
     "group": "mi-kafka-16147",        # the group of every write that names none
     "type": "consumer",               # consumer | streams | share (default consumer)
     "topics": {"orders": "<uuid>"},   # optional fixed ids; any other topic name n gets
                                       #   uuid5(TOPIC_NAMESPACE, n)
     "partitions": {"orders": 4},      # optional known counts (for classic records)
     "config": {"broker_version": "4.1.1"},   # optional DetectorConfig / detect.* settings
     "assignment_timestamps": true,    # optional: 6/20/12 carry AssignmentTimestamp (4.3+)
     "assignment_epochs": true,        # optional: 8/22 carry each partition's AssignmentEpoch
                                       #   (4.3+, KIP-1251): the member epoch of the record
                                       #   that first gave it, kept while it is held
     "writes": [WRITE, ...],
     "expect": [MATCH, ...], "forbid": [MATCH, ...], "exhaustive": true}

MATCH is a partial finding, as in ``tests/scenarios/test_scenarios.py``.  A WRITE is one
coordinator write: all its records share one timestamp, ``"at"`` seconds after
``BASE_TIME_MS`` (default: the previous write's time + 1 s; two WRITEs with the same ``at``
are one write). ``"group"`` and ``"type"`` override the scenario's; ``"note"`` is free text.
Its keys are written in this order whatever their order in the file -- Kafka's order for a
member that leaves (8, 7, 5 tombstones, then 3) and for a changing heartbeat (5, [4], [16], 3,
changed 7s, 6, then the member's 8)::

    "leave": id                 current, target and member tombstones of ``id`` (8-, 7-, 5-;
                                22-, 21-, 19- for streams; 14-, 13-, 10- for share)
    "classic_tombstone": true   a GroupMetadata (2) tombstone: a classic group converted
    "members": {id: MEMBER | null}          5 / 19 / 10 (null: tombstone)
    "topology": {subtopology: [topic, ...]} 23 (streams)
    "partition_metadata": {topic: count}    4 (brokers <= 4.0 name topic ids here)
    "regex": {regex: [topic, ...] | null}   16
    "epoch": n | null                       3 / 17 / 11 (the group epoch)
    "targets": {id: ASSIGNMENT | null}      7 / 21 / 13
    "assignment_epoch": n | null            6 / 20 / 12
    "current": {id: CURRENT | [CURRENT, ...] | null}   8 / 22 / 14, in the order given
    "share_partitions": {topic: [p, ...]}   15 (share groups' initialised partitions)

or exactly one of::

    "commit": {"topic": t, "partitions": [p, ...], "offset"?: n, "group"?: g,
               "topic_id"?: true}    OffsetCommitValue v4 with the topic id (4.1+), one per
                                     partition; ``"topic_id": false`` writes v3 (no id)
    "clock": true                    a commit of group ``clock-<partition>`` (topic ``clock``):
                                     moves the partition's stream time and nothing else
    "classic": {"generation": n, "protocol": "range", "leader"?: id,
                "members": {id: {"topics": [...], "assigned": {t: [p]},
                                 "owned"?: {t: [p]}, "generation_id"?: n}}}
                                     a GroupMetadata (2) value v3; the members' consumer
                                     protocol bytes are Kafka's (ConsumerProtocol v3)

MEMBER: consumer ``{"topics": [...], "regex"?: r, "instance"?: id, "rebalance_timeout_ms"?:
300000, "assignor"?: name, "classic"?: "range"}`` (``classic``: a member still on the classic
protocol, with ClassicMemberMetadata) or simply ``[topic, ...]``; streams ``{"process": p,
"instance"?, "rebalance_timeout_ms"?, "topology_epoch"?: 0}``; share ``{"topics": [...]}``.

ASSIGNMENT: ``{topic: [p, ...]}``; streams ``{"active": {subtopology: [p]}, "standby": ...,
"warmup": ...}``.

CURRENT: ``{"epoch": n, "prev": n (default epoch), "state": name | int (default STABLE),
"assigned": {topic: [p]}, "pending": {topic: [p]}}``; streams ``{..., "active", "standby",
"warmup", "active_pending", "standby_pending", "warmup_pending"}`` (subtopology -> tasks);
share ``{..., "assigned"}``.  State names: ``STABLE``, ``UNREVOKED``, ``UNRELEASED``,
``UNKNOWN``, mapped to each protocol's own byte (:data:`STATES`).

Each scenario ends with a ``clock`` write late enough for the confirmation window and any
time threshold (``tests/scenarios/test_modern_scenarios.py`` checks it), so what it expects is
raised at the end of the input. In the library every scenario has a partition and groups of
its own, so all of them can go through one job together: stream time is kept per partition,
and another scenario's later records must not move a scenario's clock past its end.

    .venv/bin/python -m tests.scenarios.modern_records [FILE ...]   # raw records, JSON lines
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LIBRARY = Path(__file__).resolve().parent / "modern"
SECTIONS = ("kinds", "incidents", "healthy")
OFFSETS_TOPIC = "__consumer_offsets"
BASE_TIME_MS = 1_700_000_000_000
#: Topic ids not given in a scenario: uuid5 of the name in this namespace, so a name always
#: has the same id (in every scenario and every run).
TOPIC_NAMESPACE = uuid.UUID("6c1f0a52-3c1e-4e0b-9a51-8d5a7f6c2b10")

#: The State byte of each protocol's current-assignment record (Kafka's MemberState enums:
#: the streams one numbers its states differently).
STATES: dict[str, dict[str, int]] = {
    "consumer": {"STABLE": 0, "UNREVOKED": 1, "UNRELEASED": 2, "UNKNOWN": 127},
    "streams": {"STABLE": 1, "UNREVOKED": 2, "UNRELEASED": 3, "UNKNOWN": 127},
    "share": {"STABLE": 0},
}

#: Record type ids by group type and role.
ROLES: dict[str, dict[str, int]] = {
    "consumer": {"member": 5, "group": 3, "target": 7, "target_epoch": 6, "current": 8},
    "streams": {"member": 19, "group": 17, "target": 21, "target_epoch": 20, "current": 22},
    "share": {"member": 10, "group": 11, "target": 13, "target_epoch": 12, "current": 14},
}

_HEARTBEAT_KEYS = (
    "leave",
    "classic_tombstone",
    "members",
    "topology",
    "partition_metadata",
    "regex",
    "epoch",
    "targets",
    "assignment_epoch",
    "current",
    "share_partitions",
)
_OTHER_KEYS = ("commit", "clock", "classic")
_META_KEYS = ("at", "group", "type", "note")


class ScenarioError(ValueError):
    """A scenario file that does not follow the format."""


# --- loading ---------------------------------------------------------------------------------


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    doc.setdefault("name", path.stem)
    doc.setdefault("forbid", [])
    doc.setdefault("exhaustive", False)
    return doc


def scenario_files() -> list[Path]:
    return sorted(p for d in SECTIONS for p in (LIBRARY / d).glob("*.json"))


def load_all() -> dict[str, dict[str, Any]]:
    """Every scenario by ``<section>/<stem>``."""
    return {f"{p.parent.name}/{p.stem}": load(p) for p in scenario_files()}


# --- ids and names ---------------------------------------------------------------------------


def topic_id(scenario: Mapping[str, Any], name: str) -> uuid.UUID:
    fixed = (scenario.get("topics") or {}).get(name)
    return uuid.UUID(fixed) if fixed else uuid.uuid5(TOPIC_NAMESPACE, name)


def kafka_uuid(u: uuid.UUID) -> str:
    """``Uuid.toString()``: URL-safe base64 of the 16 bytes, unpadded (Kafka's JSON form)."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def clock_group(partition: int) -> str:
    return f"clock-{partition}"


def groups(scenario: Mapping[str, Any]) -> set[str]:
    """Every group a scenario writes records for, its clock group excepted."""
    out = {str(scenario["group"])}
    for w in scenario["writes"]:
        if "group" in w:
            out.add(str(w["group"]))
        if "commit" in w and "group" in w["commit"]:
            out.add(str(w["commit"]["group"]))
    return out


# --- records ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Payload:
    """Consumer-protocol bytes the harness builds first (op ``subscription``/``assignment``),
    then put into a record's JSON as base64 where the record says ``{"$payload": n}``."""

    request: dict[str, Any]


@dataclass
class Record:
    """One record in Kafka's JSON form (``CoordinatorRecordJsonConverters``), where it goes and
    when. ``value is None`` is a tombstone."""

    type: int
    key: dict[str, Any]
    value: dict[str, Any] | None
    version: int
    partition: int
    offset: int
    time_ms: int
    group: str
    payloads: list[Payload] = field(default_factory=list)

    def request(self) -> dict[str, Any]:
        req: dict[str, Any] = {"op": "record", "type": self.type, "key": self.key}
        if self.value is None:
            req["value"] = None
        else:
            req["value"] = self.value
            req["version"] = self.version
        return req


def _tps(
    scenario: Mapping[str, Any],
    spec: Mapping[str, Sequence[int]] | None,
    epochs: Mapping[tuple[str, int], int] | None = None,
) -> list[Any]:
    """``{topic: [p]}`` -> Kafka's ``[{"topicId", "partitions"}]`` (topic order kept), with
    each partition's assignment epoch when ``epochs`` is given (brokers 4.3+)."""
    out = []
    for t, ps in (spec or {}).items():
        entry: dict[str, Any] = {
            "topicId": kafka_uuid(topic_id(scenario, t)),
            "partitions": sorted(ps),
        }
        if epochs is not None:
            entry["assignmentEpochs"] = [epochs[(t, p)] for p in sorted(ps)]
        out.append(entry)
    return out


def _tasks(
    spec: Mapping[str, Sequence[int]] | None,
    epochs: Mapping[tuple[str, int], int] | None = None,
) -> list[Any]:
    out = []
    for s, ps in (spec or {}).items():
        entry: dict[str, Any] = {"subtopologyId": s, "partitions": sorted(ps)}
        if epochs is not None:
            entry["assignmentEpochs"] = [epochs[(s, p)] for p in sorted(ps)]
        out.append(entry)
    return out


def _state(kind: str, value: Any) -> int:
    if isinstance(value, int):
        return value
    try:
        return STATES[kind][str(value)]
    except KeyError:
        raise ScenarioError(f"no state {value!r} for {kind} groups") from None


def _member_value(
    kind: str, m: Any, payload: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    if isinstance(m, list):
        m = {"topics": m}
    if kind == "consumer":
        classic = None
        if m.get("classic"):
            sub = payload(
                {"op": "subscription", "version": 3, "topics": sorted(m["topics"]), "rack_id": None}
            )
            classic = {
                "sessionTimeoutMs": int(m.get("session_timeout_ms", 45000)),
                "supportedProtocols": [{"name": m["classic"], "metadata": sub}],
            }
        value: dict[str, Any] = {
            "instanceId": m.get("instance"),
            "rackId": None,
            "clientId": m.get("client_id", "consumer"),
            "clientHost": "/127.0.0.1",
            "subscribedTopicNames": sorted(m.get("topics", [])),
            # what a 4.x broker writes for a member without a regex
            "subscribedTopicRegex": m.get("regex", ""),
            "rebalanceTimeoutMs": int(m.get("rebalance_timeout_ms", 300000)),
            "serverAssignor": m.get("assignor"),
        }
        # Written as null, not left out: Kafka's JSON reader would make an empty struct of a
        # missing one (a member on the classic protocol), where brokers write a null tag.
        value["classicMemberMetadata"] = classic
        return value
    if kind == "streams":
        return {
            "instanceId": m.get("instance"),
            "rackId": None,
            "clientId": m.get("client_id", "streams-StreamThread-1-consumer"),
            "clientHost": "/127.0.0.1",
            "rebalanceTimeoutMs": int(m.get("rebalance_timeout_ms", 300000)),
            "topologyEpoch": int(m.get("topology_epoch", 0)),
            "processId": m["process"],
            "userEndpoint": None,
            "clientTags": [],
        }
    return {
        "rackId": None,
        "clientId": m.get("client_id", "share"),
        "clientHost": "/127.0.0.1",
        "subscribedTopicNames": sorted(m.get("topics", [])),
    }


def _target_value(scenario: Mapping[str, Any], kind: str, a: Mapping[str, Any]) -> dict[str, Any]:
    if kind == "streams":
        return {
            "activeTasks": _tasks(a.get("active")),
            "standbyTasks": _tasks(a.get("standby")),
            "warmupTasks": _tasks(a.get("warmup")),
        }
    return {"topicPartitions": _tps(scenario, a)}


#: The lists of a current-assignment record that share assignment epochs: a partition keeps
#: its epoch while it moves from assigned to pending revocation.
_FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "consumer": {"partitions": ("assigned", "pending")},
    "streams": {
        "active": ("active", "active_pending"),
        "standby": ("standby", "standby_pending"),
        "warmup": ("warmup", "warmup_pending"),
    },
    "share": {},
}


def _current_value(
    scenario: Mapping[str, Any],
    kind: str,
    c: Mapping[str, Any],
    epochs: Mapping[str, Mapping[tuple[str, int], int]] | None = None,
) -> dict[str, Any]:
    epoch = int(c["epoch"])
    value: dict[str, Any] = {
        "memberEpoch": epoch,
        "previousMemberEpoch": int(c.get("prev", epoch)),
        "state": _state(kind, c.get("state", "STABLE")),
    }
    e = epochs or {}
    if kind == "streams":
        for name in ("active", "standby", "warmup"):
            value[f"{name}Tasks"] = _tasks(c.get(name), e.get(name))
        for name in ("active", "standby", "warmup"):
            value[f"{name}TasksPendingRevocation"] = _tasks(c.get(f"{name}_pending"), e.get(name))
    elif kind == "share":
        value["assignedPartitions"] = _tps(scenario, c.get("assigned"))
    else:
        value["assignedPartitions"] = _tps(scenario, c.get("assigned"), e.get("partitions"))
        value["partitionsPendingRevocation"] = _tps(scenario, c.get("pending"), e.get("partitions"))
    return value


def _topology_value(spec: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopologyId": s,
                "sourceTopics": list(topics),
                "sourceTopicRegex": [],
                "stateChangelogTopics": [],
                "repartitionSinkTopics": [],
                "repartitionSourceTopics": [],
                "copartitionGroups": [],
            }
            for s, topics in spec.items()
        ],
    }


class _Builder:
    """Expands a scenario's writes into :class:`Record` s, numbering offsets per partition."""

    def __init__(self, scenario: Mapping[str, Any]) -> None:
        self.scenario = scenario
        self.partition = int(scenario["partition"])
        self.records: list[Record] = []
        self._payloads: list[Payload] = []
        self._offset = 0
        #: (group, member) -> family -> (topic, partition) -> assignment epoch, for scenarios
        #: written as a 4.3+ broker writes them (``"assignment_epochs": true``).
        self._held: dict[tuple[str, str], dict[str, dict[tuple[str, int], int]]] = {}

    def _payload(self, request: dict[str, Any]) -> dict[str, Any]:
        self._payloads.append(Payload(request))
        return {"$payload": request}

    def add(
        self,
        type_: int,
        key: dict[str, Any],
        value: dict[str, Any] | None,
        time_ms: int,
        group: str,
        version: int = 0,
    ) -> None:
        payloads, self._payloads = self._payloads, []
        self.records.append(
            Record(
                type_, key, value, version, self.partition, self._offset, time_ms, group, payloads
            )
        )
        self._offset += 1

    def run(self) -> list[Record]:
        time_s = 0.0
        last = None
        for i, w in enumerate(self.scenario["writes"]):
            unknown = set(w) - set(_HEARTBEAT_KEYS) - set(_OTHER_KEYS) - set(_META_KEYS)
            if unknown:
                raise ScenarioError(f"write {i}: unknown keys {sorted(unknown)}")
            time_s = float(w.get("at", time_s + 1 if last is not None else 0))
            if last is not None and time_s < last:
                raise ScenarioError(f"write {i}: time goes back ({time_s} < {last})")
            last = time_s
            time_ms = BASE_TIME_MS + round(time_s * 1000)
            group = str(w.get("group", self.scenario["group"]))
            kind = str(w.get("type", self.scenario.get("type", "consumer")))
            others = [k for k in _OTHER_KEYS if k in w]
            if others and (len(others) > 1 or any(k in w for k in _HEARTBEAT_KEYS)):
                raise ScenarioError(f"write {i}: {others} must stand alone")
            if "commit" in w:
                self._commit(w["commit"], group, time_ms)
            elif "clock" in w:
                self._commit(
                    {
                        "group": clock_group(self.partition),
                        "topic": "clock",
                        "partitions": [0],
                        "topic_id": False,
                    },
                    group,
                    time_ms,
                )
            elif "classic" in w:
                self._classic(w["classic"], group, time_ms)
            else:
                self._heartbeat(w, group, kind, time_ms)
        return self.records

    def _commit(self, c: Mapping[str, Any], group: str, time_ms: int) -> None:
        group = str(c.get("group", group))
        with_id = c.get("topic_id", True)
        partitions = c.get("partitions", [c.get("partition", 0)])
        for p in partitions:
            value: dict[str, Any] = {
                "offset": int(c.get("offset", 42)),
                "leaderEpoch": 0,
                "metadata": "",
                "commitTimestamp": time_ms,
            }
            if with_id:
                value["topicId"] = kafka_uuid(topic_id(self.scenario, c["topic"]))
            key = {"group": group, "topic": c["topic"], "partition": int(p)}
            self.add(1, key, value, time_ms, group, version=4 if with_id else 3)

    def _classic(self, c: Mapping[str, Any], group: str, time_ms: int) -> None:
        generation = int(c["generation"])
        members = []
        for member_id, m in c["members"].items():
            owned = [[t, p] for t, ps in (m.get("owned") or {}).items() for p in ps]
            sub = self._payload(
                {
                    "op": "subscription",
                    "version": 3,
                    "topics": sorted(m["topics"]),
                    "owned_partitions": owned,
                    # a member of the previous generation sends it; a new one sends -1
                    "generation_id": m.get(
                        "generation_id", generation - 1 if m.get("owned") else -1
                    ),
                    "rack_id": None,
                }
            )
            assigned = [[t, p] for t, ps in (m.get("assigned") or {}).items() for p in ps]
            asg = self._payload({"op": "assignment", "version": 3, "partitions": assigned})
            members.append(
                {
                    "memberId": member_id,
                    "groupInstanceId": m.get("instance"),
                    "clientId": "consumer",
                    "clientHost": "/127.0.0.1",
                    "rebalanceTimeout": 300000,
                    "sessionTimeout": 45000,
                    "subscription": sub,
                    "assignment": asg,
                }
            )
        value = {
            "protocolType": "consumer",
            "generation": generation,
            "protocol": c.get("protocol", "range"),
            "leader": c.get("leader", next(iter(c["members"]), None)),
            "currentStateTimestamp": time_ms,
            "members": members,
        }
        self.add(2, {"group": group}, value, time_ms, group, version=3)

    def _heartbeat(self, w: Mapping[str, Any], group: str, kind: str, time_ms: int) -> None:
        roles = ROLES[kind]
        sc = self.scenario

        def member_key(member: str) -> dict[str, Any]:
            return {"groupId": group, "memberId": member}

        if "leave" in w:
            m = str(w["leave"])
            self._held.pop((group, m), None)
            for role in ("current", "target", "member"):
                self.add(roles[role], member_key(m), None, time_ms, group)
        if w.get("classic_tombstone"):
            self.add(2, {"group": group}, None, time_ms, group)
        for m, spec in (w.get("members") or {}).items():
            value = None if spec is None else _member_value(kind, spec, self._payload)
            self.add(roles["member"], member_key(m), value, time_ms, group)
        if "topology" in w:
            self.add(23, {"groupId": group}, _topology_value(w["topology"]), time_ms, group)
        if "partition_metadata" in w:
            topics = [
                {
                    "topicId": kafka_uuid(topic_id(sc, t)),
                    "topicName": t,
                    "numPartitions": int(n),
                    "partitionMetadata": [],
                }
                for t, n in w["partition_metadata"].items()
            ]
            self.add(4, {"groupId": group}, {"topics": topics}, time_ms, group)
        for regex, topics in (w.get("regex") or {}).items():
            key = {"groupId": group, "regularExpression": regex}
            value = (
                None
                if topics is None
                else {"topics": sorted(topics), "version": 1, "timestamp": time_ms}
            )
            self.add(16, key, value, time_ms, group)
        if "epoch" in w:
            self.add(roles["group"], {"groupId": group}, self._epoch_value(kind, w), time_ms, group)
        for m, a in (w.get("targets") or {}).items():
            value = None if a is None else _target_value(sc, kind, a)
            self.add(roles["target"], member_key(m), value, time_ms, group)
        if "assignment_epoch" in w:
            ae = w["assignment_epoch"]
            value = None if ae is None else {"assignmentEpoch": int(ae)}
            if value is not None and sc.get("assignment_timestamps"):
                value["assignmentTimestamp"] = time_ms
            self.add(roles["target_epoch"], {"groupId": group}, value, time_ms, group)
        for m, currents in (w.get("current") or {}).items():
            if currents is None:
                self._held.pop((group, m), None)
                self.add(roles["current"], member_key(m), None, time_ms, group)
                continue
            for c in currents if isinstance(currents, list) else [currents]:
                value = _current_value(sc, kind, c, self._assignment_epochs(kind, group, m, c))
                self.add(roles["current"], member_key(m), value, time_ms, group)
        if "share_partitions" in w:
            initialized = [
                {"topicId": kafka_uuid(topic_id(sc, t)), "topicName": t, "partitions": sorted(ps)}
                for t, ps in w["share_partitions"].items()
            ]
            value = {
                "initializingTopics": [],
                "initializedTopics": initialized,
                "deletingTopics": [],
            }
            self.add(15, {"groupId": group}, value, time_ms, group)

    def _assignment_epochs(
        self, kind: str, group: str, member: str, c: Mapping[str, Any]
    ) -> dict[str, dict[tuple[str, int], int]] | None:
        """Each held partition's assignment epoch (KIP-1251): the member epoch of the record
        that first gave it to the member, kept while the member holds it."""
        if not self.scenario.get("assignment_epochs"):
            return None
        old = self._held.get((group, member), {})
        new: dict[str, dict[tuple[str, int], int]] = {}
        for family, lists in _FAMILIES[kind].items():
            held = old.get(family, {})
            new[family] = {
                (t, p): held.get((t, p), int(c["epoch"]))
                for name in lists
                for t, ps in (c.get(name) or {}).items()
                for p in ps
            }
        self._held[(group, member)] = new
        return new

    @staticmethod
    def _epoch_value(kind: str, w: Mapping[str, Any]) -> dict[str, Any] | None:
        if w["epoch"] is None:
            return None
        value: dict[str, Any] = {"epoch": int(w["epoch"])}
        if kind != "consumer":
            # a plain field there; the consumer group's is tagged (4.1+), left at its default
            value["metadataHash"] = 0
        if kind == "streams":
            value["validatedTopologyEpoch"] = 0
        return value


def records(scenario: Mapping[str, Any]) -> list[Record]:
    """A scenario's records in Kafka's JSON form, in order (pure Python; no JVM)."""
    return _Builder(scenario).run()


# --- through Kafka -----------------------------------------------------------------------------


Harness = Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]


def java_harness(requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One run of ``groupwatch.oracle.RecordOracle`` over all ``requests``."""
    from tests.jvm import run_java

    if not requests:
        return []
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    out = run_java("groupwatch.oracle.RecordOracle", stdin=stdin)
    # split on "\n" only: splitlines() would also cut at U+0085/U+2028 inside JSON strings
    answers = [json.loads(line) for line in out.split("\n") if line.strip()]
    if len(answers) != len(requests):
        raise AssertionError(f"{len(requests)} requests, {len(answers)} answers")
    return answers


def _answer(ans: Mapping[str, Any], what: str) -> Mapping[str, Any]:
    if "error" in ans:
        raise ScenarioError(f"Kafka refused {what}: {ans['error']}")
    return ans


def _fill(value: Any, payloads: Mapping[str, str]) -> Any:
    """Replace every ``{"$payload": request}`` by the base64 of Kafka's bytes for it."""
    if isinstance(value, dict):
        if set(value) == {"$payload"}:
            return payloads[json.dumps(value["$payload"], sort_keys=True)]
        return {k: _fill(v, payloads) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, payloads) for v in value]
    return value


def _b64_of_hex(text: str | None) -> str | None:
    return None if text is None else base64.b64encode(bytes.fromhex(text)).decode("ascii")


def build(
    scenarios: Mapping[str, Mapping[str, Any]], harness: Harness = java_harness
) -> dict[str, list[dict[str, Any]]]:
    """Raw records of every scenario, by name. One harness run for all records, preceded by
    one for the consumer-protocol bytes of classic members when any scenario has some."""
    built = {name: records(doc) for name, doc in scenarios.items()}
    wanted = {
        json.dumps(p.request, sort_keys=True): p.request
        for recs in built.values()
        for r in recs
        for p in r.payloads
    }
    payloads: dict[str, str] = {}
    if wanted:
        answers = harness(list(wanted.values()))
        for key, ans in zip(wanted, answers, strict=True):
            b64 = _b64_of_hex(_answer(ans, key)["hex"])
            assert b64 is not None, key
            payloads[key] = b64
    flat = [(name, r) for name, recs in built.items() for r in recs]
    requests = []
    for _, r in flat:
        req = r.request()
        if r.payloads:
            req["value"] = _fill(req["value"], payloads)
        requests.append(req)
    answers = harness(requests)
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in scenarios}
    for (name, r), req, ans in zip(flat, requests, answers, strict=True):
        ans = _answer(ans, f"{name}: {json.dumps(req)}")
        out[name].append(
            {
                "key": _b64_of_hex(ans["key_hex"]),
                "value": _b64_of_hex(ans["value_hex"]),
                "topic": OFFSETS_TOPIC,
                "partition": r.partition,
                "offset": r.offset,
                "timestamp": r.time_ms,
            }
        )
    return out


def raw_records(
    scenario: Mapping[str, Any], harness: Harness = java_harness
) -> list[dict[str, Any]]:
    """One scenario's raw records (one harness run)."""
    return build({"s": scenario}, harness)["s"]


def iter_json_lines(paths: Sequence[Path]) -> Iterator[str]:
    docs = {str(p): load(p) for p in paths} if paths else load_all()
    for recs in build(docs).values():
        for rec in recs:
            yield json.dumps(rec)


def main(argv: list[str]) -> int:
    for line in iter_json_lines([Path(a) for a in argv]):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
