"""What ``groupwatch analyze --bootstrap-server`` asks the brokers, with kafka-python: every
topic's partition count and id, the groups' states and members, the partitions' log start and
end offsets, and the first record at a committed offset.

The only module of the command's that talks to a broker: the engine (``detect``) judges what
these return and does no I/O of its own, so the streaming job (which asks through Spark's JVM,
``groupwatch.spark``) and ``analyze`` share its rules.  A broker that cannot be reached or
asked is a :class:`~groupwatch.detect.partitions.PartitionsError`, which the command reports
and goes on without the brokers' view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from groupwatch.detect.lag.model import EndOffset
from groupwatch.detect.partitions import PartitionsError, now_ms

TP = tuple[str, int]


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


def describe_groups(
    bootstrap: str, groups: Sequence[str], timeout_ms: int = 15_000
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each group's state and members as the brokers describe them (DescribeGroups)."""
    admin = admin_client(bootstrap, timeout_ms)
    try:
        described: Mapping[str, Any] = admin.describe_groups(list(groups))
    except Exception as exc:  # noqa: BLE001
        raise PartitionsError(f"cannot describe groups on {bootstrap}: {exc}") from exc
    finally:
        admin.close()
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for group, doc in described.items():
        if not isinstance(doc, Mapping) or doc.get("error"):
            continue
        state = doc.get("group_state", doc.get("state"))
        if not isinstance(state, str):
            continue
        members = tuple(
            sorted(
                f"{m.get('member_id')} ({m.get('client_id')})"
                for m in doc.get("members") or ()
                if isinstance(m, Mapping)
            )
        )
        out[str(group)] = (state, members)
    return out


def end_offsets(
    bootstrap: str, partitions: Iterable[TP], timeout_ms: int = 15_000
) -> list[EndOffset]:
    """Start and end offsets of the partitions that exist (a deleted topic's are left out)."""
    from kafka import TopicPartition
    from kafka.admin import OffsetSpec

    wanted = sorted(set(partitions))
    if not wanted:
        return []
    admin = admin_client(bootstrap, timeout_ms)
    try:
        known = {
            t.get("topic", t.get("name"))
            for t in admin.describe_topics()
            if not t.get("error_code")
        }
        tps = [TopicPartition(t, p) for t, p in wanted if t in known]
        latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
        observed = now_ms()
        earliest = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    except PartitionsError:
        raise
    except Exception as exc:  # noqa: BLE001 - kafka-python raises many unrelated types
        raise PartitionsError(f"cannot list offsets on {bootstrap}: {exc}") from exc
    finally:
        admin.close()
    return [
        EndOffset(
            tp.topic, tp.partition, int(earliest[tp].offset), int(latest[tp].offset), observed
        )
        for tp in tps
        if tp in latest and tp in earliest
    ]


def record_times(
    bootstrap: str, positions: Mapping[TP, int], timeout_ms: int = 10_000
) -> dict[TP, tuple[int, int]]:
    """(offset, timestamp ms) of the first record at or after each position: the oldest record
    a group has not consumed (a later one if retention removed it)."""
    from kafka import KafkaConsumer, TopicPartition

    if not positions:
        return {}
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        group_id=None,
        client_id="groupwatch-analyze",
        request_timeout_ms=max(timeout_ms + 1000, 30_000),
        max_poll_records=len(positions) * 4,
    )
    out: dict[TP, tuple[int, int]] = {}
    try:
        tps = {TopicPartition(t, p): o for (t, p), o in positions.items()}
        consumer.assign(list(tps))
        for tp, offset in tps.items():
            consumer.seek(tp, offset)
        deadline = now_ms() + timeout_ms
        while len(out) < len(tps) and now_ms() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                key = (tp.topic, tp.partition)
                if key not in out and records:
                    out[key] = (int(records[0].offset), int(records[0].timestamp))
                    consumer.pause(tp)
    except Exception as exc:  # noqa: BLE001
        raise PartitionsError(f"cannot read records on {bootstrap}: {exc}") from exc
    finally:
        consumer.close()
    return out
