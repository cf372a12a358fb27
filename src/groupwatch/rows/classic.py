"""``group_snapshots`` and ``member_assignments`` rows of a classic group's group-metadata
record (type 2), its members as the engine converted them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from groupwatch.detect.events import member_from_record
from groupwatch.detect.findings import tp_list
from groupwatch.detect.model import MemberState
from groupwatch.protocol import DecodedRecord, GroupMember, GroupMetadataValue
from groupwatch.protocol.records import member_has
from groupwatch.tables import MemberRow, SnapshotRow, timestamp

#: The ``group_type`` of this module's rows.
GROUP_TYPE = "classic"


def value_of(rec: DecodedRecord) -> GroupMetadataValue | None:
    """The record's group-metadata value; ``None`` for a tombstone or a value that failed."""
    return rec.value if isinstance(rec.value, GroupMetadataValue) else None


def decoded_members(rec: DecodedRecord) -> tuple[GroupMember, ...]:
    """The record's members as the decoder gave them (none for a tombstone)."""
    value = value_of(rec)
    if value is None:
        return ()
    return rec.members or tuple(GroupMember(m) for m in value.members)


def engine_members(
    rec: DecodedRecord,
    decoded: Sequence[GroupMember],
    converted: Sequence[MemberState] | None,
) -> Sequence[MemberState]:
    """The members as the engine saw them: its own conversion (``converted``, from its report)
    when it judged the record as a snapshot, else converted here by the same rule (a record
    the engine could not take as one still has its member rows)."""
    if converted is not None and len(converted) == len(decoded):
        return converted
    value = value_of(rec)
    protocol = None if value is None else value.protocol
    return [member_from_record(m, protocol) for m in decoded]


def snapshot_row(
    group: str, rec: DecodedRecord, member_count: int, source: Mapping[str, Any]
) -> SnapshotRow:
    """The record's ``group_snapshots`` row; ``source``: the record's source columns."""
    value = value_of(rec)
    return SnapshotRow(
        group=group,
        group_type=GROUP_TYPE,
        generation=None if value is None else value.generation,
        protocol_type=None if value is None else value.protocol_type,
        protocol=None if value is None else value.protocol,
        leader=None if value is None else value.leader,
        current_state_timestamp=None if value is None else timestamp(value.current_state_timestamp),
        member_count=None if value is None else member_count,
        record_version=rec.value_version if value is not None else None,
        tombstone=rec.tombstone,
        decode_error=None if rec.error is None else rec.error.kind,
        **source,
    )


def member_rows(
    snapshot: SnapshotRow,
    decoded: Sequence[GroupMember],
    members: Sequence[MemberState],
    source: Mapping[str, Any],
) -> list[MemberRow]:
    """One ``member_assignments`` row per member: claim, claim generation and assignment as the
    engine defines them (``members``), timeouts from the decoded bytes (``decoded``)."""
    version = snapshot.record_version
    with_rebalance_timeout = version is not None and member_has("rebalance_timeout", version)
    rows: list[MemberRow] = []
    for member, state in zip(decoded, members, strict=True):
        meta = member.metadata
        rows.append(
            MemberRow(
                group=snapshot.group,
                group_type=GROUP_TYPE,
                generation=snapshot.generation,
                member_id=state.member_id,
                group_instance_id=state.group_instance_id,
                client_id=state.client_id,
                client_host=state.client_host,
                rebalance_timeout=meta.rebalance_timeout if with_rebalance_timeout else None,
                session_timeout=meta.session_timeout,
                subscription_version=state.subscription_version,
                topics=sorted(state.topics),
                claim=tp_list(state.claim),
                claim_generation=state.claim_generation,
                assignment=tp_list(state.assigned),
                user_data_kind=state.user_data_kind,
                subscription_error=state.subscription_error,
                assignment_error=state.assignment_error,
                **source,
            )
        )
    return rows
