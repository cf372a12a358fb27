"""Apply one modern record to a group's state, as the coordinator's replay would, and report
what the record itself did wrong: a handover out of order, an epoch that went back.

The coordinator refuses to load a log where a partition gets a new owner while still owned
("Cannot set the epoch of ... because the partition is still owned at epoch ..."); these checks
say the same from outside, with the member, the partition and the epochs.
"""

from __future__ import annotations

from dataclasses import replace

from groupwatch.assignor import TopicPartition
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.modern.model import (
    STATIC_AWAY_EPOCH,
    Current,
    Epoch,
    GroupType,
    MemberMetadata,
    ModernRecord,
    RecordRole,
    RegexTopics,
    Slot,
    Target,
    TopicNames,
)
from groupwatch.detect.modern.state import Holder, Member, ModernState, held, with_member

#: KAFKA-19974 (an UNREVOKED member's epoch bumped while it still held partitions) was fixed in
#: Apache Kafka 4.2.0: older brokers are known to hand a partition over at an unchanged epoch.
EPOCH_REUSE_FIXED_IN = (4, 2, 0)


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    parts = []
    for piece in text.split("-")[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts) or None


def known_epoch_reuse(config: DetectorConfig) -> bool:
    """Whether the configured broker version is one known to reuse an epoch on handover."""
    version = _version(config.broker_version)
    return version is not None and version < EPOCH_REUSE_FIXED_IN


def _regression(
    state: ModernState, rec: ModernRecord, what: str, before: int, after: int, member: str | None
) -> Finding:
    return Finding(
        kind="epoch_regression",
        group=rec.group,
        generation=after,
        detail=f"{what} went from {before} to {after} with no tombstone in between",
        source=rec.source,
        member=member,
        members=() if member is None else (member,),
        evidence={"what": what, "before": before, "after": after},
        id_extra=f"{what}:{before}->{after}",
    )


def _epochs(state: ModernState, rec: ModernRecord, value: Epoch | None) -> ModernState:
    group_epoch = rec.role is RecordRole.GROUP_EPOCH
    ge = (None if value is None else value.epoch) if group_epoch else state.group_epoch
    ae = state.assignment_epoch if group_epoch else (None if value is None else value.epoch)
    behind = state.epoch_behind_since_ms
    if ge is None or ae is None or ge <= ae:
        behind = None
    elif behind is None:
        behind = rec.time_ms
    return replace(state, group_epoch=ge, assignment_epoch=ae, epoch_behind_since_ms=behind)


def _handover(
    kind: str,
    rec: ModernRecord,
    member_id: str,
    after: Current,
    previous: Holder,
    slot: Slot,
    topic: str,
    detail: str,
    evidence: dict[str, object],
) -> Finding:
    """A finding about ``member_id`` receiving ``slot`` from ``previous``."""
    return Finding(
        kind=kind,
        group=rec.group,
        generation=after.member_epoch,
        detail=f"member {member_id} received {topic}-{slot[1]} at epoch {after.member_epoch}"
        + detail,
        source=rec.source,
        topic=topic,
        partition=slot[1],
        member=member_id,
        members=(previous.member_id, member_id),
        partitions=(TopicPartition(topic, slot[1]),),
        evidence=evidence,
    )


def _handovers(
    state: ModernState,
    rec: ModernRecord,
    member_id: str,
    before: Current | None,
    after: Current,
    config: DetectorConfig,
) -> list[Finding]:
    """Partitions ``after`` adds: was the previous holder done with them, at a lower epoch?"""
    out: list[Finding] = []
    member = state.members.get(member_id)
    instance = member.meta.instance_id if member and member.meta else None
    known = known_epoch_reuse(config)
    for slot in sorted(held(after) - held(before)):
        previous = state.holders.get(slot)
        if previous is None or previous.member_id == member_id:
            continue
        topic = state.name_of(slot[0], config.topic_names) or slot[0]
        facts = {
            "topic_id": slot[0],
            "member_epoch": after.member_epoch,
            "previous_holder": previous.member_id,
            "previous_epoch": previous.epoch,
        }

        other = state.members.get(previous.member_id)
        if other is not None and other.current is not None and slot in held(other.current):
            still = other.current.member_epoch
            detail = f" while {previous.member_id}'s latest record (epoch {still}) still holds it"
            out.append(
                _handover(
                    "handover_while_held",
                    rec,
                    member_id,
                    after,
                    previous,
                    slot,
                    topic,
                    detail,
                    {**facts, "holder_current_epoch": still},
                )
            )
        replaced_static = instance is not None and previous.instance_id == instance
        if (
            after.member_epoch >= 0
            and previous.epoch >= 0
            and after.member_epoch <= previous.epoch
            and not replaced_static
        ):
            kind = "handover_epoch_not_increased_known" if known else "handover_epoch_not_increased"
            detail = (
                f", not above epoch {previous.epoch} at which {previous.member_id} last held it"
            )
            facts = {**facts, "broker_version": config.broker_version}
            out.append(_handover(kind, rec, member_id, after, previous, slot, topic, detail, facts))
    return out


