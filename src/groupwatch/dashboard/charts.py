"""The pages' charts as plain Plotly figure dicts.

Plotly Express builds a figure through its validators, which costs a good part of a second per
chart (and several seconds for the first one after start): more than the rest of a page.  The
figures here are the same charts written as the JSON Plotly.js draws, built in milliseconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

Figure = dict[str, Any]
_MARGIN = {"l": 40, "r": 10, "t": 40, "b": 30}
#: Plotly's default colour sequence (Plotly Express uses it for categories).
PALETTE = [
    "#636efa",
    "#EF553B",
    "#00cc96",
    "#ab63fa",
    "#FFA15A",
    "#19d3f3",
    "#FF6692",
    "#B6E880",
    "#FF97FF",
    "#FECB52",
]


def _iso(values: pd.Series) -> list[str | None]:
    """Times as ``Timestamp.isoformat`` writes them (null as None).  A column of UTC or naive
    times is formatted as columns: a week of a group's lag history is thousands of points,
    and a Timestamp made per point cost more than the rest of the group's page."""
    dtype = values.dtype
    utc = isinstance(dtype, pd.DatetimeTZDtype) and str(dtype.tz) in ("UTC", "utc")
    if not (utc or (dtype.kind == "M" and not isinstance(dtype, pd.DatetimeTZDtype))):
        return [None if pd.isna(v) else pd.Timestamp(v).isoformat() for v in values]
    if values.empty:
        return []
    plain = values.dt.tz_localize(None) if utc else values
    micro = plain.dt.microsecond.fillna(0).to_numpy(dtype="int64")
    nano = plain.dt.nanosecond.fillna(0).to_numpy(dtype="int64")
    # isoformat's fraction: nine digits with nanoseconds, six with microseconds, else none.
    fraction = np.where(
        nano != 0,
        np.char.add(".", np.char.zfill((micro * 1000 + nano).astype(str), 9)),
        np.where(micro != 0, np.char.add(".", np.char.zfill(micro.astype(str), 6)), ""),
    )
    text = np.datetime_as_string(plain.to_numpy(dtype="datetime64[ns]"), unit="s")
    suffix = "+00:00" if utc else ""
    missing = plain.isna().to_numpy()
    return [
        None if gone else f"{head}{tail}{suffix}"
        for head, tail, gone in zip(text, fraction, missing, strict=True)
    ]


def _plain(values: pd.Series) -> list[Any]:
    """Cells as JSON values (numbers, text, null)."""
    out: list[Any] = []
    for v in values:
        if v is None or (not isinstance(v, str | list | dict) and pd.isna(v)):
            out.append(None)
        elif isinstance(v, pd.Timestamp):
            out.append(v.isoformat())
        elif hasattr(v, "item"):
            out.append(v.item())
        else:
            out.append(v)
    return out


def layout(title: str, height: int = 260, **more: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "height": height, "margin": _MARGIN, **more}


#: What an empty chart says instead of drawing axes over nothing.
NOTHING_YET = "nothing to show yet"
#: The narrowest time axis drawn: a single point (or points a moment apart) sits in the middle
#: of this much time instead of on Plotly's sub-millisecond ticks.
MIN_TIME_SPAN = pd.Timedelta(hours=1)


def empty(title: str, height: int = 260, note: str = NOTHING_YET) -> Figure:
    """A chart with a title that says in words there is nothing in it (no axes drawn)."""
    hidden = {"visible": False}
    return {
        "data": [],
        "layout": layout(
            title,
            height,
            xaxis=hidden,
            yaxis=hidden,
            annotations=[
                {
                    "text": note,
                    "showarrow": False,
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "font": {"size": 14, "color": "#666"},
                }
            ],
        ),
    }


def _has_points(fig: Figure) -> bool:
    """Whether any trace has a point with a value to draw."""
    for trace in fig["data"]:
        ys = trace.get("y") or []
        xs = trace.get("x") or []
        if any(v is not None for v in ys) and any(v is not None for v in xs):
            return True
    return False


def said(fig: Figure, time_axis: bool = True) -> Figure:
    """Every chart's last step: an empty one says so in words, and a time axis spans at least
    :data:`MIN_TIME_SPAN` around its points (a single point is not drawn on ticks half a
    millisecond apart)."""
    title = str(fig["layout"].get("title", {}).get("text", ""))
    if not _has_points(fig):
        return empty(title, int(fig["layout"].get("height", 260)))
    if time_axis:
        times = pd.to_datetime(
            [v for t in fig["data"] for v in (t.get("x") or []) if v is not None],
            utc=True,
            format="ISO8601",
        )
        # A bar drawn from its time on (``offset`` 0) ends a ``width`` (ms) after it.
        reach = max((float(t.get("width") or 0) for t in fig["data"]), default=0.0)
        lo, hi = times.min(), times.max() + pd.Timedelta(milliseconds=reach)
        if hi - lo < MIN_TIME_SPAN:
            middle = lo + (hi - lo) / 2
            axis = dict(fig["layout"].get("xaxis") or {})
            axis.update(
                type="date",
                range=[
                    (middle - MIN_TIME_SPAN / 2).isoformat(),
                    (middle + MIN_TIME_SPAN / 2).isoformat(),
                ],
            )
            fig["layout"]["xaxis"] = axis
    return fig


