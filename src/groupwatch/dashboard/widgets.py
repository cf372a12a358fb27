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
Div: Any = html.Div
Span: Any = html.Span

#: The ownership matrix shows at most this many rows, and columns of members, at once.
MATRIX_ROWS = 100
MATRIX_MEMBERS = 40
#: Members per page of the group page's members table.
MEMBERS_PAGE = 100

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


#: The colour class of each lag status (``app.py``'s style sheet).
LAG_CLASSES = {
    "stopped": "sev-error",
    "stalled": "sev-error",
    "rewound": "sev-warning",
    "lagging": "sev-warning",
    "ok": "sev-ok",
    "idle": "sev-deleted",
}


def lag_badge(status: str) -> html.Span:
    """A lag status as a coloured badge."""
    return html.Span(status, className=f"badge lag-{status} {LAG_CLASSES.get(status, 'sev-info')}")


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
        for row in frame.to_dict("records")
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


def _cell(c: views.Cell) -> tuple[str, str]:
    """A matrix cell's classes and text."""
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
    return " ".join(classes), text


def _marks(r: views.MatrixRow) -> tuple[list[str], str]:
    """A matrix row's marks and its classes."""
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
    return marks, " ".join(row_classes)


def _ownership_list(
    m: views.Matrix, shown: list[views.MatrixRow], top: list[Component]
) -> Component:
    """The matrix of a group of many members, a row per partition with the members it is
    with: each a mark of the matrix's cell (same classes, ``data-member``)."""
    rows = []
    for r in shown:
        marks, row_classes = _marks(r)
        held = []
        for member, c in sorted(r.cells.items()):
            classes, text = _cell(c)
            held.append(Span(f"{member}: {text}", className=classes, **{"data-member": member}))
        rows.append(
            Tr(
                [
                    html.Th(f"{r.topic}-{r.partition}"),
                    html.Td(held, className="holders"),
                    html.Td(", ".join(marks), className="flags"),
                ],
                className=row_classes,
                **{"data-topic": r.topic, "data-partition": str(r.partition)},
            )
        )
    noun = "task" if m.group_type == "streams" else "partition"
    head = html.Tr([html.Th(noun), html.Th("members (assigned, claimed, pending, target)"),
                    html.Th("marks")])  # fmt: skip
    legend = mw.matrix_legend(m.group_type) if modern.is_modern(m.group_type) else _legend()
    return html.Div(
        [
            legend,
            *top,
            html.Table(
                [html.Thead(head), html.Tbody(rows)],
                className="grid matrix listed",
                id="ownership-matrix",
            ),
        ]
    )


def _legend() -> html.Div:
    return html.Div(
        [
            html.Span("green: assigned"),
            html.Span("beige: claimed only"),
            html.Span("dashed: stale claim"),
            html.Span("red row: assigned to two or more members (overlap)"),
        ],
        className="legend",
    )


def _marked(r: views.MatrixRow) -> bool:
    return r.overlap or r.withheld or r.unassigned or r.contested or bool(r.kinds)


def ownership_table(m: views.Matrix, page: int | None = None, href: Any = None) -> Component:
    """The partition ownership matrix: a row per partition (a streams group: per task), a column
    per member, and the marks (overlap, withheld, unassigned, contested, finding kinds).

    A group of more than :data:`MATRIX_ROWS` partitions or :data:`MATRIX_MEMBERS` members
    shows it a page at a time (``href(n)``: page n's link), the marked rows first; a group of
    more than :data:`MATRIX_MEMBERS` members as a list, each partition with the members that
    hold, claim or target it (the same marks as the cells): a 2,000-member group is not a
    2,000-column table.  Every member is in the members table."""
    if not m.members:
        return html.P("No members recorded for this generation.")
    modern_group = modern.is_modern(m.group_type)
    rows_all, members = m.rows, m.members
    top: list[Component] = []
    if len(m.rows) > MATRIX_ROWS or len(m.members) > MATRIX_MEMBERS:
        ordered = [r for r in m.rows if _marked(r)] + [r for r in m.rows if not _marked(r)]
        first, stop, at, pages = page_bounds(len(ordered), page, MATRIX_ROWS)
        rows_all = ordered[first:stop]
        noun = "tasks" if m.group_type == "streams" else "partitions"
        listed = len(m.members) > MATRIX_MEMBERS
        top = [
            html.P(
                f"{len(m.rows):,} {noun} and {len(m.members):,} members: the marked {noun} "
                "come first"
                + (
                    f"; {MATRIX_MEMBERS:,} members or fewer show as columns, these as the "
                    "members each partition is with (every member is in the members table)."
                    if listed
                    else "."
                ),
                className="note",
                id="matrix-note",
            ),
            pager(href or (lambda n: f"?page={n}"), len(ordered), at, pages, first, stop,
                  noun, "matrix-pager"),
        ]  # fmt: skip
        if listed:
            return _ownership_list(m, rows_all, top)
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
                            f"claim gen {m_.claim_text or m_.claim_generation}"
                            + (" (stale)" if m_.stale else ""),
                            className="warn" if m_.stale else "",
                        ),
                    ]
                )
                for m_ in members
            ],
            html.Th("marks"),
        ]
    )
    rows = []
    for r in rows_all:
        tds = []
        for m_ in members:
            classes, text = _cell(r.cells.get(m_.member_id, views.Cell()))
            tds.append(Td(text, className=classes, **{"data-member": m_.member_id}))
        marks, row_classes = _marks(r)
        rows.append(
            Tr(
                [
                    html.Th(f"{r.topic}-{r.partition}"),
                    *tds,
                    html.Td(", ".join(marks), className="flags"),
                ],
                className=row_classes,
                **{"data-topic": r.topic, "data-partition": str(r.partition)},
            )
        )
    legend = mw.matrix_legend(m.group_type) if modern_group else _legend()
    return html.Div(
        [
            legend,
            *top,
            html.Table(
                [html.Thead(head), html.Tbody(rows)],
                className="grid matrix",
                id="ownership-matrix",
            ),
        ]
    )


