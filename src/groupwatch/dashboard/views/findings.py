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


#: A finding detected more than this after its record's own time is on a replayed or
#: backfilled record (the live job finds within seconds of the record, docs/performance.md).
REPLAYED_AFTER = pd.Timedelta(hours=1)


def filtered_findings(
    findings: pd.DataFrame, filters: Filters, time: str = "event_time"
) -> pd.DataFrame:
    """The findings the filters select, newest first; the window by ``time`` (``event_time``,
    the record's; ``detected_at``, the job's)."""
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
    f = in_window(f, time, filters)
    return (
        f.assign(_r=f["severity"].map(rank))
        .sort_values(["event_time", "_r"], ascending=[False, True])
        .drop(columns="_r")
    )


#: The findings-over-time bar widths: the narrowest that keeps the chart to :data:`MAX_BARS`
#: bars, so that a bar is never too thin to see.
BAR_BUCKETS = tuple(pd.Timedelta(b) for b in ("5min", "15min", "1h", "6h", "1D", "7D"))
MAX_BARS = 100


def bar_bucket(times: pd.Series) -> pd.Timedelta:
    """The bar width for findings at ``times`` (:data:`BAR_BUCKETS`)."""
    span = times.max() - times.min() if len(times) else pd.Timedelta(0)
    return next((b for b in BAR_BUCKETS if span / b <= MAX_BARS), BAR_BUCKETS[-1])


def findings_over_time(findings: pd.DataFrame) -> tuple[pd.DataFrame, pd.Timedelta, int]:
    """Counts per time bucket (``bucket``, its start) and severity, by when the job detected
    them: a replay of records years old is found when it is read, and plotted by its records'
    own time it would stretch the axis over years and draw its bars a few pixels wide.  Also
    the bucket width (:func:`bar_bucket`) and how many of the findings are on replayed or
    backfilled records (:data:`REPLAYED_AFTER`)."""
    if findings.empty:
        return pd.DataFrame(columns=["bucket", "severity", "count"]), BAR_BUCKETS[0], 0
    detected = pd.to_datetime(findings["detected_at"], utc=True)
    step = bar_bucket(detected)
    b = findings.assign(bucket=detected.dt.floor(step))
    counts = b.groupby(["bucket", "severity"]).size().reset_index(name="count")
    event = findings["event_time"] if "event_time" in findings else detected
    replayed = int(((detected - event) > REPLAYED_AFTER).sum())
    return counts, step, replayed


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
