"""What each page shows, computed from the tables as plain pandas: no Dash, no I/O.

Every function takes frames as ``DeltaStore.read`` returns them and the page's ``Filters``;
filter values are only ever compared with column values.  A modern group's (KIP-848 consumer,
streams, share) ``generation`` is its group epoch; :mod:`groupwatch.dashboard.modern` reads its
members, which are written one current-assignment record at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.frames import TP, evidence, fmt_tps, is_null, opt_int, tp_pairs
from groupwatch.notify.kinds import HEALTHY, rank


def with_event_time(findings: pd.DataFrame) -> pd.DataFrame:
    """Findings with ``event_time``: the source record's timestamp, else when it was written."""
    f = findings.copy()
    if f.empty:
        f["event_time"] = pd.Series(dtype="datetime64[us, UTC]")
        return f
    ms = f["source"].map(lambda s: s.get("timestamp") if isinstance(s, dict) else None)
    event = pd.to_datetime(ms, unit="ms", utc=True, errors="coerce")
    f["event_time"] = event.fillna(f["detected_at"])
    return f


def _latest_snapshots(snapshots: pd.DataFrame) -> pd.DataFrame:
    s = snapshots.sort_values(["source_timestamp", "source_partition", "source_offset"])
    return s.groupby("group", sort=False).tail(1).set_index("group")


def _worst(severities: Iterable[str]) -> str:
    ranked = sorted(severities, key=rank)
    return ranked[0] if ranked else HEALTHY


def open_findings(findings: pd.DataFrame, snapshots: pd.DataFrame) -> pd.DataFrame:
    """Findings of each group's latest generation: what is wrong right now.

    A later healthy generation closes a group's earlier findings (the notifier resolves alerts
    the same way); a deleted group has none open.
    """
    if findings.empty or snapshots.empty:
        return findings.iloc[0:0]
    latest = _latest_snapshots(snapshots)
    live = latest[~latest["tombstone"].fillna(False).astype(bool)]
    last_gen = live["generation"].to_dict()
    kinds = modern.group_types(snapshots)
    mask = pd.Series(
        [
            last_gen.get(g) is not None and gen == last_gen[g]
            for g, gen in zip(findings["group"], findings["generation"], strict=True)
        ],
        index=findings.index,
    )
    # A modern group's findings carry member epochs too: they are open while the group is
    # still at the group epoch they were raised at (a new group epoch is a new assignment).
    for group in {str(g) for g in findings["group"].dropna()}:
        if not modern.is_modern(kinds.get(group, modern.CLASSIC)):
            continue
        mine = findings["group"] == group
        at = modern.finding_epochs(findings[mine], snapshots, group)
        last = last_gen.get(group)
        mask[mine] = [last is not None and not is_null(last) and e == last for e in at]
    return findings[mask]


def groups_with_topic(members: pd.DataFrame, topic: str) -> set[str]:
    if members.empty:
        return set()
    hit = members["topics"].map(lambda ts: ts is not None and topic in list(ts))
    return set(members.loc[hit, "group"])


def fleet(
    snapshots: pd.DataFrame,
    findings: pd.DataFrame,
    members: pd.DataFrame,
    filters: Filters,
    now: datetime | None = None,
) -> pd.DataFrame:
    """One row per group, the ones that need attention first."""
    cols = [
        "group",
        "group_type",
        "health",
        "last_generation",
        "assignment_epoch",
        "member_count",
        "protocol",
        "last_seen",
        "rebalances_last_hour",
        "open_findings",
        "critical",
        "error",
        "warning",
        "info",
    ]
    if snapshots.empty:
        return pd.DataFrame(columns=cols)
    now = now or datetime.now(UTC)
    latest = _latest_snapshots(snapshots)
    opened = open_findings(findings, snapshots)
    window = with_event_time(in_window(findings, "detected_at", filters))
    hour_ago = pd.Timestamp(now - timedelta(hours=1))
    recent = snapshots[
        (snapshots["source_timestamp"] >= hour_ago)
        & ~snapshots["tombstone"].fillna(False).astype(bool)
    ]
    rebalances = recent.groupby("group")["generation"].nunique().to_dict()
    kinds = modern.group_types(snapshots)
    rows = []
    for group, snap in latest.iterrows():
        mine = opened[opened["group"] == group]
        counts = window[window["group"] == group]["severity"].value_counts().to_dict()
        deleted = bool(snap["tombstone"]) if pd.notna(snap["tombstone"]) else False
        gtype = kinds.get(str(group), modern.CLASSIC)
        count = opt_int(snap["member_count"])
        epoch = None
        if modern.is_modern(gtype):
            at = modern.epochs(snapshots, str(group))
            epoch = at.assignment_epoch
            if count is None and not deleted:
                # Group-epoch records state no member count: count the members' records.
                count = len(modern.members_at(members, str(group), at))
        rows.append(
            {
                "group": group,
                "group_type": gtype,
                "health": "deleted" if deleted else _worst(mine["severity"]),
                "last_generation": opt_int(snap["generation"]),
                "assignment_epoch": epoch,
                "member_count": count or 0,
                "protocol": snap["protocol"],
                "last_seen": snap["source_timestamp"],
                "rebalances_last_hour": int(rebalances.get(group, 0)),
                "open_findings": len(mine),
                **{s: int(counts.get(s, 0)) for s in ("critical", "error", "warning", "info")},
            }
        )
    out = pd.DataFrame(rows, columns=cols)
    if filters.group:
        out = out[out["group"] == filters.group]
    if filters.topic:
        out = out[out["group"].isin(groups_with_topic(members, filters.topic))]
    if filters.severity:
        out = out[out["health"].map(rank) <= rank(filters.severity)]
    start = filters.since_time(now)
    if start is not None:
        out = out[out["last_seen"] >= pd.Timestamp(start)]
    key = out["health"].map(lambda h: rank(h) if h != "deleted" else 99)
    out = out.assign(_k=key).sort_values(
        ["_k", "open_findings", "rebalances_last_hour", "group"],
        ascending=[True, False, False, True],
    )
    return out.drop(columns="_k").reset_index(drop=True)


