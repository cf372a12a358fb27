"""Page filters as URL query parameters: parsed strictly, applied only as pandas comparisons.

A shared or alert-linked URL such as ``/group?group=orders-etl&generation=6&severity=critical``
reproduces the page.  Values are never interpolated into SQL or paths: the dashboard has no SQL,
and table paths come from the table catalogue.  A value that does not parse is dropped (and
reported on the page), never passed on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlencode

import pandas as pd  # type: ignore[import-untyped]

from groupwatch.detect.lag.model import WORST_FIRST as STATUS_ORDER
from groupwatch.notify.kinds import SEVERITIES

#: The ``since`` shorthands offered in the filter bar.
WINDOWS: dict[str, timedelta | None] = {
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "all": None,
}
_MAX_TEXT = 256
_DURATION = re.compile(r"^(\d{1,6})([mhd])$")


@dataclass(frozen=True)
class Filters:
    group: str | None = None
    topic: str | None = None
    partition: int | None = None
    generation: int | None = None
    severity: str | None = None
    since: str = "all"
    #: The fleet page: part of a group's name (any case), a group type, a health, an order.
    name: str | None = None
    type: str | None = None
    health: str | None = None
    #: The fleet page: groups whose lag status (their worst partition's) is this one.
    lag: str | None = None
    sort: str | None = None
    #: The page of the page's long list (fleet: groups; group: partitions; history:
    #: intervals), from 1; ``mpage``: the group page's members.
    page: int | None = None
    mpage: int | None = None
    #: The group page's lag table.
    lpage: int | None = None
    #: Parameters that were present but rejected, for the page to say so.
    rejected: tuple[str, ...] = field(default=(), compare=False)

    def since_time(self, now: datetime | None = None) -> datetime | None:
        """The lower time bound, or None for all time."""
        if self.since in WINDOWS:
            delta = WINDOWS[self.since]
        else:
            m = _DURATION.match(self.since)
            if m:
                unit = {"m": "minutes", "h": "hours", "d": "days"}[m.group(2)]
                delta = timedelta(**{unit: int(m.group(1))})
            else:
                return datetime.fromisoformat(self.since).astimezone(UTC)
        if delta is None:
            return None
        return (now or datetime.now(UTC)) - delta

    def query(self, **changes: object) -> str:
        """This filter set (with ``changes``) as a query string, for links."""
        f = replace(self, **changes)  # type: ignore[arg-type]
        items = [
            (k, str(v))
            for k, v in (
                ("group", f.group),
                ("topic", f.topic),
                ("partition", f.partition),
                ("generation", f.generation),
                ("severity", f.severity),
                ("since", None if f.since == "all" else f.since),
                ("name", f.name),
                ("type", f.type),
                ("health", f.health),
                ("lag", f.lag),
                ("sort", f.sort),
                ("page", f.page),
                ("mpage", f.mpage),
                ("lpage", f.lpage),
            )
            if v is not None and v != ""
        ]
        return ("?" + urlencode(items)) if items else ""

    def href(self, to: str, /, **changes: object) -> str:
        """A link to page ``to`` with these filters; the fleet's own (name, type, health, sort)
        and the list pages stay behind (a group's page starts at its first page)."""
        if to.strip("/"):
            changes = {**_FLEET_ONLY, **changes}
        return f"/{to.strip('/')}{self.query(**changes)}"


_FLEET_ONLY: dict[str, object] = {
    "name": None,
    "type": None,
    "health": None,
    "lag": None,
    "sort": None,
    "page": None,
    "mpage": None,
    "lpage": None,
}
#: The fleet page's choices (a value outside them is rejected like any other).
TYPES = ("classic", "consumer", "streams", "share")
HEALTHS = (*SEVERITIES, "ok", "deleted")
SORT_NAMES = (
    "attention",
    "group",
    "members",
    "rebalances",
    "last_seen",
    "lag",
    "lag_records",
    "lag_status",
)
LAG_STATUSES = STATUS_ORDER


def _text(value: str) -> str | None:
    value = value.strip()
    if not value or len(value) > _MAX_TEXT or any(ord(c) < 32 for c in value):
        return None
    return value


def _since(value: str) -> str | None:
    value = value.strip()
    if value in WINDOWS or _DURATION.match(value):
        return value
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return None
    return value


def parse(search: str | None) -> Filters:
    """Filters from a query string (``?a=b&...``, as the browser's ``location.search``)."""
    raw = parse_qs((search or "").lstrip("?"), keep_blank_values=False)
    values: dict[str, object] = {}
    rejected: list[str] = []
    for key, vals in raw.items():
        value = vals[-1]
        parsed: object | None
        if key in ("group", "topic", "name"):
            parsed = _text(value)
        elif key in ("partition", "generation"):
            parsed = int(value) if re.fullmatch(r"-?\d{1,9}", value.strip()) else None
        elif key in ("page", "mpage", "lpage"):
            parsed = int(value) if re.fullmatch(r"[1-9]\d{0,8}", value.strip()) else None
        elif key == "type":
            parsed = value if value in TYPES else None
        elif key == "health":
            parsed = value if value in HEALTHS else None
        elif key == "lag":
            parsed = value if value in LAG_STATUSES else None
        elif key == "sort":
            parsed = value if value in SORT_NAMES else None
        elif key == "severity":
            parsed = value if value in SEVERITIES else None
        elif key == "since":
            parsed = _since(value)
        else:
            continue  # unknown parameters are ignored, e.g. tracking parameters of a chat tool
        if parsed is None:
            rejected.append(key)
        else:
            values[key] = parsed
    return Filters(rejected=tuple(rejected), **values)  # type: ignore[arg-type]


def in_window(frame: pd.DataFrame, column: str, filters: Filters) -> pd.DataFrame:
    """Rows whose ``column`` (a UTC timestamp) is within the filter's time window."""
    start = filters.since_time()
    if start is None or frame.empty:
        return frame
    return frame[frame[column] >= pd.Timestamp(start)]
