"""The fleet page's table: one row per group with its health now, the ones that need attention
first.  A group's health is the worst of its open findings: those of its latest generation (a
modern group's: of its current group epoch)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.frames import is_null, opt_int
from groupwatch.dashboard.views.findings import with_event_time
from groupwatch.notify.kinds import HEALTHY, rank


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
