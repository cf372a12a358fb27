"""The Dash app: four pages over the Delta tables, filters in the URL, refreshed on a timer.

Read-only by construction: no callback writes anything, and the tables are opened through
:class:`DeltaStore`, which reads.  Pages are plain functions of (tables, filters), so a URL an
alert links to shows the same thing to everyone who opens it.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from datetime import UTC, datetime
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import plotly.express as px  # type: ignore[import-untyped]
from dash import Dash, Input, Output, State, dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import modern, views
from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard.filters import WINDOWS, Filters, parse
from groupwatch.dashboard.frames import evidence
from groupwatch.deltaread import DeltaStore
from groupwatch.notify.kinds import SEVERITIES, explanation_of

log = logging.getLogger(__name__)
#: Untyped aliases: Dash accepts ``data-*`` attributes as keyword arguments; its stubs do not.
Tr: Any = html.Tr
Td: Any = html.Td

PAGES: dict[str, str] = {
    "/": "Fleet",
    "/group": "Group",
    "/partitions": "Partition history",
    "/health": "Data health",
}
SEVERITY_COLOURS = {
    "critical": "#c0392b",
    "error": "#8e44ad",
    "warning": "#e67e22",
    "info": "#2980b9",
    "ok": "#27ae60",
    "deleted": "#7f8c8d",
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
"""

INDEX = (
    """<!DOCTYPE html>
<html><head>{%metas%}<title>groupwatch</title>{%favicon%}{%css%}<style>"""
    + CSS
    + mw.CSS
    + """</style>
</head><body>{%app_entry%}<footer>{%config%}{%scripts%}{%renderer%}</footer></body></html>"""
)


def badge(severity: str) -> html.Span:
    return html.Span(severity, className=f"badge sev-{severity}")


