"""A share group's rows: each share partition's state after a ``__share_group_state`` record
(``share_partition_history``) and as of the batch's newest one (``share_partition_state``).

The end offset and share lag of ``share_partition_state`` are the brokers' of when the row is
written: the job's driver fills them in (``groupwatch.spark.share_ends``); the rows built here
leave them null, as ``analyze --share-state`` does without ``--bootstrap-server``.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupwatch.detect.share.state import SharePartitionKey, SharePartitionState
from groupwatch.rows.source import SourceRecord
from groupwatch.tables import ShareHistoryRow, SharePartitionRow, timestamp


def history_row(
    key: SharePartitionKey,
    state: SharePartitionState | None,
    record: SourceRecord,
    snapshot: bool,
    names: Mapping[str, str],
) -> ShareHistoryRow:
    """The partition after ``record`` (``state`` None: a tombstone removed it)."""
    base = ShareHistoryRow(
        group=key.group,
        topic=names.get(key.topic_id),
        topic_id=key.topic_id,
        partition=key.partition,
        deleted=state is None,
        snapshot=snapshot,
        observed_at=timestamp(record.timestamp_ms),
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
    )
    if state is None:
        return base
    return ShareHistoryRow(
        group=base.group,
        topic=base.topic,
        topic_id=base.topic_id,
        partition=base.partition,
        start_offset=state.start_offset,
        state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch,
        delivery_complete_count=state.delivery_complete_count,
        in_flight_records=state.in_flight_records,
        archived_records=state.archived_records,
        max_delivery_count=state.max_delivery_count,
        deleted=False,
        snapshot=snapshot,
        observed_at=base.observed_at,
        source_topic=base.source_topic,
        source_partition=base.source_partition,
        source_offset=base.source_offset,
    )


def state_row(
    state: SharePartitionState, record: SourceRecord, names: Mapping[str, str]
) -> SharePartitionRow:
    """The partition as of its newest record, ``record`` (end offset and lag left null)."""
    key = state.key
    return SharePartitionRow(
        group=key.group,
        topic=names.get(key.topic_id),
        topic_id=key.topic_id,
        partition=key.partition,
        start_offset=state.start_offset,
        state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch,
        delivery_complete_count=state.delivery_complete_count,
        in_flight_records=state.in_flight_records,
        in_flight_batches=[
            {
                "first_offset": b.first_offset,
                "last_offset": b.last_offset,
                "delivery_count": b.delivery_count,
            }
            for b in state.in_flight_batches
        ],
        archived_records=state.archived_records,
        archived_ranges=[
            {"first_offset": first, "last_offset": last} for first, last in state.archived_ranges
        ],
        max_delivery_count=state.max_delivery_count,
        records_applied=state.records_applied,
        observed_at=timestamp(state.observed_at),
        source=_source(record),
    )


def removal_row(
    key: SharePartitionKey, record: SourceRecord, names: Mapping[str, str]
) -> SharePartitionRow:
    """The partition's removal, after a tombstone (``record``): its key and no state (a null
    ``start_offset``, the table's ``removed_when``), so the MERGE deletes its row."""
    return SharePartitionRow(
        group=key.group,
        topic=names.get(key.topic_id),
        topic_id=key.topic_id,
        partition=key.partition,
        observed_at=timestamp(record.timestamp_ms),
        source=_source(record),
    )


def _source(record: SourceRecord) -> dict[str, object]:
    """The ``source`` struct of a row: where its newest record was read."""
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp_ms,
    }
