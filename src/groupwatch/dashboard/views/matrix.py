"""The group page's partition ownership matrix: per member and partition (a streams group: per
task), what is claimed, assigned, pending revocation or targeted, and which rows overlap."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.frames import TP, evidence, tp_pairs
from groupwatch.dashboard.views.findings import findings_at


@dataclass
class Cell:
    assigned: bool = False
    claimed: bool = False
    stale_claim: bool = False
    #: Modern groups: still held, pending revocation (it counts as owned).
    pending: bool = False
    #: Modern groups: in the member's target assignment.
    target: bool = False


@dataclass
class MatrixRow:
    topic: str
    partition: int
    cells: dict[str, Cell]
    overlap: bool = False
    unassigned: bool = False
    withheld: bool = False
    contested: bool = False
    kinds: set[str] = field(default_factory=set)


@dataclass
class MatrixMember:
    member_id: str
    client_id: str | None
    claim_generation: int
    stale: bool
    #: Modern groups: the member's epoch and state (STABLE, UNREVOKED, UNRELEASED, ...).
    member_epoch: int | None = None
    state: str | None = None
    #: The claim's generation in words (:func:`claim_words`).
    claim_text: str = ""


def claim_words(
    claim_generation: int | None,
    user_data_kind: str | None,
    subscription_version: int | None,
    claimed: bool = True,
) -> str:
    """A claim's generation as the page shows it: the number, or why the member's claim has
    none (Kafka's encodings that carry no generation), never a bare -1."""
    if claim_generation is not None and claim_generation >= 0:
        return str(claim_generation)
    if not claimed:
        # Java's assignors write generation -1 with nothing owned before a first assignment.
        return "none: nothing claimed"
    if user_data_kind == "sticky":
        # StickyAssignor user data v0 (before KIP-341) holds the partitions only.
        return "none: StickyAssignor user data v0"
    if user_data_kind == "cooperative-sticky":
        return "none: no generation in the CooperativeStickyAssignor user data"
    if subscription_version is not None and subscription_version >= 1:
        # Owned partitions came with ConsumerProtocolSubscription v1, their generation with v2.
        return f"none: ConsumerProtocolSubscription v{subscription_version} has no generation"
    return "none: no claim"


@dataclass
class Matrix:
    group: str
    generation: int | None
    generations: list[int]
    members: list[MatrixMember]
    rows: list[MatrixRow]
    group_type: str = modern.CLASSIC
    #: Modern groups: the assignment epoch at ``generation`` (the group epoch).
    assignment_epoch: int | None = None
    #: The group's newest record is a tombstone.
    deleted: bool = False


def ownership_matrix(
    members: pd.DataFrame,
    findings: pd.DataFrame,
    offsets: pd.DataFrame,
    group: str,
    generation: int | None,
    snapshots: pd.DataFrame | None = None,
) -> Matrix:
    """Claimed vs assigned per member and partition for one generation (default: the latest).

    With ``snapshots``, a modern group's matrix is that of :func:`modern_matrix`.
    """
    if snapshots is not None and modern.is_modern(modern.group_type(snapshots, group)):
        return modern_matrix(snapshots, members, findings, offsets, group, generation)
    m = members[(members["group"] == group) & (modern.types(members) == modern.CLASSIC)]
    gens = sorted({int(g) for g in m["generation"].dropna()})
    if generation is None or generation not in gens:
        generation = gens[-1] if gens else None
    if generation is None:
        return Matrix(group, None, gens, [], [])
    snap = m[m["generation"] == generation]
    # The newest record of that generation (a generation can be written more than once).
    newest = snap.sort_values(["source_timestamp", "source_offset"]).iloc[-1]
    snap = snap[
        (snap["source_partition"] == newest["source_partition"])
        & (snap["source_offset"] == newest["source_offset"])
    ]
    f = findings[(findings["group"] == group) & (findings["generation"] == generation)]
    stale_of = _stale_claims(f)
    mm: list[MatrixMember] = []
    cells: dict[TP, dict[str, Cell]] = {}
    claimants: dict[TP, list[int]] = {}
    topics: set[str] = set()
    for _, row in snap.iterrows():
        member = str(row["member_id"])
        cgen = -1 if pd.isna(row["claim_generation"]) else int(row["claim_generation"])
        claim = tp_pairs(row["claim"])
        stale = stale_of.get(member, set())
        words = claim_words(
            cgen,
            None if pd.isna(row["user_data_kind"]) else str(row["user_data_kind"]),
            None if pd.isna(row["subscription_version"]) else int(row["subscription_version"]),
            claimed=bool(claim),
        )
        mm.append(MatrixMember(member, row["client_id"], cgen, bool(stale), claim_text=words))
        topics.update(list(row["topics"]) if row["topics"] is not None else [])
        for tp in claim:
            c = cells.setdefault(tp, {}).setdefault(member, Cell())
            c.claimed, c.stale_claim = True, tp in stale
            claimants.setdefault(tp, []).append(cgen)
        for tp in tp_pairs(row["assignment"]):
            cells.setdefault(tp, {}).setdefault(member, Cell()).assigned = True
    _every_partition(cells, offsets, group, topics)
    kinds_of = _kinds_by_partition(f)
    withheld: set[TP] = set()
    for _, fr in f.iterrows():
        withheld.update(tp_pairs(evidence(fr["evidence"]).get("expected_withheld")))
    rows = []
    for tp in sorted(cells):
        per = cells[tp]
        assigned = [k for k, c in per.items() if c.assigned]
        gens_claimed = claimants.get(tp, [])
        rows.append(
            MatrixRow(
                topic=tp[0],
                partition=tp[1],
                cells=per,
                overlap=len(assigned) > 1,
                unassigned=not assigned,
                withheld=not assigned and tp in withheld,
                contested=len(gens_claimed) > 1,
                kinds=kinds_of.get(tp, set()),
            )
        )
    return Matrix(group, generation, gens, mm, rows)


def _every_partition(
    cells: dict[TP, dict[str, Cell]], offsets: pd.DataFrame, group: str, topics: set[str]
) -> None:
    """Partitions nobody claimed or was assigned still exist: take the count the group
    committed."""
    if offsets.empty:
        return
    for _, o in offsets[(offsets["group"] == group) & offsets["topic"].isin(topics)].iterrows():
        if pd.notna(o["max_partition"]):
            for p in range(int(o["max_partition"]) + 1):
                cells.setdefault((str(o["topic"]), p), {})


def _stale_claims(findings: pd.DataFrame) -> dict[str, set[TP]]:
    """member -> its stale claims, as the engine read them (``stale_owned_partitions``): the
    matrix shows the findings' one reading of each claim, not a second one of its own (a lower
    generation nobody contests is not stale)."""
    out: dict[str, set[TP]] = {}
    for _, fr in findings[findings["kind"] == "stale_owned_partitions"].iterrows():
        ev = evidence(fr["evidence"])
        # Findings written before the evidence listed ``stale`` name the lost claims.
        stale = ev.get("stale", ev.get("lost_to_fresher_claims"))
        if pd.notna(fr["member"]):
            out.setdefault(str(fr["member"]), set()).update(tp_pairs(stale))
    return out


def _kinds_by_partition(findings: pd.DataFrame) -> dict[TP, set[str]]:
    kinds_of: dict[TP, set[str]] = {}
    for _, fr in findings.iterrows():
        tps = tp_pairs(fr["partitions"])
        if pd.notna(fr["topic"]) and pd.notna(fr["partition"]):
            tps.append((str(fr["topic"]), int(fr["partition"])))
        for tp in tps:
            kinds_of.setdefault(tp, set()).add(str(fr["kind"]))
    return kinds_of


def modern_matrix(
    snapshots: pd.DataFrame,
    members: pd.DataFrame,
    findings: pd.DataFrame,
    offsets: pd.DataFrame,
    group: str,
    epoch: int | None,
) -> Matrix:
    """A modern group's members at one group epoch (default: the newest) and, per partition
    (a streams group: per task), who has it assigned, pending revocation or as its target.

    A partition held (assigned or pending revocation) by two members is an overlap -- except
    in a share group, whose members share partitions by design.
    """
    at = modern.epochs(snapshots, group, epoch)
    mm: list[MatrixMember] = []
    cells: dict[TP, dict[str, Cell]] = {}
    topics: set[str] = set()
    for _, r in modern.members_at(members, group, at).iterrows():
        member = str(r["member_id"])
        mm.append(
            MatrixMember(
                member,
                r["client_id"],
                -1,
                False,
                member_epoch=r["member_epoch"],
                state=r["member_state"] or None,
            )
        )
        for attr, tps in (
            ("assigned", r["assignment"]),
            ("pending", r["pending_revocation"]),
            ("target", r["target"] or []),
        ):
            for tp in tps:
                setattr(cells.setdefault(tp, {}).setdefault(member, Cell()), attr, True)
                topics.add(tp[0])
    _every_partition(cells, offsets, group, topics)
    kinds_of = _kinds_by_partition(findings_at(findings, snapshots, group, at.group_epoch))
    exclusive = at.group_type != modern.SHARE
    rows = []
    for tp in sorted(cells):
        per = cells[tp]
        held = [k for k, c in per.items() if c.assigned or c.pending]
        rows.append(
            MatrixRow(
                topic=tp[0],
                partition=tp[1],
                cells=per,
                overlap=exclusive and len(held) > 1,
                unassigned=not held,
                kinds=kinds_of.get(tp, set()),
            )
        )
    return Matrix(
        group,
        at.group_epoch,
        list(at.epochs),
        mm,
        rows,
        group_type=at.group_type,
        assignment_epoch=at.assignment_epoch,
        deleted=at.deleted,
    )