def filtered_findings(findings: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    f = with_event_time(findings)
    if filters.group:
        f = f[f["group"] == filters.group]
    if filters.topic:
        f = f[
            f["topic"].eq(filters.topic)
            | f["partitions"].map(lambda ps: any(t == filters.topic for t, _ in tp_pairs(ps)))
        ]
    if filters.severity:
        f = f[f["severity"].map(rank) <= rank(filters.severity)]
    if filters.generation is not None:
        f = f[f["generation"] == filters.generation]
    f = in_window(f, "event_time", filters)
    return (
        f.assign(_r=f["severity"].map(rank))
        .sort_values(["event_time", "_r"], ascending=[False, True])
        .drop(columns="_r")
    )


def findings_over_time(findings: pd.DataFrame) -> pd.DataFrame:
    """Counts per time bucket and severity (bucket: 5 minutes up to 6 h of data, else 1 h)."""
    if findings.empty:
        return pd.DataFrame(columns=["bucket", "severity", "count"])
    span = findings["event_time"].max() - findings["event_time"].min()
    freq = "5min" if span <= pd.Timedelta(hours=6) else "1h"
    b = findings.assign(bucket=findings["event_time"].dt.floor(freq))
    return b.groupby(["bucket", "severity"]).size().reset_index(name="count")


def timeline(snapshots: pd.DataFrame, members: pd.DataFrame, group: str) -> pd.DataFrame:
    """The group's generations in order: who joined, who left, leader changes.

    A modern group's are its group-epoch records (:func:`modern.timeline`).
    """
    if modern.is_modern(modern.group_type(snapshots, group)):
        return modern.timeline(snapshots, members, group)
    s = snapshots[(snapshots["group"] == group) & (modern.types(snapshots) == modern.CLASSIC)]
    s = s.sort_values(["source_timestamp", "source_partition", "source_offset"])
    m = members[(members["group"] == group) & (modern.types(members) == modern.CLASSIC)]
    by_offset: dict[tuple[int, int], set[str]] = {}
    for (part, off), rows in m.groupby(["source_partition", "source_offset"]):
        by_offset[(int(part), int(off))] = set(rows["member_id"])
    rows_out = []
    prev: set[str] = set()
    prev_leader = None
    for _, snap in s.iterrows():
        cur = by_offset.get((int(snap["source_partition"]), int(snap["source_offset"])), set())
        tomb = bool(snap["tombstone"]) if pd.notna(snap["tombstone"]) else False
        rows_out.append(
            {
                "time": snap["source_timestamp"],
                "generation": None if pd.isna(snap["generation"]) else int(snap["generation"]),
                "event": "deleted" if tomb else "rebalance",
                "member_count": 0 if pd.isna(snap["member_count"]) else int(snap["member_count"]),
                "protocol": snap["protocol"],
                "leader": snap["leader"],
                "leader_changed": bool(prev_leader is not None and snap["leader"] != prev_leader),
                "joined": ", ".join(sorted(cur - prev)),
                "left": ", ".join(sorted(prev - cur)),
            }
        )
        prev, prev_leader = cur, snap["leader"]
    return pd.DataFrame(
        rows_out,
        columns=[
            "time",
            "generation",
            "event",
            "member_count",
            "protocol",
            "leader",
            "leader_changed",
            "joined",
            "left",
        ],
    )


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
    top = max((int(c) for c in snap["claim_generation"].fillna(-1)), default=-1)
    mm: list[MatrixMember] = []
    cells: dict[TP, dict[str, Cell]] = {}
    claimants: dict[TP, list[int]] = {}
    topics: set[str] = set()
    for _, row in snap.iterrows():
        member = str(row["member_id"])
        cgen = -1 if pd.isna(row["claim_generation"]) else int(row["claim_generation"])
        claim = tp_pairs(row["claim"])
        stale = bool(claim) and cgen < top
        mm.append(MatrixMember(member, row["client_id"], cgen, stale))
        topics.update(list(row["topics"]) if row["topics"] is not None else [])
        for tp in claim:
            c = cells.setdefault(tp, {}).setdefault(member, Cell())
            c.claimed, c.stale_claim = True, stale
            claimants.setdefault(tp, []).append(cgen)
        for tp in tp_pairs(row["assignment"]):
            cells.setdefault(tp, {}).setdefault(member, Cell()).assigned = True
    _every_partition(cells, offsets, group, topics)
    f = findings[(findings["group"] == group) & (findings["generation"] == generation)]
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


def _kinds_by_partition(findings: pd.DataFrame) -> dict[TP, set[str]]:
    kinds_of: dict[TP, set[str]] = {}
    for _, fr in findings.iterrows():
        tps = tp_pairs(fr["partitions"])
        if pd.notna(fr["topic"]) and pd.notna(fr["partition"]):
            tps.append((str(fr["topic"]), int(fr["partition"])))
        for tp in tps:
            kinds_of.setdefault(tp, set()).add(str(fr["kind"]))
    return kinds_of


def findings_at(
    findings: pd.DataFrame, snapshots: pd.DataFrame, group: str, generation: int | None
) -> pd.DataFrame:
    """The group's findings of one generation; a modern group's of one group epoch."""
    mine = findings[findings["group"] == group]
    if not modern.is_modern(modern.group_type(snapshots, group)):
        return mine[mine["generation"] == generation]
    at = modern.finding_epochs(mine, snapshots, group)
    return mine[[e is not None and e == generation for e in at]]


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


def expected_diff(findings: pd.DataFrame, group: str, generation: int | None) -> pd.DataFrame:
    """Per member, the partitions that differ from the re-run assignor (sticky_divergence)."""
    cols = ["member", "actual_only", "expected_only"]
    f = findings[
        (findings["group"] == group)
        & (findings["generation"] == generation)
        & (findings["kind"] == "sticky_divergence")
    ]
    rows = []
    for _, fr in f.iterrows():
        for member, diff in (evidence(fr["evidence"]).get("members") or {}).items():
            rows.append(
                {
                    "member": member,
                    "actual_only": fmt_tps(tp_pairs((diff or {}).get("actual_only"))),
                    "expected_only": fmt_tps(tp_pairs((diff or {}).get("expected_only"))),
                }
            )
    return pd.DataFrame(rows, columns=cols)


def partition_history(ownership: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    o = ownership
    if filters.group:
        o = o[o["group"] == filters.group]
    if filters.topic:
        o = o[o["topic"] == filters.topic]
    if filters.partition is not None:
        o = o[o["partition"] == filters.partition]
    start = filters.since_time()
    if start is not None:
        o = o[o["to_time"].isna() | (o["to_time"] >= pd.Timestamp(start))]
    return o.sort_values(["group", "topic", "partition", "from_time", "member_id"])


def quarantine_counts(quarantine: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    q = in_window(quarantine, "quarantined_at", filters)
    if filters.group:
        q = q[q["group"] == filters.group]
    if q.empty:
        return pd.DataFrame(columns=["stage", "error_kind", "count"])
    return (
        q.groupby(["stage", "error_kind"])
        .size()
        .reset_index(name="count")
        .sort_values("count", ascending=False)
    )


def validation_summary(results: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """The latest result of every expectation, failing ones first."""
    r = in_window(results, "validated_at", filters)
    cols = [
        "table_name",
        "expectation",
        "success",
        "unexpected_count",
        "validated_at",
        "batch_id",
        "failures_in_window",
    ]
    if r.empty:
        return pd.DataFrame(columns=cols)
    r = r.sort_values("validated_at")
    fails = (
        r[~r["success"].fillna(False).astype(bool)].groupby(["table_name", "expectation"]).size()
    )
    latest = r.groupby(["table_name", "expectation"]).tail(1).copy()
    latest["failures_in_window"] = [
        int(fails.get((t, e), 0))
        for t, e in zip(latest["table_name"], latest["expectation"], strict=True)
    ]
    return latest.sort_values(["success", "table_name", "expectation"])[cols]


def throughput(snapshots: pd.DataFrame, findings: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """Group-metadata records per minute (event time) and the finding latency in seconds."""
    s = in_window(snapshots, "source_timestamp", filters)
    per_min = s.assign(minute=s["source_timestamp"].dt.floor("1min")).groupby("minute").size()
    f = with_event_time(findings)
    f = in_window(f, "event_time", filters)
    lag = (f["detected_at"] - f["event_time"]).dt.total_seconds()
    lat = f.assign(minute=f["detected_at"].dt.floor("1min"), lag=lag).groupby("minute")["lag"].max()
    out = pd.DataFrame({"records": per_min, "max_finding_latency_s": lat})
    return out.rename_axis("minute").reset_index()
