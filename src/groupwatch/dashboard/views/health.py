"""The data health page: quarantined records, Great Expectations results, throughput and the
time from a record to its finding."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.views.findings import with_event_time


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
