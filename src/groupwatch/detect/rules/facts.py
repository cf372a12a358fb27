"""What the per-snapshot rules share, computed once per classic snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupwatch.assignor import TopicPartition
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.expected import Expected, NoExpected, expected_assignment
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import GroupSnapshot, MemberState
from groupwatch.detect.topic_counts import Missing

TP = TopicPartition


def name(tp: TP) -> str:
    return f"{tp[0]}-{tp[1]}"


@dataclass
class Facts:
    """What several rules share, computed once per snapshot."""

    snap: GroupSnapshot
    config: DetectorConfig
    counts: Mapping[str, int]
    count_sources: Mapping[str, str]
    #: tp -> members claiming it (record order, each member once)
    claimants: dict[TP, list[MemberState]] = field(default_factory=dict)
    #: tp -> members assigned it (record order, each member once)
    assignees: dict[TP, list[str]] = field(default_factory=dict)
    #: tp -> the member whose claim Kafka honours (None: nobody, equal generations)
    valid_owner: dict[TP, str | None] = field(default_factory=dict)
    highest_claim_generation: int = -1
    expected: Expected | NoExpected | None = None
    #: The group was seen withholding claimed partitions for a round and handing them out in
    #: the next: it rebalances cooperatively whatever its assignor is called (Streams).
    withholding_seen: bool = False
    #: Subscribed topics that did not exist for the generation's leader (deleted).
    missing: Mapping[str, Missing] = field(default_factory=dict)

    @property
    def cooperative(self) -> bool:
        return (self.snap.protocol or "") in self.config.cooperative_protocols

    @property
    def sticky(self) -> bool:
        return (self.snap.protocol or "") in self.config.sticky_protocols

    def finding(self, kind: str, detail: str, **kw: object) -> Finding:
        return Finding(
            kind=kind,
            group=self.snap.group,
            generation=self.snap.generation,
            detail=detail,
            source=self.snap.source,
            **kw,  # type: ignore[arg-type]  # keyword fields of Finding, checked at runtime
        )


def facts(
    snap: GroupSnapshot,
    config: DetectorConfig,
    counts: Mapping[str, int],
    count_sources: Mapping[str, str],
    withholding_seen: bool = False,
    missing: Mapping[str, Missing] | None = None,
) -> Facts:
    f = Facts(
        snap,
        config,
        counts,
        count_sources,
        withholding_seen=withholding_seen,
        missing=missing or {},
    )
    for m in snap.members:
        for tp in dict.fromkeys(m.claim):
            f.claimants.setdefault(tp, []).append(m)
        for tp in dict.fromkeys(m.assigned):
            f.assignees.setdefault(tp, []).append(m.member_id)
    f.highest_claim_generation = max((m.claim_generation for m in snap.members), default=-1)
    for tp, ms in f.claimants.items():
        top = max(m.claim_generation for m in ms)
        winners = [m for m in ms if m.claim_generation == top]
        f.valid_owner[tp] = winners[0].member_id if len(winners) == 1 else None
    if f.sticky:
        f.expected = expected_assignment(snap, counts)
    return f


def claims_evidence(ms: list[MemberState]) -> dict[str, int]:
    return {m.member_id: m.claim_generation for m in ms}