def _current(
    state: ModernState, rec: ModernRecord, value: Current | None, config: DetectorConfig
) -> tuple[ModernState, list[Finding]]:
    assert rec.subkey is not None
    mid = rec.subkey
    member = state.members.get(mid, Member())
    before = member.current
    if value is None:
        return with_member(state, mid, replace(member, current=None, state_since_ms=None)), []
    found: list[Finding] = []
    if (
        before is not None
        and before.member_epoch >= 0
        and 0 <= value.member_epoch < before.member_epoch
    ):
        found.append(
            _regression(
                state, rec, f"member {mid}'s epoch", before.member_epoch, value.member_epoch, mid
            )
        )
    if state.group_type is GroupType.CONSUMER:
        found += _handovers(state, rec, mid, before, value, config)
    away = value.member_epoch == STATIC_AWAY_EPOCH
    changed = (
        before is None
        or before.state != value.state
        or (before.member_epoch == STATIC_AWAY_EPOCH) != away
    )
    since = rec.time_ms if changed else member.state_since_ms
    state = with_member(state, mid, replace(member, current=value, state_since_ms=since))
    if state.group_type is not GroupType.SHARE:
        holders = dict(state.holders)
        instance = member.meta.instance_id if member.meta else None
        for slot in held(value):
            old = holders.get(slot)
            # An away member (-2) keeps its partitions at the epoch it last had.
            epoch = (
                value.member_epoch
                if not away
                else (old.epoch if old is not None and old.member_id == mid else -1)
            )
            holders[slot] = Holder(mid, epoch, instance)
        state = replace(state, holders=holders)
    return state, found


def apply(
    state: ModernState | None, rec: ModernRecord, config: DetectorConfig
) -> tuple[ModernState, list[Finding]]:
    """The group's state after ``rec``, and the findings the record itself raises."""
    if state is None or state.group_type is not rec.group_type:
        kept = {} if state is None else state.topic_names
        state = ModernState(group_type=rec.group_type, topic_names=kept)
    value = rec.value
    role = rec.role
    if role in (RecordRole.GROUP_EPOCH, RecordRole.ASSIGNMENT_EPOCH):
        assert value is None or isinstance(value, Epoch)
        if value is None and role is RecordRole.GROUP_EPOCH:
            # The group is gone (deleted, or converted to a classic group): start over.
            return ModernState(group_type=rec.group_type, topic_names=state.topic_names), []
        found = []
        old = state.group_epoch if role is RecordRole.GROUP_EPOCH else state.assignment_epoch
        if value is not None and old is not None and value.epoch < old:
            what = "the group epoch" if role is RecordRole.GROUP_EPOCH else "the assignment epoch"
            found.append(_regression(state, rec, what, old, value.epoch, None))
        return _epochs(state, rec, value), found
    if role is RecordRole.TOPIC_NAMES:
        if isinstance(value, TopicNames):
            return learn_names(state, value.names, config.max_inferred_topics), []
        return state, []
    if role is RecordRole.REGEX:
        assert rec.subkey is not None
        regexes = dict(state.regexes)
        if isinstance(value, RegexTopics):
            regexes[rec.subkey] = value.topics
        else:
            regexes.pop(rec.subkey, None)
        return replace(state, regexes=regexes), []
    if role is RecordRole.CURRENT:
        assert value is None or isinstance(value, Current)
        return _current(state, rec, value, config)
    if role in (RecordRole.MEMBER, RecordRole.TARGET):
        assert rec.subkey is not None
        member = state.members.get(rec.subkey, Member())
        if role is RecordRole.MEMBER:
            assert value is None or isinstance(value, MemberMetadata)
            member = replace(member, meta=value)
        else:
            assert value is None or isinstance(value, Target)
            member = replace(member, target=value)
        return with_member(state, rec.subkey, member), []
    return state, []


def learn_names(state: ModernState, pairs: tuple[tuple[str, str], ...], limit: int) -> ModernState:
    """``state`` knowing more topic id -> name pairs (at most ``limit`` ids in all)."""
    new = [(tid, name) for tid, name in pairs if state.topic_names.get(tid) != name]
    if not new:
        return state
    names = dict(state.topic_names)
    for tid, name in new:
        if tid in names or len(names) < limit:
            names[tid] = name
    return replace(state, topic_names=names)
