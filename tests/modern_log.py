"""One group's KIP-848, streams or share records on one ``__consumer_offsets`` partition, built
by hand for the millisecond tests of the engine and of the job's rows.

Each record is written as a ``groupwatch decode`` line (the shape a reader checks by eye) and
encoded to real bytes with the decoder's own encoder, so a test can feed either form: decoded
lines (``analyze``'s decoded input), raw lines (``analyze``'s raw input) or source records (the
job).  The scenario library builds the same kinds with Kafka's own serialisers.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from groupwatch.processing import SourceRecord
from groupwatch.protocol import (
    RECORD_TYPES,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from groupwatch.protocol.schema import ArrayOf, Prim, StructSpec, TypeSpec

BASE = 1_800_000_000_000
G = "g"
PARTITION = 7
#: Topic ids as Kafka prints them (16 bytes each).
ORDERS = "b3JkZXJzLXRvcGljLWlkMA"
PAYMENTS = "cGF5bWVudHMtdG9waWMtaWQ"
CONSUMER = {"epoch": 3, "member": 5, "aepoch": 6, "target": 7, "current": 8}
STREAMS = {"epoch": 17, "member": 19, "aepoch": 20, "target": 21, "current": 22}
SHARE = {"epoch": 11, "member": 10, "aepoch": 12, "target": 13, "current": 14}


def kafka_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def typed(spec: TypeSpec, value: Any) -> Any:
    """A decoded line's value (JSON) -> what the encoder takes for ``spec``: the struct's
    dataclass, missing fields at their default (a missing struct is absent: null)."""
    if isinstance(spec, StructSpec):
        fields = {
            f.name: typed(f.type, value[f.name])
            if f.name in value
            else (None if isinstance(f.type, StructSpec) else f.default)
            for f in spec.fields
        }
        return spec.cls(**fields)
    if isinstance(spec, ArrayOf):
        return None if value is None else tuple(typed(spec.element, v) for v in value)
    if spec is Prim.UUID and isinstance(value, str):
        return kafka_uuid(value)
    return value


def encoded(line: dict[str, Any]) -> tuple[bytes, bytes | None]:
    """The key and value bytes of a decoded line."""
    type_id = line["record_type_id"]
    if type_id == 1:
        k = line["key"]
        key = encode_key(OffsetCommitKey(k["group"], k["topic"], k["partition"]))
        v = line["value"]
        if v is None:
            return key, None
        topic_id = v.get("topic_id")
        value = OffsetCommitValue(
            offset=v["offset"],
            metadata="",
            commit_timestamp=line["timestamp"],
            topic_id=None if topic_id is None else kafka_uuid(topic_id),
        )
        return key, encode_value(value, v["version"])
    rt = RECORD_TYPES[type_id]
    assert rt.key is not None and rt.value is not None
    key = encode_key(typed(rt.key.struct, line["key"]), type_id)
    if line["value"] is None:
        return key, None
    version = line["value"]["version"]
    return key, encode_value(typed(rt.value.struct, line["value"]["data"]), version, type_id)


class Log:
    """Records of group ``g`` on partition 7, in order, as decoded lines."""

    def __init__(self, types: dict[str, int] | None = None, ids: str = "topic_id") -> None:
        self.lines: list[dict[str, Any]] = []
        #: record type per role: consumer groups unless told otherwise
        self.types = types or CONSUMER
        #: what names a partition's topic: ``topic_id``, or ``subtopology_id`` for streams
        self.ids = ids

    def _line(self, group: str, type_id: int, t: float, **rest: Any) -> Log:
        self.lines.append(
            {
                "topic": "__consumer_offsets",
                "partition": PARTITION,
                "offset": len(self.lines),
                "timestamp": BASE + int(t * 1000),
                "record_type": RECORD_TYPES[type_id].name,
                "record_type_id": type_id,
                "group": group,
                "error": None,
                **rest,
            }
        )
        return self

    def add(self, type_id: int, key: dict[str, Any], data: dict[str, Any] | None, t: float) -> Log:
        value = None if data is None else {"version": 0, "data": data}
        return self._line(G, type_id, t, tombstone=data is None, key=key, value=value)

    def commit(self, topic: str, topic_id: str, t: float) -> Log:
        """An offset commit whose v4 value names ``topic_id``: the topic's name for the id."""
        key = {"group": G, "topic": topic, "partition": 0}
        value = {"version": 4, "offset": 1, "topic_id": topic_id}
        return self._line(G, 1, t, tombstone=False, key=key, value=value)

    def names(self, t: float, topic: str = "orders") -> Log:
        return self.commit(topic, ORDERS, t)

    def epoch(self, e: int | None, t: float) -> Log:
        data = None if e is None else {"epoch": e}
        return self.add(self.types["epoch"], {"group_id": G}, data, t)

    def assignment_epoch(self, e: int, t: float) -> Log:
        return self.add(self.types["aepoch"], {"group_id": G}, {"assignment_epoch": e}, t)

    def member(self, m: str, t: float, topics: tuple[str, ...] = ("orders",), **data: Any) -> Log:
        base = {
            "subscribed_topic_names": list(topics),
            "rebalance_timeout_ms": 60_000,
            "client_id": f"client-{m}",
            "client_host": "/10.0.0.1",
            "server_assignor": "uniform",
        }
        return self.add(self.types["member"], {"group_id": G, "member_id": m}, base | data, t)

    def tps(self, parts: list[int], topic: str = ORDERS) -> list[dict[str, Any]]:
        return [{self.ids: topic, "partitions": parts}] if parts else []

    def target(self, m: str, parts: list[int], t: float) -> Log:
        field = "active_tasks" if self.ids == "subtopology_id" else "topic_partitions"
        key = {"group_id": G, "member_id": m}
        return self.add(self.types["target"], key, {field: self.tps(parts)}, t)

    def current(
        self,
        m: str,
        epoch: int,
        state: int,
        assigned: list[int],
        t: float,
        pending: list[int] | None = None,
    ) -> Log:
        streams = self.ids == "subtopology_id"
        data = {
            "member_epoch": epoch,
            "previous_member_epoch": epoch - 1,
            "state": state,
            "active_tasks" if streams else "assigned_partitions": self.tps(assigned),
            "active_tasks_pending_revocation"
            if streams
            else "partitions_pending_revocation": self.tps(pending or []),
        }
        return self.add(self.types["current"], {"group_id": G, "member_id": m}, data, t)

    def gone(self, m: str, t: float) -> Log:
        for role in ("current", "target", "member"):
            self.add(self.types[role], {"group_id": G, "member_id": m}, None, t)
        return self

    def clock(self, t: float) -> Log:
        """Another group's commit tombstone on the same partition: it only tells the time."""
        key = {"group": "other", "topic": "x", "partition": 0}
        return self._line("other", 1, t, tombstone=True, key=key, value=None)

    # -- the other forms ------------------------------------------------------------------------
    def raw(self) -> list[dict[str, Any]]:
        """The records as raw lines (``groupwatch decode``'s and ``analyze``'s input)."""
        out = []
        for line in self.lines:
            key, value = encoded(line)
            out.append(
                {
                    "key": base64.b64encode(key).decode(),
                    "value": None if value is None else base64.b64encode(value).decode(),
                    **{f: line[f] for f in ("topic", "partition", "offset", "timestamp")},
                }
            )
        return out

    def records(self) -> list[SourceRecord]:
        """The records as Spark's Kafka source delivers them to the job."""
        return [
            SourceRecord(*encoded(ln), ln["topic"], ln["partition"], ln["offset"], ln["timestamp"])
            for ln in self.lines
        ]
