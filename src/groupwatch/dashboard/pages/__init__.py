"""The dashboard's pages, each a plain function of (tables, filters) in a module of its own:
``fleet`` (``/``), ``group`` (``/group``), ``partitions`` (``/partitions``) and ``health``
(``/health``).  :class:`Pages` picks the page for a path and draws the filter bar.

Pages only read: the tables come through :class:`~groupwatch.delta.read.DeltaStore`.  A URL an
alert links to therefore shows the same thing to everyone who opens it.
"""

from __future__ import annotations

import logging
import time

import pandas as pd  # type: ignore[import-untyped]
from dash import dcc, html
from dash.development.base_component import Component

from groupwatch.dashboard.filters import (
    HEALTHS,
    LAG_STATUSES,
    SORT_NAMES,
    TYPES,
    WINDOWS,
    Filters,
)
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.pages import fleet, group, health, partitions
from groupwatch.delta.read import DeltaStore
from groupwatch.notify.kinds import SEVERITIES

log = logging.getLogger(__name__)
_PAGE_TABLES = (
    "group_snapshots",
    "member_assignments",
    "findings",
    "group_offsets",
    "committed_offsets",
    "committed_changes",
    "group_state",
    "partition_ownership",
    "quarantine",
    "validation_results",
    "partition_lag",
    "lag_history",
)


class Pages:
    """The pages over one store (and the job's metrics endpoint, if given); one per app."""

    def __init__(self, store: DeltaStore, metrics_url: str | None = None) -> None:
        self.store = store
        self.metrics_url = metrics_url
        self.memo = Memo(store)

    def read(self, table: str) -> pd.DataFrame:
        """One table as the pages read it (cached per Delta version by the store)."""
        return self.store.read(table)

    def versions(self) -> tuple[int | None, ...]:
        """The newest version of every table the pages read: a page rendered at the same
        versions (and URL, and minute) is the same page."""
        return self.store.versions(*_PAGE_TABLES)

    # -- filter bar ------------------------------------------------------------------------
    def filter_bar(self, path: str, f: Filters) -> list[Component]:
        """The filter controls, set from ``f``; the partition and generation fields show on
        the pages that use them.  The group is typed, not picked from a list: a list of every
        group is 100,000 options to send with each page."""

        def opts(values: list[str]) -> list[dict[str, str]]:
            return [{"label": v, "value": v} for v in values]

        def field(label: str, control: Component, visible: bool = True) -> html.Label:
            return html.Label([label, control], style={} if visible else {"display": "none"})

        bar: list[Component] = [
            field(
                "group", dcc.Input(id="f-group", value=f.group or "", type="text", debounce=True)
            ),
            field(
                "name contains",
                dcc.Input(id="f-name", value=f.name or "", type="text", debounce=True),
                path == "/",
            ),
            field("type", dcc.Dropdown(opts(list(TYPES)), f.type, id="f-type"), path == "/"),
            field(
                "health", dcc.Dropdown(opts(list(HEALTHS)), f.health, id="f-health"), path == "/"
            ),
            field(
                "lag status",
                dcc.Dropdown(opts(list(LAG_STATUSES)), f.lag, id="f-lag"),
                path == "/",
            ),
            field(
                "order",
                dcc.Dropdown(
                    opts(list(SORT_NAMES)), f.sort or "attention", id="f-sort", clearable=False
                ),
                path == "/",
            ),
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

    def warm(self) -> float:
        """Read the tables and compute the fleet page's aggregates once, before anyone asks
        (``groupwatch dashboard`` does it at start-up, in the background): the first request
        of a fleet of 10,000 groups would otherwise wait for them, about 2 s on two cores
        (bench/HISTORY.md, "On the cluster model's tables, on a quiet machine"). Returns the
        seconds it took."""
        started = time.perf_counter()
        self.render("/", Filters())
        return time.perf_counter() - started

    # -- pages -----------------------------------------------------------------------------
    def render(self, path: str, f: Filters) -> list[Component]:
        """The page at ``path`` for filters ``f``; a page that fails says so and why."""
        try:
            if path == "/group":
                return group.render(self.memo, f)
            if path == "/partitions":
                return partitions.render(self.memo, f)
            if path == "/health":
                return health.render(self.memo, f, self.metrics_url)
            if path == "/":
                return fleet.render(self.memo, f)
        except Exception as exc:  # noqa: BLE001 - a broken page says why; the app keeps serving
            log.exception("page %s failed", path)
            return [html.P(f"This page failed to render: {exc}", className="warn")]
        return [html.H2("Not found"), dcc.Link("Fleet", href="/")]
