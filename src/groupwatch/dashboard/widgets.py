"""Table and chart widgets the pages share: severity badges, a frame as a table, the findings
table with each finding's evidence, the partition ownership matrix and an empty chart.

Every table carries an ``id`` and its rows ``data-*`` attributes, so a test (or a person's
browser) finds a group, a member or a finding without reading the text.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import plotly.express as px  # type: ignore[import-untyped]
from dash import html
from dash.development.base_component import Component

from groupwatch.dashboard import modern, views
from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard.frames import evidence
from groupwatch.notify.kinds import explanation_of

#: Untyped aliases: Dash accepts ``data-*`` attributes as keyword arguments; its stubs do not.
Tr: Any = html.Tr
Td: Any = html.Td

#: The charts' colour per severity (the badges' CSS in ``app.py`` uses the same).
SEVERITY_COLOURS = {
    "critical": "#c0392b",
    "error": "#8e44ad",
    "warning": "#e67e22",
    "info": "#2980b9",
    "ok": "#27ae60",
    "deleted": "#7f8c8d",
}


def badge(severity: str) -> html.Span:
    """A severity (or ok, deleted) as a coloured badge."""
    return html.Span(severity, className=f"badge sev-{severity}")


def fmt(value: Any) -> str:
    """A cell as text: blank for null, timestamps to the second, whole floats as ints."""
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
        html.Tr([html.Td(cells[c](row) if c in cells else fmt(row[c])) for c in frame.columns])
        for _, row in frame.iterrows()
    ]
    if not body:
        body = [html.Tr(html.Td("nothing here (yet)", colSpan=max(1, len(frame.columns))))]
    return html.Table([head, html.Tbody(body)], className="grid", id=table_id)


def empty_fig(title: str) -> Any:
    """A chart with a title and nothing in it (no rows to plot)."""
    fig = px.scatter(title=title)
    fig.update_layout(height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30})
    return fig


def findings_table(frame: pd.DataFrame, table_id: str, generation: str = "generation") -> Component:
    """Findings with their evidence; ``generation`` heads that column (a modern group's
    findings carry a member or group epoch there)."""
    head = html.Tr(
        [html.Th(c) for c in ("severity", "kind", generation, "where", "what happened", "evidence")]
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
                    html.Td(fmt(r["generation"])),
                    html.Td(where),
                    html.Td(fmt(r["detail"])),
                    html.Td(
                        html.Details([html.Summary("evidence"), html.Pre(ev, className="evidence")])
                    ),
                ],
                **{"data-kind": str(r["kind"]), "data-finding": str(r["finding_id"])},
            )
        )
    if not rows:
        rows = [html.Tr(html.Td("no findings", colSpan=6))]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="grid", id=table_id)


def ownership_table(m: views.Matrix) -> Component:
    """The partition ownership matrix: a row per partition (a streams group: per task), a column
    per member, and the marks (overlap, withheld, unassigned, contested, finding kinds)."""
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
                            f"claim gen {m_.claim_generation}" + (" (stale)" if m_.stale else ""),
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
