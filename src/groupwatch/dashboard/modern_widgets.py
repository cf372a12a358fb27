"""Page parts for KIP-848 consumer groups, streams groups and share groups: the group-type
badge, the epochs line, the members table with member epochs, states and pending revocations.

Classic and modern groups share the pages; these parts are where a modern group differs.
"""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from dash import html
from dash.development.base_component import Component

from groupwatch.dashboard import modern
from groupwatch.dashboard.frames import fmt_tps, is_null

#: Untyped aliases: Dash accepts ``data-*`` attributes as keyword arguments; its stubs do not.
Tr: Any = html.Tr
Span: Any = html.Span

CSS = """
.gtype { padding: 1px 7px; border-radius: 4px; font-size: 12px; border: 1px solid #9aa7b4;
         background: #fff; white-space: nowrap; }
.gtype-consumer { background: #e8f1fb; border-color: #5b8fc7; }
.gtype-streams { background: #eaf6ea; border-color: #5fa35f; }
.gtype-share { background: #f4ecfa; border-color: #9b6bc0; }
.epochs { font-size: 14px; } .epochs b { font-size: 16px; }
.state { padding: 1px 7px; border-radius: 4px; font-size: 12px; font-weight: 600; }
.state-stable { color: #1e7e4a; }
.state-unrevoked { color: #fff; background: #d35400; }
.state-unreleased { color: #fff; background: #2471a3; }
.state-unknown { color: #fff; background: #c0392b; }
table.grid tr.not-stable td { background: #fff6e5; }
td.pending.held { color: #a04000; font-weight: 700; background: #fde9d0; }
td.target.differs { color: #1f5f99; font-weight: 600; }
table.matrix td.pending { background: #fad7a0; font-weight: 600; }
table.matrix td.target { box-shadow: inset 0 0 0 2px #5b8fc7; }
"""

#: A share group's partitions are shared by its members: no one-owner checks apply.
SHARE_NOTE = (
    "Share group (KIP-932): its members consume the same partitions together, record by "
    "record, so exclusive ownership does not apply and no overlap is marked."
)


def type_badge(group_type: str) -> html.Span:
    """The group type as a small badge (classic, consumer (KIP-848), streams, share)."""
    title = "exclusive ownership does not apply" if group_type == modern.SHARE else None
    span: html.Span = Span(
        modern.label(group_type),
        className=f"gtype gtype-{group_type}",
        title=title,
        **{"data-type": group_type},
    )
    return span


def generation_text(group_type: str, generation: Any, assignment_epoch: Any) -> str:
    """A classic group's generation, or a modern group's group epoch (and its assignment epoch
    when that lags behind)."""
    if generation is None or pd.isna(generation):
        return ""
    if not modern.is_modern(group_type):
        return f"gen {int(generation)}"
    text = f"epoch {int(generation)}"
    if assignment_epoch is not None and not pd.isna(assignment_epoch):
        if int(assignment_epoch) != int(generation):
            text += f" (assignment {int(assignment_epoch)})"
    return text


def _state_class(state: str) -> str:
    known = {"STABLE": "stable", "UNREVOKED": "unrevoked", "UNRELEASED": "unreleased"}
    return "state-" + known.get(state, "unknown")


def state_badge(state: str) -> html.Span:
    if not state:
        return html.Span("")
    return html.Span(state, className=f"state {_state_class(state)}")


def epochs_line(m: Any) -> html.P:
    """``group epoch N · assignment epoch M`` of a :class:`views.Matrix` of a modern group."""
    parts: list[Any] = ["group epoch ", html.B(str(m.generation), id="group-epoch")]
    if m.assignment_epoch is not None:
        parts += [" · assignment epoch ", html.B(str(m.assignment_epoch), id="assignment-epoch")]
        if m.generation is not None and m.assignment_epoch < m.generation:
            parts.append(
                html.Span(
                    " — the group epoch is ahead: a new target assignment is still to come",
                    className="warn",
                )
            )
    if m.deleted:
        parts.append(html.Span(" — the group has since been deleted", className="warn"))
    return html.P(parts, className="epochs", id="modern-epochs")


def _noun(group_type: str) -> str:
    return "tasks" if group_type == "streams" else "partitions"


def members_table(frame: pd.DataFrame, group_type: str) -> html.Table:
    """One row per member (:func:`modern.members_at`): its epoch and state, what it is
    assigned, its target next to it, and what it must still revoke."""
    noun = _noun(group_type)
    head = html.Tr(
        [
            html.Th(c)
            for c in (
                "member",
                "client",
                "member epoch",
                "state",
                f"assigned {noun}",
                "target",
                "pending revocation",
                "instance",
                "since (UTC)",
            )
        ]
    )
    rows = []
    for _, r in frame.iterrows():
        state = str(r["member_state"])
        pending = fmt_tps(r["pending_revocation"])
        target = None if r["target"] is None else fmt_tps(r["target"])
        since = r["since"]
        rows.append(
            Tr(
                [
                    html.Td(r["member_id"]),
                    html.Td("" if is_null(r["client_id"]) else str(r["client_id"])),
                    html.Td(str(r["member_epoch"]), className="member-epoch"),
                    html.Td(state_badge(state), className="member-state"),
                    html.Td(fmt_tps(r["assignment"]), className="assigned-partitions"),
                    html.Td(
                        "—" if target is None else target or "(none)",
                        className="target differs" if r["target_differs"] else "target",
                        title="differs from what it is assigned" if r["target_differs"] else None,
                    ),
                    html.Td(pending, className="pending held" if pending else "pending"),
                    html.Td("" if is_null(r["group_instance_id"]) else str(r["group_instance_id"])),
                    html.Td(
                        since.strftime("%Y-%m-%d %H:%M:%S")
                        if isinstance(since, pd.Timestamp)
                        else ""
                    ),
                ],
                className="not-stable" if modern.not_stable(state) else "",
                **{"data-member": r["member_id"], "data-state": state},
            )
        )
    if not rows:
        rows = [html.Tr(html.Td("no members at this group epoch", colSpan=9))]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="grid", id="members-table")


def matrix_member_label(member: Any) -> list[Component | str]:
    """A modern matrix column's heading: the member, its epoch and its state."""
    state = member.state or ""
    return [
        member.member_id,
        html.Br(),
        html.Small(
            f"epoch {member.member_epoch}" + (f" · {state}" if state else ""),
            className="warn" if modern.not_stable(state) else "",
        ),
    ]


def matrix_legend(group_type: str) -> html.Div:
    spans = [html.Span("green: assigned")]
    if group_type != modern.SHARE:  # share groups revoke nothing: their members share
        spans.append(html.Span("orange: pending revocation (still held)"))
    spans.append(html.Span("blue frame: in the member's target"))
    if group_type == modern.SHARE:
        spans.append(
            html.Span("shared partitions are expected: exclusive ownership does not apply")
        )
    else:
        spans.append(html.Span("red row: held by two or more members (overlap)"))
    return html.Div(spans, className="legend")
