"""Per-group state and the pure ``step`` that advances it one record at a time.

The state is an explicit, JSON-serialisable, bounded value, so the streaming job can keep it in
Spark's stateful operator (one per group) and the command line can keep it in a dict: both call
the same :func:`step`, in event time, so replaying a backlog gives the findings watching live
gives, however the records are batched.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from groupwatch.assignor import TopicPartition
from groupwatch.detect import confirm, topic_counts
from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.confirm import Pending
from groupwatch.detect.findings import Finding
from groupwatch.detect.history import AssignedGeneration, writes_no_generation
from groupwatch.detect.model import (
    BrokerView,
    Event,
    GroupSnapshot,
    OffsetCommit,
    Tick,
    Tombstone,
    UndecodableRecord,
)
from groupwatch.detect.modern import judge
from groupwatch.detect.modern.model import ModernRecord
from groupwatch.detect.modern.replay import learn_names
from groupwatch.detect.modern.state import ModernState
from groupwatch.detect.rules import snapshot_findings
from groupwatch.detect.stuck import StuckWatch, on_commit, on_snapshot, on_view

STATE_VERSION = 4
#: Older state versions this one reads (what they lack starts empty).
_READS = (1, 2, 3, STATE_VERSION)
#: Kafka's ``Uuid.ZERO_UUID`` as it prints it: a commit that carries no topic id.
_ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class GroupState:
    """Everything the engine remembers about one group between records.

    Bounded: ``recent`` holds at most ``storm_generations + 1`` entries, ``inferred_partitions``
    at most ``max_inferred_topics`` topics, ``emitted`` at most ``max_remembered_findings`` ids.
    """

    group: str
    #: The last generation seen (``None`` before the first snapshot and after a tombstone).
    last_generation: int | None = None
    #: (generation, event time ms) of recent distinct generations, oldest first.
    recent: tuple[tuple[int, int], ...] = ()
    #: A rebalance storm is being reported (cleared when the window calms down).
    storm_active: bool = False
    #: Fingerprint of the last snapshot's members, subscriptions and assignment.
    churn_fingerprint: str | None = None
    #: How many consecutive generations had that fingerprint.
    churn_count: int = 0
    churn_reported: bool = False
    #: topic -> highest partition index seen + 1 (claims, assignments, offset commits).
    inferred_partitions: Mapping[str, int] = field(default_factory=dict)
    #: Ids of recently emitted findings, oldest first: a finding is never raised twice.
    emitted: tuple[str, ...] = ()
    #: Transient findings awaiting confirmation (:mod:`groupwatch.detect.confirm`).
    pending: tuple[Pending, ...] = ()
    #: The group was seen handing over partitions in two rounds (cooperatively).
    withholding_seen: bool = False
    #: A KIP-848, streams or share group's state (records 3-23), if it has any.
    modern: ModernState | None = None
    #: topic id -> name from the group's v4 offset commits (modern assignments are by id).
    topic_names: Mapping[str, str] = field(default_factory=dict)
    #: A classic group's last completed generation and commits, for ``rebalance_stuck``.
    stuck: StuckWatch = field(default_factory=StuckWatch)
    #: topic -> event time (ms) the group's records last showed it deleted or re-created:
    #: counts observed before then no longer hold (:mod:`groupwatch.detect.topic_counts`).
    topics_gone: Mapping[str, int] = field(default_factory=dict)
    #: topic -> the generation since which the group subscribes to it while it is missing.
    missing_since: Mapping[str, int] = field(default_factory=dict)
    #: The generation of the last completed record (one with assignments, not awaiting them).
    completed_generation: int | None = None
    #: That record's members and assignment, and those of the completed generation before it:
    #: what claims without a generation are checked against (a record repeating the last
    #: completed generation against the one before).  Kept only for groups whose members write
    #: claims without a generation, the only claims they are used for.
    assigned: AssignedGeneration | None = None
    assigned_before: AssignedGeneration | None = None

    @property
    def confirm_until(self) -> tuple[int, int | None] | None:
        """(earliest deadline ms, its partition) of what stream time alone raises."""
        timed = [(p.deadline_ms, p.partition) for p in self.pending if p.deadline_ms is not None]
        return min(timed, key=lambda d: d[0]) if timed else None

    @property
    def pending_until(self) -> tuple[int, int | None] | None:
        """(earliest deadline ms, its partition) of everything awaiting confirmation: what
        stream time raises, and modern-group violations a quiescent point raises from then."""
        timed = self.confirm_until
        modern = None if self.modern is None else self.modern.pending_deadline
        if modern is not None and (timed is None or modern < timed[0]):
            assert self.modern is not None
            return (modern, self.modern.partition)
        return timed

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``json.dumps`` it to store the state as a string)."""
        doc: dict[str, Any] = {
            "v": STATE_VERSION,
            "group": self.group,
            "last_generation": self.last_generation,
            "recent": [list(r) for r in self.recent],
            "storm_active": self.storm_active,
            "churn_fingerprint": self.churn_fingerprint,
            "churn_count": self.churn_count,
            "churn_reported": self.churn_reported,
            "inferred_partitions": dict(sorted(self.inferred_partitions.items())),
            "emitted": list(self.emitted),
            "pending": [p.to_json() for p in self.pending],
            "withholding_seen": self.withholding_seen,
            "modern": None if self.modern is None else self.modern.to_json(),
            "topic_names": dict(sorted(self.topic_names.items())),
            "stuck": self.stuck.to_json(),
            "topics_gone": dict(sorted(self.topics_gone.items())),
            "missing_since": dict(sorted(self.missing_since.items())),
        }
        # Only when kept: a state without them reads as before, in either direction.
        if self.completed_generation is not None:
            doc["completed_generation"] = self.completed_generation
        if self.assigned is not None:
            doc["assigned"] = self.assigned.to_json()
        if self.assigned_before is not None:
            doc["assigned_before"] = self.assigned_before.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> GroupState:
        if doc.get("v") not in _READS:
            raise ValueError(f"unknown group state version {doc.get('v')!r}")
        return cls(
            group=str(doc["group"]),
            last_generation=doc.get("last_generation"),
            recent=tuple((int(g), int(t)) for g, t in doc.get("recent", ())),
            storm_active=bool(doc.get("storm_active", False)),
            churn_fingerprint=doc.get("churn_fingerprint"),
            churn_count=int(doc.get("churn_count", 0)),
            churn_reported=bool(doc.get("churn_reported", False)),
            inferred_partitions={str(k): int(v) for k, v in doc["inferred_partitions"].items()},
            emitted=tuple(str(i) for i in doc.get("emitted", ())),
            pending=tuple(Pending.from_json(p) for p in doc.get("pending", ())),
            withholding_seen=bool(doc.get("withholding_seen", False)),
            modern=None if doc.get("modern") is None else ModernState.from_json(doc["modern"]),
            topic_names={str(k): str(v) for k, v in (doc.get("topic_names") or {}).items()},
            stuck=StuckWatch.from_json(doc.get("stuck") or {}),
            topics_gone={str(k): int(v) for k, v in (doc.get("topics_gone") or {}).items()},
            missing_since={str(k): int(v) for k, v in (doc.get("missing_since") or {}).items()},
            completed_generation=doc.get("completed_generation"),
            assigned=_assigned(doc.get("assigned")),
            assigned_before=_assigned(doc.get("assigned_before")),
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> GroupState:
        return cls.from_json(json.loads(text))


def _assigned(doc: Mapping[str, Any] | None) -> AssignedGeneration | None:
    return None if doc is None else AssignedGeneration.from_json(doc)


def _infer(
    known: Mapping[str, int], partitions: Iterable[TopicPartition], limit: int
) -> Mapping[str, int]:
    out: dict[str, int] | None = None
    for topic, partition in partitions:
        if partition < 0:
            continue
        current = (out if out is not None else known).get(topic)
        if current is not None and current > partition:
            continue
        if current is None and len(out if out is not None else known) >= limit:
            continue
        if out is None:
            out = dict(known)
        out[topic] = partition + 1
    return known if out is None else out


def partition_counts(
    state: GroupState, config: DetectorConfig, time_ms: int | None = None
) -> tuple[dict[str, int], dict[str, str]]:
    """The counts that held at ``time_ms`` and their sources (:func:`topic_counts.counts_at`)."""
    return topic_counts.counts_at(state.inferred_partitions, state.topics_gone, config, time_ms)


def _bounded(known: Mapping[str, int], topic: str, value: int, limit: int) -> Mapping[str, int]:
    if known.get(topic) == value or (topic not in known and len(known) >= limit):
        return known
    return {**known, topic: value}


def _commit(state: GroupState, event: OffsetCommit, cfg: DetectorConfig) -> GroupState:
    """An offset commit: a lower bound on its topic's count, and its topic id.

    A commit under a new topic id for a known name would show a re-created topic even with no
    generation in between, but the job's Python stage does not see every commit (the first
    of a batch's commits per partition and a few newest ones, and only for groups with other
    records in the batch): ``analyze`` and the job would disagree, so a re-creation counts
    only when a generation shows the topic missing (:func:`_missing`).
    """
    tid = event.topic_id
    known_id = bool(tid) and tid != _ZERO_TOPIC_ID
    if event.time_ms is not None or event.topic not in state.topics_gone:
        # A commit of unknown time (the job's hint of earlier commits) cannot be placed after
        # a deletion: it says nothing about the topic that exists now.
        inferred = _infer(
            state.inferred_partitions,
            [TopicPartition(event.topic, event.partition)],
            cfg.max_inferred_topics,
        )
        if inferred is not state.inferred_partitions:
            state = replace(state, inferred_partitions=inferred)
    if tid is not None and known_id and state.topic_names.get(tid) != event.topic:
        names = dict(state.topic_names)
        if tid in names or len(names) < cfg.max_inferred_topics:
            names[tid] = event.topic
            state = replace(state, topic_names=names)
        if state.modern is not None:
            modern = learn_names(state.modern, ((tid, event.topic),), cfg.max_inferred_topics)
            state = replace(state, modern=modern)
    return state


def _missing(
    state: GroupState, snap: GroupSnapshot, cfg: DetectorConfig
) -> tuple[GroupState, dict[str, topic_counts.Missing]]:
    """Which subscribed topics the snapshot's leader found no partition of, and the state's
    record of them: a topic newly missing is gone from this time on (its count is forgotten);
    an episode ends when the topic is assigned again or no longer subscribed."""
    if snap.protocol_type != "consumer" or snap.awaiting_assignment:
        return state, {}
    missing = topic_counts.missing_topics(
        snap,
        state.inferred_partitions,
        state.topics_gone,
        state.missing_since,
        cfg,
        state.withholding_seen,
    )
    since = {t: m.since_generation for t, m in missing.items()}
    gone = state.topics_gone
    inferred = state.inferred_partitions
    for topic in missing:
        if topic not in state.missing_since and snap.time_ms is not None:
            gone = _bounded(gone, topic, snap.time_ms, cfg.max_inferred_topics)
        if topic in inferred:
            inferred = {k: v for k, v in inferred.items() if k != topic}
    changed = gone is not state.topics_gone or inferred is not state.inferred_partitions
    if changed or since != state.missing_since:
        state = replace(state, missing_since=since, topics_gone=gone, inferred_partitions=inferred)
    return state, missing


def _fingerprint(snap: GroupSnapshot) -> str:
    rows = sorted(
        (m.member_id, sorted(set(m.topics)), sorted(set(m.assigned))) for m in snap.members
    )
    text = json.dumps([snap.protocol, rows], separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _cross_snapshot(
    state: GroupState, snap: GroupSnapshot, config: DetectorConfig
) -> tuple[GroupState, list[Finding]]:
    out: list[Finding] = []
    last = state.last_generation
    new_generation = last is None or snap.generation != last
    if last is not None and snap.generation < last:
        out.append(
            Finding(
                kind="generation_regression",
                group=snap.group,
                generation=snap.generation,
                detail=f"generation {snap.generation} follows generation {last} with no "
                "tombstone in between",
                source=snap.source,
                evidence={"previous_generation": last},
            )
        )
    recent = state.recent
    storm_active = state.storm_active
    if new_generation and snap.time_ms is not None:
        now = snap.time_ms
        window = [(g, t) for g, t in recent if now - t < config.storm_window_ms]
        window.append((snap.generation, now))
        recent = tuple(window[-(config.storm_generations + 1) :])
        if len(recent) > config.storm_generations:
            if not storm_active:
                out.append(
                    Finding(
                        kind="rebalance_storm",
                        group=snap.group,
                        generation=snap.generation,
                        detail=f"more than {config.storm_generations} generations within "
                        f"{config.storm_window_ms / 1000:g} s (generations "
                        f"{recent[0][0]}..{snap.generation})",
                        source=snap.source,
                        evidence={
                            "generations": [g for g, _ in recent],
                            "first_time_ms": recent[0][1],
                            "last_time_ms": now,
                            "threshold": config.storm_generations,
                            "window_ms": config.storm_window_ms,
                        },
                    )
                )
            storm_active = True
        else:
            storm_active = False
    fp, count, reported = state.churn_fingerprint, state.churn_count, state.churn_reported
    if new_generation:
        if snap.protocol_type == "consumer" and snap.members:
            current = _fingerprint(snap)
            if current == fp:
                count += 1
            else:
                fp, count, reported = current, 1, False
            if count >= config.churn_generations and not reported:
                reported = True
                out.append(
                    Finding(
                        kind="generation_churn_stable_membership",
                        group=snap.group,
                        generation=snap.generation,
                        detail=f"{count} consecutive generations (up to {snap.generation}) with "
                        f"the same {len(snap.members)} members, subscriptions and assignment",
                        source=snap.source,
                        members=tuple(m.member_id for m in snap.members),
                        evidence={"consecutive_generations": count},
                    )
                )
        else:
            fp, count, reported = None, 0, False
    new_state = replace(
        state,
        last_generation=snap.generation,
        recent=recent,
        storm_active=storm_active,
        churn_fingerprint=fp,
        churn_count=count,
        churn_reported=reported,
    )
    return new_state, out


def _with_stuck(state: GroupState, watch: StuckWatch) -> GroupState:
    """``replace(state, stuck=watch)`` at a fraction of its cost: nearly every commit moves
    the group's last commit time, and ``dataclasses.replace`` re-runs every field's handling
    (it doubled the cost of a commit's whole step).  No field of ``GroupState`` is derived
    from another, so copying the fields is the same value."""
    new = object.__new__(GroupState)
    new.__dict__.update(state.__dict__)
    new.__dict__["stuck"] = watch
    return new


def _remember(
    state: GroupState, findings: list[Finding], config: DetectorConfig
) -> tuple[GroupState, list[Finding]]:
    if not findings:
        return state, findings
    seen = set(state.emitted)
    fresh: list[Finding] = []
    ids = list(state.emitted)
    for f in findings:
        fid = f.finding_id
        if fid in seen:
            continue
        seen.add(fid)
        ids.append(fid)
        fresh.append(f)
    if not fresh:
        return state, fresh
    return replace(state, emitted=tuple(ids[-config.max_remembered_findings :])), fresh


def step(
    state: GroupState | None, event: Event, config: DetectorConfig | None = None
) -> tuple[GroupState, list[Finding]]:
    """Advance ``state`` (``None`` = a group never seen) by one record of that group.

    Pure: the result depends only on the arguments.  Findings come out in a stable order.
    """
    cfg = config or DetectorConfig()
    if state is None:
        state = GroupState(group=event.group)
    elif state.group != event.group:
        raise ValueError(f"event of group {event.group!r} given to the state of {state.group!r}")
    # Stream time first: whatever awaited confirmation past this moment is raised before the
    # record is applied, as it would have been had the group been looked at just before.
    # The brokers' view is timed by the wall clock of the question: it moves no stream clock.
    clock = None if isinstance(event, BrokerView) else event.time_ms
    partition = event.partition if isinstance(event, Tick) else event.source.partition
    pending, expired = confirm.expire(state.pending, clock, partition)
    if expired:
        state = replace(state, pending=pending)
    state, findings = _apply(state, event, cfg)
    return _remember(state, expired + findings, cfg)


def _apply(
    state: GroupState, event: Event, cfg: DetectorConfig
) -> tuple[GroupState, list[Finding]]:
    if isinstance(event, Tick):
        if event.quiescent and state.modern is not None:
            modern, found = judge.quiesce(state.group, state.modern, event.time_ms, cfg)
            return replace(state, modern=modern), found
        return state, []
    if isinstance(event, BrokerView):
        if state.modern is not None:
            # KIP-848 groups reconcile member by member: judged by the modern checks.
            return state, []
        watch, found = on_view(state.stuck, event, cfg)
        return replace(state, stuck=watch), found
    if isinstance(event, ModernRecord):
        modern = judge.on_record(state.modern, event, cfg)
        if state.topic_names:
            known = tuple(state.topic_names.items())
            modern = learn_names(modern, known, cfg.max_inferred_topics)
        return replace(state, modern=modern), []
    if isinstance(event, OffsetCommit):
        when = event.time_ms if event.time_ms is not None else event.committed_ms
        watch = on_commit(state.stuck, when)
        if watch is not state.stuck:
            state = _with_stuck(state, watch)
        return _commit(state, event, cfg), []
    if isinstance(event, Tombstone):
        # A classic group's end; its modern records (an upgrade) live on.
        return (
            GroupState(
                group=state.group,
                inferred_partitions=state.inferred_partitions,
                modern=state.modern,
                topic_names=state.topic_names,
                topics_gone=state.topics_gone,
            ),
            [],
        )
    if isinstance(event, UndecodableRecord):
        src = event.source
        finding = Finding(
            kind="decode_error",
            group=event.group,
            generation=None,
            detail=f"record at {src.topic}/{src.partition}@{src.offset} did not decode: "
            f"{event.error_kind}" + (f" at {event.field_path}" if event.field_path else ""),
            source=src,
            evidence={
                "error_kind": event.error_kind,
                "field_path": event.field_path,
                "byte_offset": event.byte_offset,
                "message": event.message,
            },
            id_extra=f"{src.topic}/{src.partition}@{src.offset}",
        )
        return state, [finding]
    snap = event
    state, missing = _missing(state, snap, cfg)
    inferred = _infer(
        state.inferred_partitions,
        (
            tp
            for m in snap.members
            for tps in (m.claim, m.assigned)
            for tp in tps
            if tp[0] not in missing  # old claims of a deleted topic count nothing anew
        ),
        cfg.max_inferred_topics,
    )
    if inferred is not state.inferred_partitions:
        state = replace(state, inferred_partitions=inferred)
    counts, sources = partition_counts(state, cfg, snap.time_ms)
    for topic in missing:  # the leader had no such topic: nothing of it can be unassigned
        counts.pop(topic, None)
        sources.pop(topic, None)
    repeated = state.completed_generation == snap.generation
    previous = state.assigned_before if repeated else state.assigned
    if previous is not None and (
        previous.generation >= snap.generation
        or (not repeated and previous.generation != state.completed_generation)
    ):
        previous = None  # not the last completed generation: it is no guide
    found = snapshot_findings(
        snap, cfg, counts, sources, state.withholding_seen, missing, previous, repeated
    )
    if not snap.awaiting_assignment:
        kept = (
            AssignedGeneration.of_snapshot(snap, cfg.max_inferred_topics)
            if any(writes_no_generation(m) for m in snap.members)
            else None
        )
        state = replace(
            state, completed_generation=snap.generation, assigned=kept, assigned_before=previous
        )
    now = [f for f in found if f.kind not in confirm.TRANSIENT_KINDS]
    held = [f for f in found if f.kind in confirm.TRANSIENT_KINDS]
    outcome = confirm.judge(state.pending, snap, held, cfg.confirm_after_ms, state.withholding_seen)
    state = replace(state, pending=outcome.pending, withholding_seen=outcome.withholding_seen)
    state, cross = _cross_snapshot(state, snap, cfg)
    stuck: list[Finding] = []
    if state.modern is None:
        watch, stuck = on_snapshot(state.stuck, snap, cfg)
        state = replace(state, stuck=watch)
    return state, stuck + cross + outcome.raised + now