def _fmt(value: Any) -> str:
    if value is None or (not isinstance(value, list | dict) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return str(value.strftime("%Y-%m-%d %H:%M:%S"))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def grid(frame: pd.DataFrame, table_id: str, cells: dict[str, Any] | None = None) -> html.Table:
    """A DataFrame as an HTML table; ``cells[col](row)`` renders a column specially."""
    cells = cells or {}
    head = html.Thead(html.Tr([html.Th(c) for c in frame.columns]))
    body = [
        html.Tr([html.Td(cells[c](row) if c in cells else _fmt(row[c])) for c in frame.columns])
        for _, row in frame.iterrows()
    ]
    if not body:
        body = [html.Tr(html.Td("nothing here (yet)", colSpan=max(1, len(frame.columns))))]
    return html.Table([head, html.Tbody(body)], className="grid", id=table_id)


def _empty_fig(title: str) -> Any:
    fig = px.scatter(title=title)
    fig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return fig


class Pages:
    """Renders each page from the tables; one instance per app."""

    def __init__(self, store: DeltaStore, metrics_url: str | None = None) -> None:
        self.store = store
        self.metrics_url = metrics_url

    def read(self, table: str) -> pd.DataFrame:
        return self.store.read(table)

    # -- filter bar ------------------------------------------------------------------------
    def filter_bar(self, path: str, f: Filters) -> list[Component]:
        groups = sorted(set(self.read("group_snapshots")["group"].dropna()))

        def opts(values: list[str]) -> list[dict[str, str]]:
            return [{"label": v, "value": v} for v in values]

        def field(label: str, control: Component, visible: bool = True) -> html.Label:
            return html.Label([label, control], style={} if visible else {"display": "none"})

        bar: list[Component] = [
            field("group", dcc.Dropdown(opts(groups), f.group, id="f-group", clearable=True)),
            field(
                "topic", dcc.Input(id="f-topic", value=f.topic or "", type="text", debounce=True)
            ),
            field(
                "partition",
                dcc.Input(id="f-partition", type="number", value=f.partition),
                path == "/partitions",
            ),
            field(
                "generation / epoch",
                dcc.Input(id="f-generation", type="number", value=f.generation),
                path == "/group",
            ),
            field(
                "severity (at least)",
                dcc.Dropdown(opts(list(SEVERITIES)), f.severity, id="f-severity"),
            ),
            field(
                "time window",
                dcc.Dropdown(opts(list(WINDOWS)), f.since, id="f-since", clearable=False),
            ),
            html.Button("Apply", id="f-apply", n_clicks=0),
        ]
        if f.rejected:
            bar.append(
                html.Span(
                    f"ignored invalid parameter(s): {', '.join(f.rejected)}", className="warn"
                )
            )
        return bar

    # -- pages -----------------------------------------------------------------------------
    def render(self, path: str, f: Filters) -> list[Component]:
        try:
            if path == "/group":
                return self.group(f)
            if path == "/partitions":
                return self.partitions(f)
            if path == "/health":
                return self.health(f)
            if path == "/":
                return self.fleet(f)
        except Exception as exc:  # noqa: BLE001 - a broken page says why; the app keeps serving
            log.exception("page %s failed", path)
            return [html.P(f"This page failed to render: {exc}", className="warn")]
        return [html.H2("Not found"), dcc.Link("Fleet", href="/")]

    def fleet(self, f: Filters) -> list[Component]:
        snaps, findings = self.read("group_snapshots"), self.read("findings")
        table = views.fleet(snaps, findings, self.read("member_assignments"), f)
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
                            html.Td(_fmt(r[c]))
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
            else _empty_fig("Findings over time (none)")
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

    def group(self, f: Filters) -> list[Component]:
        snaps, members = self.read("group_snapshots"), self.read("member_assignments")
        findings = self.read("findings")
        group = f.group
        if group is None:
            table = views.fleet(snaps, findings, members, Filters())
            if table.empty:
                return [html.H2("Group"), html.P("No groups seen yet.")]
            group = str(table.iloc[0]["group"])
        tl = views.timeline(snaps, members, group)
        matrix = views.ownership_matrix(
            members, findings, self.read("group_offsets"), group, f.generation, snaps
        )
        gf = views.filtered_findings(
            findings, Filters(group=group, severity=f.severity, since=f.since)
        )
        if modern.is_modern(matrix.group_type):
            return self.modern_group(group, f, tl, matrix, members, snaps, gf)
        gen_links = [
            dcc.Link(
                f"gen {g}",
                href=f.href("group", group=group, generation=g),
                style={"marginRight": "8px", "fontWeight": 700 if g == matrix.generation else 400},
            )
            for g in matrix.generations
        ]
        if tl.empty:
            fig = _empty_fig("Generations")
        else:
            fig = px.scatter(
                tl,
                x="time",
                y="generation",
                size="member_count",
                color="event",
                hover_data=["leader", "joined", "left", "protocol"],
                title="Generation timeline (size = members)",
            )
            fig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
        gf_gen = views.findings_at(gf, snaps, group, matrix.generation)
        return [
            html.H2(["Group ", html.Code(group), " ", mw.type_badge(matrix.group_type)]),
            dcc.Graph(figure=fig, id="timeline"),
            html.Details([html.Summary("Generation table"), grid(tl, "timeline-table")]),
            html.H3(f"Partition ownership, generation {matrix.generation}"),
            html.Div(["generations: ", *gen_links]),
            self.matrix(matrix),
            html.H3(f"Findings of generation {matrix.generation}"),
            self.findings_table(gf_gen, "group-findings"),
            html.H3("Difference to the expected (re-run) assignment"),
            grid(views.expected_diff(findings, group, matrix.generation), "expected-diff"),
            html.H3("All findings of the group in the window"),
            self.findings_table(gf, "group-findings-all"),
        ]

    def modern_group(
        self,
        group: str,
        f: Filters,
        tl: pd.DataFrame,
        matrix: views.Matrix,
        members: pd.DataFrame,
        snaps: pd.DataFrame,
        gf: pd.DataFrame,
    ) -> list[Component]:
        """A KIP-848 consumer, streams or share group: group epochs where a classic group has
        generations, and its members with their epochs, states, targets and pending
        revocations."""
        epoch = matrix.generation
        links = [
            dcc.Link(
                f"epoch {g}",
                href=f.href("group", group=group, generation=g),
                style={"marginRight": "8px", "fontWeight": 700 if g == epoch else 400},
            )
            for g in matrix.generations
        ]
        if tl.empty:
            fig = _empty_fig("Group epochs")
        else:
            fig = px.scatter(
                tl,
                x="time",
                y="generation",
                size=tl["member_count"].clip(lower=1),
                color="event",
                hover_data=["assignment_epoch", "member_count", "joined", "left"],
                labels={"generation": "group epoch"},
                title="Group epoch timeline (size = members)",
            )
            fig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
        at = modern.epochs(snaps, group, epoch)
        out: list[Component] = [
            html.H2(["Group ", html.Code(group), " ", mw.type_badge(matrix.group_type)]),
            mw.epochs_line(matrix),
        ]
        if matrix.group_type == modern.SHARE:
            out.append(html.P(mw.SHARE_NOTE, className="note", id="share-note"))
        return [
            *out,
            dcc.Graph(figure=fig, id="timeline"),
            html.Details([html.Summary("Group epoch table"), grid(tl, "timeline-table")]),
            html.H3(f"Members at group epoch {epoch}"),
            html.Div(["group epochs: ", *links]),
            mw.members_table(modern.members_at(members, group, at), matrix.group_type),
            html.H3(f"Partition ownership, group epoch {epoch}"),
            self.matrix(matrix),
            html.H3(f"Findings at group epoch {epoch}"),
            self.findings_table(
                views.findings_at(gf, snaps, group, epoch), "group-findings", "epoch"
            ),
            html.H3("All findings of the group in the window"),
            self.findings_table(gf, "group-findings-all", "epoch"),
        ]

    def matrix(self, m: views.Matrix) -> Component:
        if not m.members:
            return html.P("No members recorded for this generation.")
        modern_group = modern.is_modern(m.group_type)
        head = html.Tr(
            [
                html.Th("task" if m.group_type == "streams" else "partition"),
                *[
                    html.Th(mw.matrix_member_label(m_))
                    if modern_group
                    else html.Th(
                        [
                            m_.member_id,
                            html.Br(),
                            html.Small(
                                f"claim gen {m_.claim_generation}"
                                + (" (stale)" if m_.stale else ""),
                                className="warn" if m_.stale else "",
                            ),
                        ]
                    )
                    for m_ in m.members
                ],
                html.Th("marks"),
            ]
        )
        rows = []
        for r in m.rows:
            tds = []
            for m_ in m.members:
                c = r.cells.get(m_.member_id, views.Cell())
                classes = ["cell"] + [
                    n
                    for n, on in (
                        ("assigned", c.assigned),
                        ("claimed", c.claimed),
                        ("stale", c.stale_claim),
                        ("pending", c.pending),
                        ("target", c.target),
                    )
                    if on
                ]
                text = " + ".join(
                    x
                    for x, on in (
                        ("assigned", c.assigned),
                        ("claimed" + (" (stale)" if c.stale_claim else ""), c.claimed),
                        ("pending revocation", c.pending),
                        ("target", c.target),
                    )
                    if on
                )
                tds.append(Td(text, className=" ".join(classes), **{"data-member": m_.member_id}))
            marks = [
                x
                for x, on in (
                    ("OVERLAP", r.overlap),
                    ("withheld", r.withheld),
                    ("unassigned", r.unassigned and not r.withheld),
                    ("contested", r.contested),
                )
                if on
            ]
            marks += sorted(r.kinds)
            row_classes = [
                n
                for n, on in (
                    ("overlap", r.overlap),
                    ("withheld", r.withheld),
                    ("unassigned", r.unassigned),
                    ("contested", r.contested),
                )
                if on
            ]
            rows.append(
                Tr(
                    [
                        html.Th(f"{r.topic}-{r.partition}"),
                        *tds,
                        html.Td(", ".join(marks), className="flags"),
                    ],
                    className=" ".join(row_classes),
                    **{"data-topic": r.topic, "data-partition": str(r.partition)},
                )
            )
        legend = (
            mw.matrix_legend(m.group_type)
            if modern_group
            else html.Div(
                [
                    html.Span("green: assigned"),
                    html.Span("beige: claimed only"),
                    html.Span("dashed: stale claim"),
                    html.Span("red row: assigned to two or more members (overlap)"),
                ],
                className="legend",
            )
        )
        return html.Div(
            [
                legend,
                html.Table(
                    [html.Thead(head), html.Tbody(rows)],
                    className="grid matrix",
                    id="ownership-matrix",
                ),
            ]
        )

    def findings_table(
        self, frame: pd.DataFrame, table_id: str, generation: str = "generation"
    ) -> Component:
        """Findings with their evidence; ``generation`` heads that column (a modern group's
        findings carry a member or group epoch there)."""
        head = html.Tr(
            [
                html.Th(c)
                for c in ("severity", "kind", generation, "where", "what happened", "evidence")
            ]
        )
        rows = []
        for _, r in frame.iterrows():
            where = ", ".join(
                x
                for x in (
                    f"{r['topic']}-{int(r['partition'])}"
                    if pd.notna(r["topic"]) and pd.notna(r["partition"])
                    else "",
                    f"member {r['member']}" if pd.notna(r["member"]) else "",
                )
                if x
            )
            ev = json.dumps(evidence(r["evidence"]), indent=1, sort_keys=True)
            rows.append(
                Tr(
                    [
                        html.Td(badge(str(r["severity"]))),
                        html.Td(html.Abbr(r["kind"], title=explanation_of(str(r["kind"])))),
                        html.Td(_fmt(r["generation"])),
                        html.Td(where),
                        html.Td(_fmt(r["detail"])),
                        html.Td(
                            html.Details(
                                [html.Summary("evidence"), html.Pre(ev, className="evidence")]
                            )
                        ),
                    ],
                    **{"data-kind": str(r["kind"]), "data-finding": str(r["finding_id"])},
                )
            )
        if not rows:
            rows = [html.Tr(html.Td("no findings", colSpan=6))]
        return html.Table([html.Thead(head), html.Tbody(rows)], className="grid", id=table_id)

    def partitions(self, f: Filters) -> list[Component]:
        hist = views.partition_history(self.read("partition_ownership"), f)
        now = pd.Timestamp(datetime.now(UTC))
        hist = hist.assign(type=modern.types(hist).map(modern.label))
        if hist.empty:
            fig = _empty_fig("Ownership over time (nothing matches)")
        else:
            plot = hist.assign(
                # one row per (partition, member): two owners at once show as parallel bars
                tp=hist["group"]
                + " "
                + hist["topic"]
                + "-"
                + hist["partition"].astype(str)
                + " · "
                + hist["member_id"],
                until=hist["to_time"].fillna(now),
            )
            fig = px.timeline(
                plot,
                x_start="from_time",
                x_end="until",
                y="tp",
                color="member_id",
                hover_data=["type", "from_generation", "to_generation", "client_id"],
                title="Who owned each partition, over time",
            )
            fig.update_layout(
                height=max(260, 40 * plot["tp"].nunique() + 120),
                margin={"l": 40, "r": 10, "t": 40, "b": 30},
            )
        # A modern group's intervals run from one member epoch to another, a classic group's
        # from one generation to another: the column says which.
        table = hist.assign(
            counted_in=modern.types(hist).map(
                lambda t: "member epochs" if modern.is_modern(t) else "generations"
            )
        )
        cols = {
            "group": "group",
            "type": "type",
            "topic": "topic",
            "partition": "partition",
            "member_id": "member_id",
            "client_id": "client_id",
            "counted_in": "counted in",
            "from_generation": "from gen. / epoch",
            "from_time": "from_time",
            "to_generation": "to gen. / epoch",
            "to_time": "to_time",
        }
        return [
            html.H2("Partition history"),
            html.P(
                "Pick a group, a topic and a partition in the filters; open intervals "
                "(still owned) extend to now. A KIP-848 or streams group's intervals run "
                "from member epoch to member epoch, and a partition pending revocation still "
                "counts as owned.",
                className="note",
            ),
            dcc.Graph(figure=fig, id="ownership-gantt"),
            grid(table[list(cols)].head(2000).rename(columns=cols), "ownership-table"),
        ]

    def health(self, f: Filters) -> list[Component]:
        q = views.quarantine_counts(self.read("quarantine"), f)
        qfig = (
            px.bar(
                q,
                x="error_kind",
                y="count",
                color="stage",
                title="Quarantined records by error kind",
            )
            if not q.empty
            else _empty_fig("Quarantine (empty)")
        )
        qfig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
        v = views.validation_summary(self.read("validation_results"), f)
        tp = views.throughput(self.read("group_snapshots"), self.read("findings"), f)
        tfig = (
            px.line(
                tp,
                x="minute",
                y=["records", "max_finding_latency_s"],
                markers=True,
                title="Group-metadata records per minute; finding latency (s)",
            )
            if not tp.empty
            else _empty_fig("Throughput (no data)")
        )
        tfig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
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
        ]
        if self.metrics_url:
            out += [html.H3("The job's live metrics"), self.live_metrics()]
        return out

    def live_metrics(self) -> Component:
        assert self.metrics_url is not None
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=2) as resp:  # noqa: S310
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


