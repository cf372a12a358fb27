"""Partition counts for the rules: from a JSON file, or from the broker.

Without either, the engine infers counts from what the group's own records show (see
``docs/findings.md`` for what inference cannot see).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groupwatch.errors import GroupwatchError


class PartitionsError(GroupwatchError, ValueError):
    """The partition counts could not be read."""


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


def load_counts_file(path: str | Path) -> dict[str, int]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PartitionsError(f"cannot read {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PartitionsError(f"{path} is not valid JSON: {exc}") from exc
    return parse_counts(doc)


def broker_topics(
    bootstrap: str, timeout_ms: int = 15_000
) -> tuple[dict[str, int], dict[str, str]]:
    """Every topic's partition count, and topic id -> name, from the broker's metadata
    (kafka-python admin client; ids need a broker and client that speak Metadata v10+)."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            request_timeout_ms=timeout_ms,
            client_id="groupwatch-analyze",
        )
    except Exception as exc:  # noqa: BLE001 - kafka-python raises many unrelated types
        raise PartitionsError(f"cannot reach {bootstrap}: {exc}") from exc
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
