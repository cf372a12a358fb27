"""The fleet page (``/``): every group with its type, health, generation or group epoch and
findings, those needing attention first, a page at a time; findings over time by severity.

It costs what it shows: the row per group is computed once per table version (:class:`Memo`),
a request filters and orders it (whole-column operations) and builds the rows of one page.
"""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import charts, modern, views
from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.frames import is_null
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.views import fleet_table, lag
from groupwatch.dashboard.widgets import (
    SEVERITY_COLOURS,
    badge,
    fmt,
    lag_badge,
    page_bounds,
    pager,
)

#: Untyped aliases: Dash accepts ``data-*`` attributes as keyword arguments; its stubs do not.
Tr: Any = html.Tr
Td: Any = html.Td
#: Groups per page.
PAGE_SIZE = 50
_FLEET_TABLES = ("group_snapshots", "findings", "member_assignments")


def snapshots(memo: Memo) -> Any:
    """The rows of ``group_snapshots`` the fleet reads (:func:`views.fleet_snapshots`), kept
    file by file: a month of history costs the files each batch adds."""
    return memo.fold("fleet", "group_snapshots", views.fleet_snapshots)


def known(memo: Memo) -> Any:
    """The row per group with snapshots (:func:`views.fleet_base`), once per version of its
    tables."""
    return memo.get(
        "fleet-base",
        _FLEET_TABLES,
        lambda: views.fleet_base(
            snapshots(memo),
            memo.read("findings"),
            memo.fold("fleet", "member_assignments", views.fleet_members, fleet_table.MODERN_ROWS),
        ),
    )


def topics(memo: Memo) -> Any:
    """Every (group, topic) pair, kept file by file of ``member_assignments``."""
    return memo.fold("topics", "member_assignments", views.topic_pairs, fleet_table.TOPIC_PAIRS)


def group_lag(memo: Memo) -> Any:
    """Each group's lag (:func:`lag.group_lag`), once per version of ``partition_lag``;
    ``None`` while the table does not exist (a job that predates lag): not known."""
    if memo.store.version("partition_lag") is None:
        return None
    return memo.get(
        "group-lag",
        ("partition_lag",),
        lambda: lag.group_lag(memo.read("partition_lag")),
    )


def named(memo: Memo) -> Any:
    """Every group named in the tables the fleet reads nothing else of
    (:data:`fleet_table.NAMED_ONLY`: ownership intervals, the job's group state, the offsets
    tables), their group column alone kept file by file: a group with rows only there is listed
    too, at the cost of one column of the files each batch adds."""
    return memo.get(
        "fleet-named",
        fleet_table.NAMED_ONLY,
        lambda: pd.concat(
            [
                memo.fold("names", t, fleet_table.group_names, fleet_table.GROUP_NAMES)["group"]
                for t in fleet_table.NAMED_ONLY
            ],
            ignore_index=True,
        ).drop_duplicates(),
    )


def base(memo: Memo) -> Any:
    """The row per group, every group a table names among them
    (:func:`fleet_table.with_every_group`: those with findings, members, lag or the names of
    :func:`named` but no snapshot left), once per version of the tables: not per request."""
    lagging = group_lag(memo)
    return memo.get(
        "fleet-every",
        (*_FLEET_TABLES, "partition_lag", *fleet_table.NAMED_ONLY),
        lambda: fleet_table.with_every_group(
            known(memo),
            memo.read("findings"),
            pd.concat(
                [
                    topics(memo)["group"],
                    named(memo),
                    *([] if lagging is None else [lagging.index.to_series()]),
                ],
                ignore_index=True,
            ),
        ),
    )


def table(memo: Memo, f: Filters) -> Any:
    """Every group matching ``f`` in the page's order (default: needing attention first)."""
    return views.fleet_rows(
        base(memo),
        snapshots(memo),
        memo.read("findings"),
        topics(memo),
        f,
        group_lag=group_lag(memo),
        complete=True,
    )


def share_lag(memo: Memo) -> dict[str, int | None]:
    """Each share group's share lag (summed over its share partitions whose lag is known; None
    while none is), once per version of ``share_partition_state`` (none without the table)."""
    if memo.store.version("share_partition_state") is None:
        return {}

    def compute() -> dict[str, int | None]:
        rows = memo.read("share_partition_state")
        if rows.empty:
            return {}
        sums = rows.groupby("group", sort=False)["lag_records"].sum(min_count=1)
        return {str(g): None if is_null(v) else int(v) for g, v in sums.items()}

    return memo.get("share-lag", ("share_partition_state",), compute)


def share_lag_cells(records: int | None) -> list[Component]:
    """A share group's lag cells: its share lag in records (KIP-1226); no seconds and no
    committed-offset status apply."""
    return [
        Td(
            "" if records is None else f"{records:,}",
            className="lag-records",
            **{"data-lag-records": "" if records is None else str(records)},
        ),
        Td("", className="lag-seconds", **{"data-lag-seconds": ""}),
        Td(
            html.Span(
                "share lag",
                className="lag lag-share",
                title="end - start offset - delivery-complete count, from __share_group_state",
            ),
            className="lag",
        ),
    ]


