"""What the per-snapshot rules share, computed once per classic snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from groupwatch.assignor import TopicPartition
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.expected import Expected, NoExpected, expected_assignment, kafka_claims
from groupwatch.detect.findings import Finding
from groupwatch.detect.history import AssignedGeneration
from groupwatch.detect.model import GroupSnapshot, MemberState
from groupwatch.detect.rules.reading import Reading, has_generation, read_claims
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
    #: The one reading of every claim (valid, stale or tied) all rules share.
    reading: Reading = field(default_factory=Reading)
    #: tp -> members assigned it (record order, each member once)
    assignees: dict[TP, list[str]] = field(default_factory=dict)
    highest_claim_generation: int = -1
    expected: Expected | NoExpected | None = None
    #: member -> its claims inferred stale, left out of the re-run's inputs (which then
    #: differ from what the leader read).
    inferred_stale: dict[str, set[TP]] = field(default_factory=dict)
    #: The record repeats a generation already assigned (a static member replaced under the
    #: same generation): its assignment is the earlier leader's, made on other subscriptions.
    repeated_generation: bool = False
    #: The group was seen withholding claimed partitions for a round and handing them out in
    #: the next: it rebalances cooperatively whatever its assignor is called (Streams).
    withholding_seen: bool = False
    #: Subscribed topics that did not exist for the generation's leader (deleted).
    missing: Mapping[str, Missing] = field(default_factory=dict)

    @property
    def claimants(self) -> dict[TP, list[MemberState]]:
        return self.reading.claimants

    @property
    def valid_owner(self) -> dict[TP, str | None]:
        return self.reading.valid_owner

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
    previous: AssignedGeneration | None = None,
    repeated_generation: bool = False,
) -> Facts:
    """``previous``: the last completed generation before ``snap`` (``None``: not known);
    ``repeated_generation``: ``snap`` repeats the generation of the last completed record."""
    sticky = (snap.protocol or "") in config.sticky_protocols
    kafka = (lambda inferred: kafka_claims(snap, counts, inferred)) if sticky else None
    f = Facts(
        snap,
        config,
        counts,
        count_sources,
        reading=read_claims(snap, previous, kafka),
        withholding_seen=withholding_seen,
        missing=missing or {},
        repeated_generation=repeated_generation,
    )
    for m in snap.members:
        for tp in dict.fromkeys(m.assigned):
            f.assignees.setdefault(tp, []).append(m.member_id)
    f.highest_claim_generation = max((m.claim_generation for m in snap.members), default=-1)
    for (member, tp), why in f.reading.stale.items():
        if why.inferred_from is not None:
            f.inferred_stale.setdefault(member, set()).add(tp)
    if f.sticky:
        f.expected = expected_assignment(snap, counts, f.inferred_stale)
    return f


def claims_evidence(ms: list[MemberState]) -> dict[str, int | None]:
    """member -> its claim's generation (``None``: the claim carries none)."""
    return {m.member_id: m.claim_generation if has_generation(m) else None for m in ms}