def page_bounds(total: int, page: int | None, size: int) -> tuple[int, int, int, int]:
    """(first row, row after the last, page, pages) of page ``page`` (from 1; past the end:
    the last page) of ``total`` rows, ``size`` a page."""
    pages = max(1, -(-total // size))
    at = min(max(1, page or 1), pages)
    return (at - 1) * size, min(total, at * size), at, pages


def pager(
    href: Any, total: int, page: int, pages: int, first: int, stop: int, what: str, pid: str
) -> Component:
    """``what`` first-stop of total, and links to the first, previous, next and last page;
    ``href(n)`` is page n's link."""
    links: list[Any] = []
    for label, to, on in (
        ("« first", 1, page > 1),
        ("‹ previous", page - 1, page > 1),
        ("next ›", page + 1, page < pages),
        ("last »", pages, page < pages),
    ):
        links.append(
            html.A(
                label, href=href(to), className=f"pg pg-{to}", id=f"{pid}-{label.strip('«‹›» ')}"
            )
            if on
            else html.Span(label, className="pg off")
        )
    shown = f"{what} {first + 1:,}–{stop:,} of {total:,}" if total else f"no {what}"
    div: Component = Div(
        [html.Span(shown, className="pg-shown"), f" · page {page:,} of {pages:,} ", *links],
        className="pager",
        id=pid,
        **{"data-total": str(total), "data-page": str(page), "data-pages": str(pages)},
    )
    return div


def classic_members_table(m: views.Matrix, page: int | None, href: Any) -> Component:
    """A classic group's members at the matrix's generation, a page at a time: client, the
    generation of its claim, and what it claims and is assigned."""
    assigned: dict[str, list[str]] = {}
    claimed: dict[str, list[str]] = {}
    for r in m.rows:
        for member, c in r.cells.items():
            if c.assigned:
                assigned.setdefault(member, []).append(f"{r.topic}-{r.partition}")
            if c.claimed:
                claimed.setdefault(member, []).append(f"{r.topic}-{r.partition}")
    first, stop, at, pages = page_bounds(len(m.members), page, MEMBERS_PAGE)
    head = html.Tr(
        [html.Th(c) for c in ("member", "client", "claim generation", "assigned", "claimed")]
    )
    rows = [
        Tr(
            [
                html.Td(m_.member_id),
                html.Td(fmt(m_.client_id)),
                html.Td(
                    f"{m_.claim_text or m_.claim_generation}" + (" (stale)" if m_.stale else ""),
                    className="warn" if m_.stale else "",
                ),
                html.Td(", ".join(assigned.get(m_.member_id, []))),
                html.Td(", ".join(claimed.get(m_.member_id, []))),
            ],
            **{"data-member": m_.member_id},
        )
        for m_ in m.members[first:stop]
    ]
    if not rows:
        rows = [html.Tr(html.Td("no members at this generation", colSpan=5))]
    return html.Div(
        [
            pager(href, len(m.members), at, pages, first, stop, "members", "members-pager"),
            html.Table(
                [html.Thead(head), html.Tbody(rows)], className="grid", id="classic-members"
            ),
        ]
    )