def stacked_bars(
    frame: pd.DataFrame,
    x: str,
    y: str,
    colour: str,
    colours: dict[str, str],
    title: str,
    bucket: pd.Timedelta | None = None,
) -> Figure:
    """One bar trace per value of ``colour``, stacked.  ``bucket``: ``x`` is the start of a
    time bucket this wide, and each bar spans it (Plotly sizes a lone bar on a date axis to a
    millisecond otherwise: a line nobody sees)."""
    traces = []
    for i, (name, part) in enumerate(frame.groupby(colour, sort=False)):
        trace: dict[str, Any] = {
            "type": "bar",
            "name": str(name),
            "x": _iso(part[x])
            if pd.api.types.is_datetime64_any_dtype(part[x])
            else _plain(part[x]),
            "y": _plain(part[y]),
            "marker": {"color": colours.get(str(name), PALETTE[i % len(PALETTE)])},
        }
        if bucket is not None:
            trace.update(width=bucket / pd.Timedelta(milliseconds=1), offset=0)
        traces.append(trace)
    timed = bool(len(frame)) and pd.api.types.is_datetime64_any_dtype(frame[x])
    return said(
        {
            "data": traces,
            "layout": layout(title, 280, barmode="relative", legend={"title": {"text": colour}}),
        },
        time_axis=timed,
    )


def bubbles(
    frame: pd.DataFrame,
    x: str,
    y: str,
    size: pd.Series,
    colour: str,
    hover: list[str],
    title: str,
    y_title: str | None = None,
) -> Figure:
    """A scatter of ``y`` over time ``x``, marker area by ``size``, a trace per ``colour``."""
    top = float(size.max()) if len(size) else 1.0
    # Plotly Express's sizing: areas, the largest 20 px across.
    sizeref = 2.0 * max(top, 1.0) / (20.0**2)
    traces = []
    for i, (name, part) in enumerate(frame.groupby(colour, sort=False)):
        custom = [list(row) for row in zip(*[_plain(part[h]) for h in hover], strict=True)]
        template = "<br>".join(
            [f"{x}=%{{x}}", f"{y_title or y}=%{{y}}"]
            + [f"{h}=%{{customdata[{k}]}}" for k, h in enumerate(hover)]
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": str(name),
                "x": _iso(part[x]),
                "y": _plain(part[y]),
                "customdata": custom,
                "hovertemplate": template + "<extra></extra>",
                "marker": {
                    "size": _plain(size[part.index]),
                    "sizemode": "area",
                    "sizeref": sizeref,
                    "color": PALETTE[i % len(PALETTE)],
                },
            }
        )
    return said(
        {
            "data": traces,
            "layout": layout(
                title, yaxis={"title": {"text": y_title or y}}, xaxis={"title": {"text": x}}
            ),
        }
    )


def gantt(
    frame: pd.DataFrame, start: str, end: str, lane: str, colour: str, hover: list[str], title: str
) -> Figure:
    """Horizontal bars from ``start`` to ``end`` per ``lane``, a trace per ``colour`` (as
    Plotly Express's timeline: a bar's base is its start, its length the duration in ms)."""
    traces = []
    begin_all = pd.to_datetime(frame[start], utc=True)
    frame = frame.assign(
        _begin=_iso(begin_all),
        _ms=(pd.to_datetime(frame[end], utc=True) - begin_all).dt.total_seconds() * 1000,
    )
    for i, (name, part) in enumerate(frame.groupby(colour, sort=False)):
        custom = [list(row) for row in zip(*[_plain(part[h]) for h in hover], strict=True)]
        template = "<br>".join(
            [f"{lane}=%{{y}}", f"{start}=%{{base}}"]
            + [f"{h}=%{{customdata[{k}]}}" for k, h in enumerate(hover)]
        )
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": str(name),
                "base": list(part["_begin"]),
                "x": _plain(part["_ms"]),
                "y": _plain(part[lane]),
                "customdata": custom,
                "hovertemplate": template + "<extra></extra>",
                "marker": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    lanes = frame[lane].nunique()
    return said(
        {
            "data": traces,
            "layout": layout(
                title,
                max(260, 40 * lanes + 120),
                barmode="overlay",
                xaxis={"type": "date"},
                yaxis={"autorange": "reversed"},
                legend={"title": {"text": colour}},
            ),
        },
        time_axis=False,
    )


def lines(frame: pd.DataFrame, x: str, ys: list[str], title: str) -> Figure:
    """One line with markers per column of ``ys`` over time ``x``."""
    traces = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": y,
            "x": _iso(frame[x]),
            "y": _plain(frame[y]),
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, y in enumerate(ys)
    ]
    return said({"data": traces, "layout": layout(title, legend={"title": {"text": "variable"}})})


def by_series(frame: pd.DataFrame, x: str, y: str, series: str, title: str) -> Figure:
    """``y`` over time ``x``, a line per value of ``series`` (a topic's lag, say)."""
    traces = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": str(name),
            "x": _iso(part[x]),
            "y": _plain(part[y]),
            "marker": {"color": PALETTE[i % len(PALETTE)]},
        }
        for i, (name, part) in enumerate(frame.groupby(series, sort=True))
    ]
    return said(
        {
            "data": traces,
            "layout": layout(
                title, legend={"title": {"text": series}}, yaxis={"rangemode": "tozero"}
            ),
        }
    )
