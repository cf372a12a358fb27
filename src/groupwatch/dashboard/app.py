"""The Dash app: the layout (navigation, filter bar, page), its callbacks and the page template
with its style sheet; four pages over the Delta tables, filters in the URL, refreshed on a timer.

Read-only by construction: no callback writes anything, and the tables are opened through
:class:`DeltaStore`, which reads.  Pages are plain functions of (tables, filters)
(:mod:`groupwatch.dashboard.pages`), so a URL an alert links to shows the same thing to everyone
who opens it.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from dash import Dash, Input, Output, State, dcc, html
from dash.development.base_component import Component
from dash.exceptions import PreventUpdate

from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard.filters import Filters, parse
from groupwatch.dashboard.pages import Pages
from groupwatch.delta.read import DeltaStore

log = logging.getLogger(__name__)

PAGES: dict[str, str] = {
    "/": "Fleet",
    "/group": "Group",
    "/partitions": "Partition history",
    "/health": "Data health",
}
CSS = """
body { font-family: system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { background: #1f2d3d; color: #fff; padding: 8px 16px; display: flex; gap: 18px;
         align-items: center; }
header a { color: #dfe6ee; text-decoration: none; } header a.active { color: #fff;
         font-weight: 600; border-bottom: 2px solid #fff; }
header .brand { font-weight: 700; margin-right: 12px; }
main { padding: 12px 16px; }
.filters { display: flex; gap: 10px; flex-wrap: wrap; align-items: end; padding: 8px 16px;
           background: #eef2f6; }
.filters label { font-size: 12px; display: flex; flex-direction: column; min-width: 140px; }
.filters input { padding: 5px; }
table.grid { border-collapse: collapse; font-size: 13px; margin: 6px 0 16px; background: #fff; }
table.grid th, table.grid td { border: 1px solid #d5dbe1; padding: 4px 8px; text-align: left;
           vertical-align: top; }
table.grid th { background: #f0f3f6; }
.badge { padding: 1px 8px; border-radius: 9px; color: #fff; font-size: 12px; }
.sev-critical { background: #c0392b; } .sev-error { background: #8e44ad; }
.sev-warning { background: #e67e22; } .sev-info { background: #2980b9; }
.sev-ok { background: #27ae60; } .sev-deleted { background: #7f8c8d; }
.kpis { display: flex; gap: 14px; } .kpi { background: #fff; border: 1px solid #d5dbe1;
        padding: 8px 14px; border-radius: 6px; } .kpi b { font-size: 22px; display: block; }
table.matrix td.cell { text-align: center; min-width: 70px; }
table.matrix td.assigned { background: #d4efdf; }
table.matrix td.claimed:not(.assigned) { background: #fdf2e9; }
table.matrix td.stale { outline: 2px dashed #e67e22; outline-offset: -3px; }
table.matrix tr.overlap td.cell.assigned { background: #f5b7b1; font-weight: 700; }
table.matrix tr.overlap th, table.matrix tr.overlap td.flags { color: #c0392b;
        font-weight: 700; }
table.matrix tr.unassigned th { color: #7f8c8d; font-style: italic; }
.legend span { margin-right: 14px; font-size: 12px; }
pre.evidence { margin: 0; font-size: 11px; white-space: pre-wrap; max-width: 520px; }
.note { color: #555; font-size: 13px; } .warn { color: #c0392b; }
table#share-partitions td.archived.alerting { background: #fdebd0; color: #a04000;
        font-weight: 700; }
.lag-share { font-size: 12px; color: #555; }
"""

INDEX = (
    """<!DOCTYPE html>
<html><head>{%metas%}<title>groupwatch</title>{%favicon%}{%css%}<style>"""
    + CSS
    + mw.CSS
    + """</style>
</head><body>{%app_entry%}<footer>{%config%}{%scripts%}{%renderer%}</footer></body></html>"""
)


def _warm(pages: Pages) -> None:
    took = pages.warm()
    log.info("dashboard: the fleet page's tables read and aggregates computed in %.1f s", took)


def create_app(
    store: DeltaStore,
    *,
    refresh_seconds: int = 10,
    metrics_url: str | None = None,
    warm: bool = False,
) -> Dash:
    """The dashboard over ``store``: pages re-rendered every ``refresh_seconds``; the data health
    page shows ``metrics_url`` (the job's Prometheus endpoint) when given; ``warm``: the fleet
    page prepared in a background thread right away (:meth:`Pages.warm`)."""
    pages = Pages(store, metrics_url)
    if warm:
        threading.Thread(target=_warm, args=(pages,), name="dashboard-warm", daemon=True).start()
    app = Dash(__name__, title="groupwatch", suppress_callback_exceptions=True, update_title="")
    app.index_string = INDEX
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Interval(id="tick", interval=max(1, refresh_seconds) * 1000),
            html.Header(id="nav"),
            html.Div(id="filters", className="filters"),
            html.Main(id="page"),
            # What the page on screen was rendered from: a refresh that finds the same
            # (URL, table versions, minute) sends nothing.
            dcc.Store(id="rendered"),
        ]
    )

    @app.callback(
        Output("nav", "children"),
        Output("filters", "children"),
        Input("url", "pathname"),
        Input("url", "search"),
    )
    def _chrome(path: str | None, search: str | None) -> tuple[list[Any], list[Component]]:
        path = path or "/"
        f = parse(search)
        nav: list[Any] = [html.Span("groupwatch", className="brand")]
        for href, name in PAGES.items():
            keep = f.query(generation=None) if href != "/partitions" else f.query()
            nav.append(dcc.Link(name, href=href + keep, className="active" if href == path else ""))
        nav.append(
            html.Span(
                f"refresh {refresh_seconds}s, read-only",
                style={"marginLeft": "auto", "fontSize": "12px"},
            )
        )
        return nav, pages.filter_bar(path, f)

    @app.callback(
        Output("page", "children"),
        Output("rendered", "data"),
        Input("url", "pathname"),
        Input("url", "search"),
        Input("tick", "n_intervals"),
        State("rendered", "data"),
    )
    def _page(
        path: str | None, search: str | None, _n: int | None, rendered: str | None
    ) -> tuple[list[Component], str]:
        # The minute is part of it: "last hour" and time windows move with the clock.
        key = repr((path, search, pages.versions(), int(time.time() // 60)))
        if key == rendered:
            raise PreventUpdate
        return pages.render(path or "/", parse(search)), key

    @app.callback(
        Output("url", "search"),
        Input("f-apply", "n_clicks"),
        State("f-group", "value"),
        State("f-name", "value"),
        State("f-type", "value"),
        State("f-health", "value"),
        State("f-lag", "value"),
        State("f-sort", "value"),
        State("f-topic", "value"),
        State("f-partition", "value"),
        State("f-generation", "value"),
        State("f-severity", "value"),
        State("f-since", "value"),
        prevent_initial_call=True,
    )
    def _apply(
        _clicks: int,
        group: str | None,
        name: str | None,
        gtype: str | None,
        health: str | None,
        lag: str | None,
        sort: str | None,
        topic: str | None,
        partition: Any,
        generation: Any,
        severity: str | None,
        since: str | None,
    ) -> str:
        # The filter bar is drawn anew with each URL, its button at no clicks: that is not an
        # Apply, and answering it would drop what the bar does not show (the page numbers).
        if not _clicks:
            raise PreventUpdate

        def as_int(v: Any) -> int | None:
            return int(v) if isinstance(v, int | float) else None

        return Filters(
            group=(group or "").strip() or None,
            name=(name or "").strip() or None,
            type=gtype or None,
            health=health or None,
            lag=lag or None,
            sort=None if sort in (None, "attention") else sort,
            topic=(topic or "").strip() or None,
            partition=as_int(partition),
            generation=as_int(generation),
            severity=severity or None,
            since=since or "all",
        ).query()

    return app
