"""Lag as the pages show it, from the lag tables (``partition_lag``, ``lag_history``): a group's
worst status and its lag in records and seconds for the fleet page, a group's partitions with
their owners, and its lag over time per topic.

Plain pandas, no Dash.  A deployment whose job predates lag has none of these tables: the
pages are given ``None`` then and say that lag is not yet known, never "0" or "ok".
"""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.frames import is_null
from groupwatch.detect.lag.model import WORST_FIRST as STATUS_ORDER

STATUS_RANK: dict[str, int] = {s: i for i, s in enumerate(STATUS_ORDER)}

#: The fleet page's lag columns (:func:`group_lag`).
GROUP_COLUMNS = ["lag_records", "lag_seconds", "lag_seconds_at_least", "lag_status"]
#: The group page's partition table.
PARTITION_COLUMNS = [
    "topic",
    "partition",
    "committed_offset",
    "end_offset",
    "lag_records",
    "lag_seconds",
    "lag_seconds_at_least",
    "status",
    "owner_member",
    "owner_client",
    "owner_host",
    "owner_generation",
    "commit_time",
    "observed_at",
]
_UNKNOWN_RANK = len(STATUS_ORDER)
#: The statuses that need someone to look (the fleet page counts the groups in them).
ALERTING = ("stopped", "stalled", "rewound", "lagging")


def status_ranks(statuses: pd.Series) -> pd.Series:
    """Each status's rank, worst (``stopped``) first; unknown and missing after ``idle``."""
    return statuses.map(STATUS_RANK).fillna(_UNKNOWN_RANK).astype("int64")


#: The ``partition_lag`` columns :func:`group_lag` reads (the fleet reads only these).
GROUP_LAG_INPUT = ("group", "lag_records", "lag_seconds", "lag_seconds_at_least", "status")


def group_lag(partition_lag: pd.DataFrame) -> pd.DataFrame:
    """Per group (the index): records behind summed over its partitions (null when no
    partition's end offset is known), the largest seconds behind (null when none is known;
    ``lag_seconds_at_least`` when that largest is a lower bound) and the worst status."""
    if partition_lag.empty:
        return pd.DataFrame(columns=GROUP_COLUMNS, index=pd.Index([], name="group"))
    p = partition_lag[list(GROUP_LAG_INPUT)]
    by = p.groupby("group", sort=False)
    out = pd.DataFrame(index=pd.Index(by.size().index, name="group"))
    out["lag_records"] = by["lag_records"].sum(min_count=1)
    # The row of each group's largest seconds (nulls last) says whether it is a lower bound.
    top = p.sort_values("lag_seconds", ascending=False, na_position="last", kind="stable")
    top = top.groupby("group", sort=False).head(1).set_index("group")
    out["lag_seconds"] = top["lag_seconds"].reindex(out.index)
    at_least = top["lag_seconds_at_least"].where(top["lag_seconds"].notna(), False)
    out["lag_seconds_at_least"] = at_least.reindex(out.index).fillna(False).astype(bool)
    worst = status_ranks(p["status"]).groupby(p["group"]).min()
    names = {i: s for i, s in enumerate(STATUS_ORDER)}
    out["lag_status"] = worst.reindex(out.index).map(names)
    return out[GROUP_COLUMNS]


def with_group_lag(fleet: pd.DataFrame, lag: pd.DataFrame | None) -> pd.DataFrame:
    """``fleet`` (a row per group) with :func:`group_lag`'s columns; all null when ``lag`` is
    ``None`` (no lag table) or the group has no committed offset in it."""
    out = fleet.copy()
    for col in GROUP_COLUMNS:
        if lag is None or lag.empty:
            out[col] = False if col == "lag_seconds_at_least" else None
        else:
            out[col] = out["group"].map(lag[col])
    for col in ("lag_records", "lag_seconds"):
        out[col] = out[col].astype("float64")
    out["lag_seconds_at_least"] = out["lag_seconds_at_least"].eq(True)
    return out


def partitions(rows: pd.DataFrame) -> pd.DataFrame:
    """A group's ``partition_lag`` rows, those needing attention first: worst status, then
    most seconds and records behind, then by topic and partition."""
    if rows.empty:
        return pd.DataFrame(columns=PARTITION_COLUMNS)
    r = rows.assign(_k=status_ranks(rows["status"]))
    r = r.sort_values(
        ["_k", "lag_seconds", "lag_records", "topic", "partition"],
        ascending=[True, False, False, True, True],
        na_position="last",
        kind="stable",
    )
    return r[PARTITION_COLUMNS].reset_index(drop=True)


def over_time(history: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """A group's ``lag_history`` rows in the filters' window (and topic), in time order."""
    h = in_window(history, "observed_at", filters)
    if filters.topic:
        h = h[h["topic"] == filters.topic]
    return h.sort_values(["topic", "observed_at"], kind="stable").reset_index(drop=True)


def duration(seconds: object, at_least: object = False) -> str:
    """Seconds as people read them (``6 min 12 s``), ``≥`` before a lower bound; blank when
    unknown."""
    if is_null(seconds):
        return ""
    s = max(0, int(float(seconds)))  # type: ignore[arg-type]
    if s < 60:
        text = f"{s} s"
    elif s < 3600:
        text = f"{s // 60} min {s % 60} s"
    elif s < 86400:
        text = f"{s // 3600} h {s % 3600 // 60} min"
    else:
        text = f"{s // 86400} d {s % 86400 // 3600} h"
    return ("≥ " if not is_null(at_least) and bool(at_least) else "") + text