def create_app(
    store: DeltaStore, *, refresh_seconds: int = 10, metrics_url: str | None = None
) -> Dash:
    pages = Pages(store, metrics_url)
    app = Dash(__name__, title="groupwatch", suppress_callback_exceptions=True, update_title="")
    app.index_string = INDEX
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh=False),
            dcc.Interval(id="tick", interval=max(1, refresh_seconds) * 1000),
            html.Header(id="nav"),
            html.Div(id="filters", className="filters"),
            html.Main(id="page"),
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
        Input("url", "pathname"),
        Input("url", "search"),
        Input("tick", "n_intervals"),
    )
    def _page(path: str | None, search: str | None, _n: int | None) -> list[Component]:
        return pages.render(path or "/", parse(search))

    @app.callback(
        Output("url", "search"),
        Input("f-apply", "n_clicks"),
        State("f-group", "value"),
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
        topic: str | None,
        partition: Any,
        generation: Any,
        severity: str | None,
        since: str | None,
    ) -> str:
        def as_int(v: Any) -> int | None:
            return int(v) if isinstance(v, int | float) else None

        return Filters(
            group=group or None,
            topic=(topic or "").strip() or None,
            partition=as_int(partition),
            generation=as_int(generation),
            severity=severity or None,
            since=since or "all",
        ).query()

    return app
