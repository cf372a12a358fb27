"""The findings the pages list: in the filters' window, over time, of one generation or group
epoch, and the difference to the re-run assignor's assignment."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard import modern
from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.frames import evidence, fmt_tps, tp_pairs
from groupwatch.notify.kinds import rank


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


def findings_at(
    findings: pd.DataFrame, snapshots: pd.DataFrame, group: str, generation: int | None
) -> pd.DataFrame:
    """The group's findings of one generation; a modern group's of one group epoch."""
    mine = findings[findings["group"] == group]
    if not modern.is_modern(modern.group_type(snapshots, group)):
        return mine[mine["generation"] == generation]
    at = modern.finding_epochs(mine, snapshots, group)
    return mine[[e is not None and e == generation for e in at]]


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
