"""The fleet page (``/``): every group with its type, health, generation or group epoch and
findings, those needing attention first; findings over time by severity."""

from __future__ import annotations

from typing import Any

import plotly.express as px  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard import views
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.widgets import SEVERITY_COLOURS, badge, empty_fig, fmt
from groupwatch.deltaread import DeltaStore

#: Untyped alias: Dash accepts ``data-*`` attributes as keyword arguments; its stubs do not.
Tr: Any = html.Tr


def render(store: DeltaStore, f: Filters) -> list[Component]:
    """Every group, those needing attention first, with key figures and findings over time."""
    snaps, findings = store.read("group_snapshots"), store.read("findings")
    table = views.fleet(snaps, findings, store.read("member_assignments"), f)
    crit = int((table["health"] == "critical").sum())
    kpis = html.Div(
        [
            html.Div([html.B(str(len(table))), "groups"], className="kpi"),
            html.Div([html.B(str(crit)), "critical now"], className="kpi", id="kpi-critical"),
            html.Div(
                [html.B(str(int(table["open_findings"].sum()))), "open findings"],
                className="kpi",
            ),
        ],
        className="kpis",
    )
    rows = []
    for _, r in table.iterrows():
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
                ],
                **{"data-group": r["group"], "data-health": r["health"], "data-type": gtype},
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
    )
    over = views.findings_over_time(views.filtered_findings(findings, f))
    fig = (
        px.bar(
            over,
            x="bucket",
            y="count",
            color="severity",
            color_discrete_map=SEVERITY_COLOURS,
            title="Findings over time",
        )
        if not over.empty
        else empty_fig("Findings over time (none)")
    )
    fig.update_layout(height=280, margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return [
        html.H2("Fleet"),
        kpis,
        html.H3("Groups, those needing attention first"),
        html.Table(
            [
                html.Thead(head),
                html.Tbody(rows or [html.Tr(html.Td("no groups seen yet", colSpan=11))]),
            ],
            className="grid",
            id="fleet-table",
        ),
        dcc.Graph(figure=fig, id="findings-over-time"),
    ]
