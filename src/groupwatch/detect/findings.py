"""A finding, its deterministic id, and its JSON shape (``groupwatch analyze`` prints it)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect.catalogue import KINDS, Severity


@dataclass(frozen=True, slots=True)
class Source:
    """Where the record that produced a finding came from."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "timestamp": self.timestamp,
        }


def finding_id(
    group: str,
    generation: int | None,
    kind: str,
    topic: str | None = None,
    partition: int | None = None,
    member: str | None = None,
    extra: str | None = None,
) -> str:
    """Deterministic id of (group, generation, kind, topic, partition, member).

    ``extra`` only distinguishes findings that have no generation to tell them apart (a record
    that did not decode at all is identified by its position in the log).
    """
    key = json.dumps(
        [group, generation, kind, topic, partition, member, extra],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def tp_list(partitions: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """``[(t, p), ...]`` (topic partitions, or any pairs) -> ``[{"topic": t, "partitions":
    [...]}]``, sorted."""
    by_topic: dict[str, set[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, set()).add(partition)
    return [{"topic": t, "partitions": sorted(by_topic[t])} for t in sorted(by_topic)]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong (or worth knowing) about one group, in the ``analyze`` contract's shape."""

    kind: str
    group: str
    generation: int | None
    detail: str
    source: Source
    topic: str | None = None
    partition: int | None = None
    member: str | None = None
    members: tuple[str, ...] = ()
    partitions: tuple[TopicPartition, ...] | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    #: Disambiguates findings without a generation (see :func:`finding_id`).
    id_extra: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.kind!r} is not in the findings catalogue")

    @property
    def severity(self) -> Severity:
        return KINDS[self.kind].severity

    @property
    def finding_id(self) -> str:
        return finding_id(
            self.group,
            self.generation,
            self.kind,
            self.topic,
            self.partition,
            self.member,
            self.id_extra,
        )

    def to_state(self) -> dict[str, Any]:
        """Every field as JSON-able data, for a finding kept in a group's state."""
        return {
            "kind": self.kind,
            "group": self.group,
            "generation": self.generation,
            "detail": self.detail,
            "source": self.source.to_dict(),
            "topic": self.topic,
            "partition": self.partition,
            "member": self.member,
            "members": list(self.members),
            "partitions": None if self.partitions is None else [list(tp) for tp in self.partitions],
            "evidence": dict(self.evidence),
            "id_extra": self.id_extra,
        }

    @classmethod
    def from_state(cls, doc: Mapping[str, Any]) -> Finding:
        """The inverse of :meth:`to_state`."""
        parts = doc.get("partitions")
        return cls(
            kind=str(doc["kind"]),
            group=str(doc["group"]),
            generation=doc.get("generation"),
            detail=str(doc["detail"]),
            source=Source(**doc.get("source", {})),
            topic=doc.get("topic"),
            partition=doc.get("partition"),
            member=doc.get("member"),
            members=tuple(doc.get("members") or ()),
            partitions=None
            if parts is None
            else tuple(TopicPartition(str(t), int(p)) for t, p in parts),
            evidence=dict(doc.get("evidence") or {}),
            id_extra=doc.get("id_extra"),
        )

    def with_evidence(self, **more: Any) -> Finding:
        """The same finding with more evidence (its id does not change)."""
        return replace(self, evidence={**self.evidence, **more})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``groupwatch analyze`` prints (and the findings table stores)."""
        return {
            "finding_id": self.finding_id,
            "kind": self.kind,
            "severity": self.severity,
            "group": self.group,
            "generation": self.generation,
            "topic": self.topic,
            "partition": self.partition,
            "member": self.member,
            "members": list(self.members),
            "partitions": None if self.partitions is None else tp_list(self.partitions),
            "detail": self.detail,
            "evidence": dict(self.evidence),
            "source": self.source.to_dict(),
        }
