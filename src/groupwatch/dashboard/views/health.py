"""The data health page: quarantined records, Great Expectations results, throughput and the
time from a record to its finding."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.dashboard.filters import Filters, in_window
from groupwatch.dashboard.views.findings import REPLAYED_AFTER, with_event_time
from groupwatch.delta.read import FileRead


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


#: What :func:`records_per_minute` reads of a ``group_snapshots`` file.
RECORD_TIMES = FileRead(columns=("source_timestamp",))


def records_per_minute(frame: pd.DataFrame) -> pd.DataFrame:
    """Group-metadata records per minute of event time (``minute``, ``records``), as a
    reduction: of ``group_snapshots`` rows, or of counts it returned before (summed), so that
    it is kept file by file (:class:`~groupwatch.dashboard.fold.Fold`)."""
    if "records" in frame:
        return frame.groupby("minute", as_index=False)["records"].sum()
    if frame.empty:
        return pd.DataFrame(
            {
                "minute": pd.Series(dtype="datetime64[ns, UTC]"),
                "records": pd.Series(dtype="int64"),
            }
        )
    minute = pd.to_datetime(frame["source_timestamp"], utc=True).dt.floor("1min")
    return minute.value_counts().rename_axis("minute").reset_index(name="records")


def first_read(created: pd.Timestamp | None, *times: pd.Series) -> pd.Timestamp | None:
    """The earliest time the tables show the job at work: ``group_snapshots``' creation
    (``created``) and the wall-clock columns it writes as it goes (``times``: when findings
    were detected, batches validated, records quarantined); ``None`` if none says."""
    known = [created] if created is not None else []
    known += [pd.to_datetime(t, utc=True).min() for t in times if len(t.dropna())]
    known = [k for k in known if not pd.isna(k)]
    return min(known) if known else None


def read_late(
    per_minute: pd.DataFrame, first: pd.Timestamp | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`records_per_minute`'s minutes split in those the job may have read as they came
    and those it cannot have: records more than :data:`REPLAYED_AFTER` older than the job's
    first work (:func:`first_read`) were read long after they were written (a replay, a
    backfill, a mirror of older records, the backlog of a first start).  Their minutes are
    their records' age, not the job's throughput, and drawn at them they stretch the chart
    over years; the tables do not say when they were read, so they are counted apart."""
    if first is None or per_minute.empty:
        return per_minute, per_minute.iloc[0:0]
    late = per_minute["minute"] < (first - REPLAYED_AFTER).floor("1min")
    return per_minute[~late], per_minute[late]


def late_words(late: pd.DataFrame) -> str:
    """What the chart says of the records :func:`read_late` counted apart ('' when none)."""
    if late.empty:
        return ""
    count = int(late["records"].sum())
    lo, hi = (t.strftime("%Y-%m-%d %H:%M") for t in (late["minute"].min(), late["minute"].max()))
    return (
        f"{count:,} group-metadata record(s) of {lo} to {hi} UTC were read long after they "
        "were written (a replay, a backfill, a mirror of older records or a first start's "
        "backlog): counted here, not drawn at their own time."
    )


def throughput(per_minute: pd.DataFrame, findings: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """Group-metadata records per minute (:func:`records_per_minute`; in a window, from the
    minute it starts in, that minute whole) and the finding latency in seconds, per minute
    up to a day's range, averaged over wider buckets beyond (:data:`BUCKETS`)."""
    start = filters.since_time()
    if start is not None and not per_minute.empty:
        per_minute = per_minute[per_minute["minute"] >= pd.Timestamp(start).floor("1min")]
    f = with_event_time(findings)
    f = in_window(f, "event_time", filters)
    times = [t for t in (per_minute["minute"], f["detected_at"]) if not t.empty]
    span = max(t.max() for t in times) - min(t.min() for t in times) if times else pd.Timedelta(0)
    # A month per minute is 43,200 points to draw: wider buckets keep a chart to about a day's
    # worth of points, each the records per minute averaged over it.
    step = next((b for b in BUCKETS if span / b <= MAX_POINTS), BUCKETS[-1])
    minutes = step / pd.Timedelta(minutes=1)
    bucket = per_minute["minute"].dt.floor(step)
    per_min = per_minute.groupby(bucket)["records"].sum().sort_index() / minutes
    lag = (f["detected_at"] - f["event_time"]).dt.total_seconds()
    # A finding on a record read long after it was written (a replay, a backfill, a mirror of
    # old records, a catch-up) measures the record's age, not the job: it is counted apart,
    # never plotted as the live latency.
    late = lag > REPLAYED_AFTER.total_seconds()
    at = f.assign(minute=f["detected_at"].dt.floor(step), lag=lag)
    lat = at[~late].groupby("minute")["lag"].max()
    replayed = at[late].groupby("minute").size()
    out = pd.DataFrame(
        {"records": per_min, "max_finding_latency_s": lat, "replayed_findings": replayed}
    )
    return out.rename_axis("minute").reset_index()


#: The throughput chart's bucket widths, the narrowest that keeps it to :data:`MAX_POINTS`.
BUCKETS = tuple(pd.Timedelta(b) for b in ("1min", "5min", "15min", "1h", "6h", "1D"))
MAX_POINTS = 1440
