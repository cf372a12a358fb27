"""Partition counts for the rules: from a JSON file, or from the broker, each with the time it
was stated or observed (it judges the generations written from then on:
:mod:`groupwatch.detect.topic_counts`).

Without either, the engine infers counts from what the group's own records show (see
``docs/detection.md`` for what inference cannot see).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupwatch.errors import GroupwatchError


class PartitionsError(GroupwatchError, ValueError):
    """The partition counts could not be read."""


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


def load_counts_file(path: str | Path, read_ms: int | None = None) -> StatedCounts:
    """The file's counts, holding from its ``as_of`` (else from ``read_ms``, default now)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PartitionsError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PartitionsError(f"{path} is not valid JSON: {exc}") from exc
    return parse_stated(doc, now_ms() if read_ms is None else read_ms)


def admin_client(bootstrap: str, timeout_ms: int) -> Any:
    """analyze's kafka-python admin client; an unreachable broker is a :class:`PartitionsError`."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=timeout_ms,
            client_id="groupwatch-analyze",
        )
    except Exception as exc:  # noqa: BLE001 - kafka-python raises many unrelated types
        raise PartitionsError(f"cannot reach {bootstrap}: {exc}") from exc
    return admin


def broker_topics(
    bootstrap: str, timeout_ms: int = 15_000
) -> tuple[dict[str, int], dict[str, str]]:
    """Every topic's partition count, and topic id -> name, from the broker's metadata
    (kafka-python admin client; ids need a broker and client that speak Metadata v10+)."""
    admin = admin_client(bootstrap, timeout_ms)
    try:
        topics = admin.describe_topics()
    except Exception as exc:  # noqa: BLE001
        raise PartitionsError(f"cannot describe topics on {bootstrap}: {exc}") from exc
    finally:
        admin.close()
    counts: dict[str, int] = {}
    names: dict[str, str] = {}
    for t in topics:
        if not isinstance(t, dict):
            continue
        name = t.get("name", t.get("topic"))
        parts = t.get("partitions")
        if isinstance(name, str) and isinstance(parts, list) and not t.get("error_code"):
            counts[name] = len(parts)
            tid = kafka_topic_id(t.get("topic_id"))
            if tid is not None:
                names[tid] = name
    return counts, names


def kafka_topic_id(value: object) -> str | None:
    """A topic id as Kafka prints it (URL-safe Base64 of its 16 bytes, unpadded), from the
    forms clients hand it over in; ``None`` for none or the all-zero id."""
    import base64
    import uuid

    raw: bytes | None = None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, bytes | bytearray) and len(value) == 16:
        raw = bytes(value)
    elif isinstance(value, str):
        try:
            raw = uuid.UUID(value).bytes
        except ValueError:
            return value or None
    if raw is None or not any(raw):
        return None
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
