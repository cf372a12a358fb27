"""The group page's share section, for a share group (KIP-932): each share partition's share
lag, records in flight and records archived, from ``share_partition_state`` (the job's fold of
``__share_group_state``), those needing attention first.

A share group commits no offsets, so the committed-offset lag section says nothing of it; a
deployment whose job predates share groups has no ``share_partition_state`` table, and the
section says the share state is not yet known rather than showing an empty table.
"""

from __future__ import annotations

from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from dash import html
from dash.development.base_component import Component

from groupwatch.dashboard.frames import is_null
from groupwatch.dashboard.memo import Memo
from groupwatch.dashboard.widgets import fmt

Tr: Any = html.Tr
Td: Any = html.Td
#: Archived ranges a cell lists before it says how many more.
RANGES_SHOWN = 10
_HEAD = (
    "partition",
    "start offset",
    "end",
    "share lag (records)",
    "in flight",
    "archived",
    "archived offsets",
    "max delivery count",
    "state written (UTC)",
)


def _int(value: Any) -> str:
    return "" if is_null(value) else f"{int(value):,}"


def _ranges(value: Any) -> str:
    if value is None or (not isinstance(value, list | tuple) and is_null(value)):
        return ""
    shown = []
    for r in list(value)[:RANGES_SHOWN]:
        first, last = int(r["first_offset"]), int(r["last_offset"])
        shown.append(str(first) if first == last else f"{first}-{last}")
    more = len(value) - RANGES_SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def ordered(rows: pd.DataFrame) -> pd.DataFrame:
    """The group's share partitions, those with archived records first, then by share lag
    (unknown last), then by topic and partition."""
    if rows.empty:
        return rows
    frame = rows.assign(
        _topic=rows["topic"].where(rows["topic"].notna(), rows["topic_id"]),
        _archived=rows["archived_records"].fillna(0),
        _lag=rows["lag_records"].fillna(-1),
    )
    frame = frame.sort_values(
        ["_archived", "_lag", "_topic", "partition"], ascending=[False, False, True, True]
    )
    return frame.reset_index(drop=True)


def partition_table(frame: pd.DataFrame) -> Component:
    """One row per share partition (``data-*``: topic, partition, share lag, in flight,
    archived)."""
    body = []
    for r in frame.to_dict("records"):
        topic = r["_topic"]
        archived = 0 if is_null(r["archived_records"]) else int(r["archived_records"])
        body.append(
            Tr(
                [
                    html.Th(f"{topic}-{int(r['partition'])}"),
                    Td(_int(r["start_offset"]), className="start-offset"),
                    Td(_int(r["end_offset"]), className="end"),
                    Td(_int(r["lag_records"]), className="share-lag"),
                    Td(_int(r["in_flight_records"]), className="in-flight"),
                    Td(
                        _int(r["archived_records"]),
                        className="archived" + (" alerting" if archived else ""),
                    ),
                    Td(_ranges(r["archived_ranges"]), className="archived-offsets"),
                    Td(_int(r["max_delivery_count"]), className="max-delivery-count"),
                    Td(fmt(r["observed_at"])),
                ],
                **{
                    "data-topic": str(topic),
                    "data-partition": str(int(r["partition"])),
                    "data-share-lag": _int(r["lag_records"]).replace(",", ""),
                    "data-in-flight": _int(r["in_flight_records"]).replace(",", ""),
                    "data-archived": str(archived),
                },
            )
        )
    if not body:
        body = [Tr(Td("no share state seen for this group", colSpan=len(_HEAD)))]
    return html.Table(
        [html.Thead(Tr([html.Th(c) for c in _HEAD])), html.Tbody(body)],
        className="grid",
        id="share-partitions",
    )


def section(memo: Memo, group: str) -> list[Component]:
    """The share group's partitions: a heading, the totals and the table; or why they are not
    known."""
    head: list[Component] = [html.H3("Share partitions: share lag, in flight, archived")]
    if memo.store.version("share_partition_state") is None:
        return [
            *head,
            html.P(
                "Share state not yet known: the job has not written the share_partition_state "
                "table (a job from before share groups, or one not reading __share_group_state: "
                "source.share_state_topic).",
                className="note",
                id="share-unknown",
            ),
        ]
    frame = memo.get(
        "share-partitions",
        ("share_partition_state",),
        lambda: ordered(memo.rows("share_partition_state", group)),
        group,
    )
    lags = [int(v) for v in frame["lag_records"] if not is_null(v)] if not frame.empty else []
    totals = html.P(
        [
            "share lag ",
            html.B(f"{sum(lags):,}" if lags else "unknown", id="share-lag-total"),
            " records, in flight ",
            html.B(
                f"{int(frame['in_flight_records'].fillna(0).sum()):,}" if not frame.empty else "0",
                id="share-in-flight-total",
            ),
            ", archived ",
            html.B(
                f"{int(frame['archived_records'].fillna(0).sum()):,}" if not frame.empty else "0",
                id="share-archived-total",
            ),
            f" over {len(frame):,} share partition(s)",
        ],
        className="note",
    )
    return [*head, totals, partition_table(frame)]
