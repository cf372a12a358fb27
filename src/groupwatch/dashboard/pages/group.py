"""The group page (``/group``): a classic group's generations, or a KIP-848 consumer, streams or
share group's group epochs and members; the partition ownership matrix of one of them; its
findings.

It reads the group's rows only (:meth:`Memo.rows`: an index by group, built once per table
version), keeps the group's timeline and matrix per version, and shows a large group's members
and partitions a page at a time."""

from __future__ import annotations

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import charts, lag_widgets, modern, share_widgets, views
from groupwatch.dashboard import modern_widgets as mw
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.pages import fleet
from groupwatch.dashboard.views.expected import expected_beside_actual
from groupwatch.dashboard.widgets import (
    MEMBERS_PAGE,
    classic_members_table,
    findings_table,
    grid,
    ownership_table,
    page_bounds,
    pager,
)

_GROUP_TABLES = ("group_snapshots", "member_assignments", "findings", "group_offsets")
#: Names listed per generation in the timeline's joined / left cells (the members table has
#: them all).
NAMES_SHOWN = 20


def _names(text: str) -> str:
    names = text.split(", ") if text else []
    if len(names) <= NAMES_SHOWN:
        return text
    return ", ".join(names[:NAMES_SHOWN]) + f" … and {len(names) - NAMES_SHOWN:,} more"


def render(memo: Memo, f: Filters) -> list[Component]:
    """One group (default: the one needing attention most) at one generation or group epoch."""
    group = f.group
    if group is None:
        table = fleet.table(memo, Filters())
        if table.empty:
            return [html.H2("Group"), html.P("No groups seen yet.")]
        group = str(table.iloc[0]["group"])
    snaps = memo.rows("group_snapshots", group)
    members = memo.rows("member_assignments", group)
    findings = memo.rows("findings", group)

    def timeline() -> pd.DataFrame:
        tl = views.timeline(snaps, members, group)
        return tl.assign(joined=tl["joined"].map(_names), left=tl["left"].map(_names))

    tl = memo.get("timeline", ("group_snapshots", "member_assignments"), timeline, group)
    matrix = memo.get(
        "matrix",
        _GROUP_TABLES,
        lambda: views.ownership_matrix(
            members, findings, memo.rows("group_offsets", group), group, f.generation, snaps
        ),
        group,
        f.generation,
    )
    gf = views.filtered_findings(findings, Filters(group=group, severity=f.severity, since=f.since))
    if modern.is_modern(matrix.group_type):
        return _modern(group, f, tl, matrix, members, snaps, gf, memo)
    gen_links = [
        dcc.Link(
            f"gen {g}",
            href=f.href("group", group=group, generation=g),
            style={"marginRight": "8px", "fontWeight": 700 if g == matrix.generation else 400},
        )
        for g in matrix.generations
    ]
    if tl.empty:
        fig = charts.empty("Generations", note="no snapshot of this group kept yet")
    else:
        fig = charts.bubbles(
            tl,
            "time",
            "generation",
            tl["member_count"],
            "event",
            ["member_count", "leader", "joined", "left", "protocol"],
            "Generation timeline (size = members)",
        )
    gf_gen = views.findings_at(gf, snaps, group, matrix.generation)
    return [
        html.H2(["Group ", html.Code(group), " ", mw.type_badge(matrix.group_type)]),
        dcc.Graph(figure=fig, id="timeline"),
        html.Details([html.Summary("Generation table"), grid(tl, "timeline-table")]),
        *lag_widgets.section(memo, group, f),
        html.H3(f"Partition ownership, generation {matrix.generation}"),
        html.Div(["generations: ", *gen_links]),
        ownership_table(
            matrix, f.page, lambda n: f.href("group", group=group, page=n, mpage=f.mpage)
        ),
        html.H3(f"Members at generation {matrix.generation}"),
        classic_members_table(
            matrix, f.mpage, lambda n: f.href("group", group=group, page=f.page, mpage=n)
        ),
        html.H3(f"Findings of generation {matrix.generation}"),
        findings_table(gf_gen, "group-findings"),
        html.H3("Difference to the expected (re-run) assignment"),
        grid(views.expected_diff(findings, group, matrix.generation), "expected-diff"),
        *_expected_beside(members, findings, snaps, group, matrix.generation),
        html.H3("All findings of the group in the window"),
        findings_table(gf, "group-findings-all"),
    ]


def _expected_beside(
    members: pd.DataFrame,
    findings: pd.DataFrame,
    snaps: pd.DataFrame,
    group: str,
    generation: int | None,
) -> list[Component]:
    """On a generation with a critical finding: each member's expected assignment beside its
    actual one (nothing on a healthy generation)."""
    beside = expected_beside_actual(members, findings, snaps, group, generation)
    if beside.empty:
        return []
    return [
        html.H3(f"Expected assignment beside the actual one, generation {generation}"),
        html.P(
            "What Kafka's sticky assignor gives from the members' subscriptions, claims and "
            "claim generations, as a correct generation-aware leader would.",
            className="note",
        ),
        grid(beside, "expected-beside"),
    ]


def _modern(
    group: str,
    f: Filters,
    tl: pd.DataFrame,
    matrix: views.Matrix,
    members: pd.DataFrame,
    snaps: pd.DataFrame,
    gf: pd.DataFrame,
    memo: Memo,
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
        fig = charts.empty("Group epochs", note="no group-epoch record of this group kept yet")
    else:
        fig = charts.bubbles(
            tl,
            "time",
            "generation",
            tl["member_count"].clip(lower=1),
            "event",
            ["assignment_epoch", "member_count", "joined", "left"],
            "Group epoch timeline (size = members)",
            y_title="group epoch",
        )
    at = modern.epochs(snaps, group, epoch)
    everyone = memo.get(
        "members-at",
        ("group_snapshots", "member_assignments"),
        lambda: modern.members_at(members, group, at),
        group,
        epoch,
    )
    first, stop, page, pages = page_bounds(len(everyone), f.mpage, MEMBERS_PAGE)
    out: list[Component] = [
        html.H2(["Group ", html.Code(group), " ", mw.type_badge(matrix.group_type)]),
        mw.epochs_line(matrix),
    ]
    share = matrix.group_type == modern.SHARE
    if share:
        out.append(html.P(mw.SHARE_NOTE, className="note", id="share-note"))
    return [
        *out,
        dcc.Graph(figure=fig, id="timeline"),
        html.Details([html.Summary("Group epoch table"), grid(tl, "timeline-table")]),
        # A share group commits no offsets: its progress is its share partitions' state.
        *(share_widgets.section(memo, group) if share else lag_widgets.section(memo, group, f)),
        html.H3(f"Members at group epoch {epoch}"),
        html.Div(["group epochs: ", *links]),
        pager(
            lambda n: f.href("group", group=group, generation=f.generation, page=f.page, mpage=n),
            len(everyone),
            page,
            pages,
            first,
            stop,
            "members",
            "members-pager",
        ),
        mw.members_table(everyone.iloc[first:stop], matrix.group_type),
        html.H3(f"Partition ownership, group epoch {epoch}"),
        ownership_table(
            matrix,
            f.page,
            lambda n: f.href("group", group=group, generation=f.generation, page=n, mpage=f.mpage),
        ),
        html.H3(f"Findings at group epoch {epoch}"),
        findings_table(views.findings_at(gf, snaps, group, epoch), "group-findings", "epoch"),
        html.H3("All findings of the group in the window"),
        findings_table(gf, "group-findings-all", "epoch"),
    ]
