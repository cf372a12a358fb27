"""Partition counts for the rules, as stated in a JSON document (``analyze --partitions``, the
job's ``detect.partitions``), each with the time from which it holds (it judges the
generations written from then on: :mod:`groupwatch.detect.topic_counts`).  Reading the file
and asking the brokers for their counts happen above the engine, which does no I/O
(:mod:`groupwatch.analyze`, :mod:`groupwatch.broker_client`).

Without stated counts or the brokers', the engine infers counts from what the group's own
records show (see ``docs/detection.md`` for what inference cannot see).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

from groupwatch.errors import GroupwatchError


class PartitionsError(GroupwatchError, ValueError):
    """The partition counts could not be read (or the brokers asked: ``analyze``'s broker
    client raises it too)."""


#: ``since``/``as_of`` value: the counts held for every record, whenever written.
ALWAYS = "always"


def now_ms() -> int:
    return int(time.time() * 1000)


def parse_since(value: object, default_ms: int) -> int | None:
    """When stated counts start to hold: ``None``/``""`` -> ``default_ms`` (when they were read),
    ``"always"`` -> ``None`` (every record), an ISO-8601 time (UTC unless it says otherwise) or
    epoch milliseconds -> that time in ms."""
    if value is None or value == "":
        return default_ms
    if value == ALWAYS:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value)
        except ValueError as exc:
            raise PartitionsError(f"{value!r} is neither an ISO-8601 time nor {ALWAYS!r}") from exc
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return int(when.timestamp() * 1000)
    raise PartitionsError(f"{value!r} is neither an ISO-8601 time nor {ALWAYS!r}")


@dataclass(frozen=True, slots=True)
class StatedCounts:
    """Partition counts and the time from which they hold (``None``: every record)."""

    counts: dict[str, int]
    as_of_ms: int | None


def parse_stated(doc: Any, read_ms: int) -> StatedCounts:
    """``{"topic": count}``, or ``{"partitions_per_topic": {...}, "as_of": TIME}``; without an
    ``as_of`` the counts hold from ``read_ms`` (when they were read) on."""
    as_of: object = None
    if isinstance(doc, dict) and isinstance(doc.get("partitions_per_topic"), dict):
        as_of = doc.get("as_of")
    return StatedCounts(parse_counts(doc), parse_since(as_of, read_ms))


def parse_counts(doc: Any) -> dict[str, int]:
    """``{"topic": count, ...}`` (or ``{"partitions_per_topic": {...}}``) -> counts."""
    if isinstance(doc, dict) and isinstance(doc.get("partitions_per_topic"), dict):
        doc = doc["partitions_per_topic"]
    if not isinstance(doc, dict):
        raise PartitionsError("expected a JSON object mapping topic -> partition count")
    out: dict[str, int] = {}
    for topic, count in doc.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise PartitionsError(f"partition count of {topic!r} is not a non-negative integer")
        out[str(topic)] = count
    return out
