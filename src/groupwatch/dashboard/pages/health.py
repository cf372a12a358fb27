"""The data health page (``/health``): quarantined records, the latest Great Expectations
results, group-metadata records per minute and finding latency, and the job's live metrics."""

from __future__ import annotations

import urllib.request

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import charts, views
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.views.health import RECORD_TIMES, first_read, late_words, read_late
from groupwatch.dashboard.widgets import badge, grid


def render(memo: Memo, f: Filters, metrics_url: str | None = None) -> list[Component]:
    """Quarantine, validation results, throughput and, with ``metrics_url``, the live metrics.
    The records per minute are kept file by file of ``group_snapshots`` (a month of history
    costs the files each batch adds)."""
    store = memo.store
    q = views.quarantine_counts(store.read("quarantine"), f)
    qfig = (
        charts.stacked_bars(
            q, "error_kind", "count", "stage", {}, "Quarantined records by error kind"
        )
        if not q.empty
        else charts.empty("Quarantined records", note="no record quarantined yet")
    )
    v = views.validation_summary(store.read("validation_results"), f)
    per_minute = memo.fold("health", "group_snapshots", views.records_per_minute, RECORD_TIMES)
    findings = store.read("findings")
    first = memo.get(
        "first-read",
        ("group_snapshots", "findings", "validation_results", "quarantine"),
        lambda: first_read(
            store.created("group_snapshots"),
            findings["detected_at"],
            store.read("validation_results")["validated_at"],
            store.read("quarantine")["quarantined_at"],
        ),
    )
    live, late = read_late(per_minute, first)
    tp = views.throughput(live, findings, f)
    tfig = (
        charts.lines(
            tp,
            "minute",
            ["records", "max_finding_latency_s", "replayed_findings"],
            "Group-metadata records per minute; live finding latency (s); findings on "
            "replayed or backfilled records (count, their age is not a latency)",
        )
        if not tp.empty
        else charts.empty(
            "Throughput and finding latency",
            note="no record read as it came yet" if not late.empty else "no record read yet",
        )
    )
    out: list[Component] = [
        html.H2("Data health"),
        dcc.Graph(figure=qfig, id="quarantine-chart"),
        grid(q, "quarantine-table"),
        html.H3("Great Expectations: latest result per expectation"),
        grid(
            v,
            "validation-table",
            {"success": lambda r: badge("ok" if r["success"] else "critical")},
        ),
        dcc.Graph(figure=tfig, id="throughput-chart"),
        *(
            [html.P(words, className="note", id="throughput-late")]
            if (words := late_words(late))
            else []
        ),
    ]
    if metrics_url:
        out += [html.H3("The job's live metrics"), live_metrics(metrics_url)]
    return out


def live_metrics(metrics_url: str) -> Component:
    """The ``groupwatch_*`` lines of the job's Prometheus endpoint, as a table."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=2) as resp:  # noqa: S310
            text = resp.read(1_000_000).decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        return html.P(f"metrics endpoint unreachable: {exc}", className="warn")
    rows = [
        line.rsplit(" ", 1)
        for line in text.splitlines()
        if line.startswith("groupwatch_") and " " in line
    ]
    frame = pd.DataFrame(rows, columns=["metric", "value"])
    return grid(frame, "live-metrics")
