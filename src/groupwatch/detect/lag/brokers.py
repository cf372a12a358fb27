"""The brokers' answers for ``groupwatch analyze``: log start and end offsets (``listOffsets``
earliest and latest) and the time of the oldest record a group has not consumed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from groupwatch.detect.lag.estimate import passing_points
from groupwatch.detect.lag.model import EndOffset
from groupwatch.detect.partitions import PartitionsError, admin_client, now_ms

TP = tuple[str, int]


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


def histories(
    ends: Iterable[EndOffset], committed: Mapping[TP, int], times: Mapping[TP, tuple[int, int]]
) -> dict[TP, list[EndOffset]]:
    """One answer per partition as an end-offset history: with the time the oldest waiting
    record was written, the log end's passing of the committed offset is known exactly (the
    end was at the record's offset, then one past it, at that time)."""
    out: dict[TP, list[EndOffset]] = {}
    for e in ends:
        key = (e.topic, e.partition)
        first, c = times.get(key), committed.get(key)
        before = [] if first is None or c is None else passing_points(e, c, first)
        out[key] = [*before, e]
    return out