def lag_cells(r: dict[str, Any], known: bool) -> list[Component]:
    """A fleet row's lag cells: records, seconds (``≥`` for a lower bound), status; blank
    with a note when the group has no committed offset in ``partition_lag``."""
    status = r["lag_status"]
    if is_null(status):
        why = "no lag table yet" if not known else "no committed offset seen"
        return [
            Td("", className="lag-records", **{"data-lag-records": ""}),
            Td("", className="lag-seconds", **{"data-lag-seconds": ""}),
            Td(html.Span("unknown", className="lag lag-unknown", title=why), className="lag"),
        ]
    rec, sec = r["lag_records"], r["lag_seconds"]
    return [
        Td(
            "" if is_null(rec) else f"{int(rec):,}",
            className="lag-records",
            **{"data-lag-records": "" if is_null(rec) else str(int(rec))},
        ),
        Td(
            lag.duration(sec, r["lag_seconds_at_least"]),
            className="lag-seconds",
            **{"data-lag-seconds": "" if is_null(sec) else f"{float(sec):.3f}"},
        ),
        Td(lag_badge(str(status)), className="lag"),
    ]


def render(memo: Memo, f: Filters) -> list[Component]:
    """The groups matching the filters, those needing attention first, a page at a time,
    with key figures and findings over time."""
    findings = memo.read("findings")
    everything = table(memo, f)
    first, stop, at, pages = page_bounds(len(everything), f.page, PAGE_SIZE)
    shown = everything.iloc[first:stop]
    crit = int((everything["health"] == "critical").sum())
    known = memo.store.version("partition_lag") is not None
    behind = int(everything["lag_status"].isin(lag.ALERTING).sum())
    kpis = html.Div(
        [
            html.Div([html.B(f"{len(everything):,}"), "groups"], className="kpi", id="kpi-groups"),
            html.Div([html.B(str(crit)), "critical now"], className="kpi", id="kpi-critical"),
            html.Div(
                [html.B(f"{int(everything['open_findings'].sum()):,}"), "open findings"],
                className="kpi",
            ),
            html.Div(
                [html.B(f"{behind:,}" if known else "?"), "lagging, stalled or stopped"],
                className="kpi",
                id="kpi-lag",
            ),
        ],
        className="kpis",
    )
    shares = share_lag(memo)
    rows = []
    for r in shown.to_dict("records"):
        link = f.href("group", group=r["group"], generation=None, partition=None)
        gtype = str(r["group_type"])
        rows.append(
            Tr(
                [
                    html.Td(dcc.Link(r["group"], href=link)),
                    html.Td(mw.type_badge(gtype), className="group-type"),
                    html.Td(badge(r["health"])),
                    html.Td(
                        mw.generation_text(gtype, r["last_generation"], r["assignment_epoch"]),
                        className="generation",
                    ),
                    *[
                        html.Td(fmt(r[c]))
                        for c in (
                            "member_count",
                            "protocol",
                            "last_seen",
                            "rebalances_last_hour",
                            "open_findings",
                            "critical",
                            "warning",
                        )
                    ],
                    *(
                        share_lag_cells(shares[str(r["group"])])
                        if gtype == modern.SHARE and str(r["group"]) in shares
                        else lag_cells(r, known)
                    ),
                ],
                **{
                    "data-group": r["group"],
                    "data-health": r["health"],
                    "data-type": gtype,
                    "data-lag-status": "" if is_null(r["lag_status"]) else str(r["lag_status"]),
                },
            )
        )
    head = html.Tr(
        [
            html.Th(c)
            for c in (
                "group",
                "type",
                "health",
                "last gen. / epoch",
                "members",
                "protocol",
                "last seen (UTC)",
                "rebalances 1h",
                "open findings",
                "critical (window)",
                "warning (window)",
            )
        ]
        + [
            # Lag headers order the table by themselves (the order control does the same).
            html.Th(
                dcc.Link(name, href=f.href("", sort=order, page=None), id=f"sort-{order}"),
                className="sortable" + (" sorted" if f.sort == order else ""),
            )
            for name, order in (
                ("lag (records)", "lag_records"),
                ("lag (time)", "lag"),
                ("lag status", "lag_status"),
            )
        ]
    )

    def over_time() -> Any:
        # By when the job detected them, the window too: the findings of a replay are those
        # of the time it was read, not of its records' years.
        return views.findings_over_time(views.filtered_findings(findings, f, "detected_at"))

    # A time window moves with the clock: only the whole history is kept per version.
    over, step, replayed = (
        memo.get("findings-over-time", ("findings",), over_time, f.group, f.topic, f.severity)
        if f.since == "all"
        else over_time()
    )
    title = "Findings over time, by when they were detected" + (
        f" ({replayed:,} on replayed or backfilled records)" if replayed else ""
    )
    fig = (
        charts.stacked_bars(
            over, "bucket", "count", "severity", SEVERITY_COLOURS, title, bucket=step
        )
        if not over.empty
        else charts.empty("Findings over time", 280, note="no findings yet")
    )
    return [
        html.H2("Fleet"),
        kpis,
        html.H3("Groups, those needing attention first"),
        *(
            []
            if known
            else [
                html.P(
                    "Lag not yet known: the job has not written the partition_lag table "
                    "(a job from before lag, or its first poll of the brokers is still to come).",
                    className="note",
                    id="lag-unknown",
                )
            ]
        ),
        pager(
            lambda n: f.href("", page=n),
            len(everything),
            at,
            pages,
            first,
            stop,
            "groups",
            "fleet-pager",
        ),
        html.Table(
            [
                html.Thead(head),
                html.Tbody(rows or [html.Tr(html.Td("no groups seen yet", colSpan=14))]),
            ],
            className="grid",
            id="fleet-table",
        ),
        dcc.Graph(figure=fig, id="findings-over-time"),
    ]
