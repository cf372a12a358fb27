"""The partition history page (``/partitions``): who owned each partition over time, from the
``partition_ownership`` intervals (a classic group's by generation, a modern group's by member
epoch).

A page of intervals at a time, in the table and in the chart: one group's intervals come
through the index by group (:meth:`Memo.rows`), every group's from a copy sorted once per table
version."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard import charts, modern, views
from groupwatch.dashboard.filters import Filters
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.widgets import grid, page_bounds, pager

#: Intervals per page (table and chart).
PAGE_SIZE = 100


def render(memo: Memo, f: Filters) -> list[Component]:
    """Ownership intervals matching the filters, a page at a time, as a Gantt chart and a
    table."""
    if f.group:
        every = views.partition_history(memo.rows("partition_ownership", f.group), f)
    else:
        ordered = memo.get(
            "ownership-sorted",
            ("partition_ownership",),
            lambda: views.partition_history(memo.read("partition_ownership"), Filters()),
        )
        every = views.partition_history(ordered, f, presorted=True)
    first, stop, at, pages = page_bounds(len(every), f.page, PAGE_SIZE)
    hist = every.iloc[first:stop]
    now = pd.Timestamp(datetime.now(UTC))
    hist = hist.assign(type=modern.types(hist).map(modern.label))
    if hist.empty:
        fig = charts.empty("Ownership over time", note="no ownership interval matches")
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
        fig = charts.gantt(
            plot,
            "from_time",
            "until",
            "tp",
            "member_id",
            ["type", "from_generation", "to_generation", "client_id"],
            "Who owned each partition, over time",
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
        pager(
            lambda n: f.href("partitions", page=n),
            len(every),
            at,
            pages,
            first,
            stop,
            "intervals",
            "history-pager",
        ),
        dcc.Graph(figure=fig, id="ownership-gantt"),
        grid(table[list(cols)].rename(columns=cols), "ownership-table"),
    ]
