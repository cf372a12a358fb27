"""The group page's lag section: each partition's lag with its owner, worst first, a page at a
time, and the group's lag over time per topic (``lag_history``).

A deployment whose job predates lag has no ``partition_lag`` table: the section says lag is not
yet known rather than showing an empty table that reads as "no lag".
"""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import charts
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.frames import is_null
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.views import lag
from groupwatch.dashboard.widgets import fmt, lag_badge, page_bounds, pager

Tr: Any = html.Tr
Td: Any = html.Td
#: Partitions per page of the lag table.
LAG_ROWS = 100
_HEAD = (
    "partition",
    "committed",
    "end",
    "lag (records)",
    "lag (time)",
    "status",
    "owner member",
    "client",
    "host",
    "generation / epoch",
    "last commit (UTC)",
    "end observed (UTC)",
)


def _int(value: Any) -> str:
    return "" if is_null(value) else f"{int(value):,}"


def partition_table(frame: pd.DataFrame) -> Component:
    """:func:`lag.partitions`' rows as a table, one row per partition (``data-*``: topic,
    partition, status, records and seconds behind, owner)."""
    rows = []
    for r in frame.to_dict("records"):
        sec = r["lag_seconds"]
        rows.append(
            Tr(
                [
                    html.Th(f"{r['topic']}-{int(r['partition'])}"),
                    Td(_int(r["committed_offset"]), className="committed"),
                    Td(_int(r["end_offset"]), className="end"),
                    Td(_int(r["lag_records"]), className="lag-records"),
                    Td(lag.duration(sec, r["lag_seconds_at_least"]), className="lag-seconds"),
                    Td(lag_badge(str(r["status"])) if not is_null(r["status"]) else ""),
                    Td(fmt(r["owner_member"]), className="owner-member"),
                    Td(fmt(r["owner_client"]), className="owner-client"),
                    Td(fmt(r["owner_host"]), className="owner-host"),
                    Td(_int(r["owner_generation"]), className="owner-generation"),
                    Td(fmt(r["commit_time"])),
                    Td(fmt(r["observed_at"])),
                ],
                **{
                    "data-topic": str(r["topic"]),
                    "data-partition": str(int(r["partition"])),
                    "data-status": "" if is_null(r["status"]) else str(r["status"]),
                    "data-lag-records": ""
                    if is_null(r["lag_records"])
                    else str(int(r["lag_records"])),
                    "data-lag-seconds": "" if is_null(sec) else f"{float(sec):.3f}",
                    "data-owner": "" if is_null(r["owner_member"]) else str(r["owner_member"]),
                },
            )
        )
    if not rows:
        rows = [html.Tr(html.Td("no committed offsets seen for this group", colSpan=len(_HEAD)))]
    return html.Table(
        [html.Thead(html.Tr([html.Th(c) for c in _HEAD])), html.Tbody(rows)],
        className="grid",
        id="lag-partitions",
    )


def section(memo: Memo, group: str, f: Filters) -> list[Component]:
    """The group's lag: a heading, its partitions (those needing attention first) and its lag
    over time per topic; or why it is not known."""
    head: list[Component] = [html.H3("Lag per partition, those needing attention first")]
    if memo.store.version("partition_lag") is None:
        return [
            *head,
            html.P(
                "Lag not yet known: the job has not written the partition_lag table (a job "
                "from before lag, or its first poll of the brokers is still to come).",
                className="note",
                id="lag-unknown",
            ),
        ]
    ordered = memo.get(
        "lag-partitions",
        ("partition_lag",),
        lambda: lag.partitions(memo.rows("partition_lag", group)),
        group,
    )
    first, stop, at, pages = page_bounds(len(ordered), f.lpage, LAG_ROWS)
    out: list[Component] = [
        *head,
        pager(
            lambda n: f.href(
                "group", group=group, generation=f.generation, page=f.page, mpage=f.mpage, lpage=n
            ),
            len(ordered),
            at,
            pages,
            first,
            stop,
            "partitions",
            "lag-pager",
        ),  # fmt: skip
        # The table's components are most of the section's cost (100 rows of cells): kept
        # per version of partition_lag, like the rows they show.
        memo.get(
            "lag-table",
            ("partition_lag",),
            lambda: partition_table(ordered.iloc[first:stop]),
            group,
            at,
        ),
    ]
    if memo.store.version("lag_history") is None:
        return out
    history = lag.over_time(memo.rows("lag_history", group), f)
    if history.empty:
        note = html.P("No lag history in the window.", className="note", id="lag-no-history")
        return [*out, note]
    return [
        *out,
        dcc.Graph(
            figure=charts.by_series(
                history, "observed_at", "lag_records", "topic", "Lag over time (records)"
            ),
            id="lag-records-over-time",
        ),
        dcc.Graph(
            figure=charts.by_series(
                history, "observed_at", "lag_seconds", "topic", "Lag over time (seconds)"
            ),
            id="lag-seconds-over-time",
        ),
    ]
