"""What is wrong with a modern group's state as it stands (the snapshot checks).

Every check reads only keys the records stated: a compacted log read from its start shows each
key's history from some point on, so a key not seen yet is *unknown*, never *empty*, and a check
that needs it is skipped rather than guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.modern.model import (
    CONSUMER_STATES,
    STATIC_AWAY_EPOCH,
    STREAMS_STATES,
    GroupType,
    MemberStates,
    Slot,
)
from groupwatch.detect.modern.state import Member, ModernState, held, is_away


@dataclass(frozen=True, slots=True)
class Violation:
    """A finding the state shows.  Time-limited kinds say when their condition began and how
    long it may last; the others are confirmed after ``modern_confirm_ms``."""

    finding: Finding
    began_ms: int | None = None
    limit_ms: int | None = None


class _Checker:
    """One evaluation of one group's state."""

    def __init__(self, group: str, state: ModernState, config: DetectorConfig) -> None:
        self.group, self.state, self.config = group, state, config
        self.out: list[Violation] = []
        self.unresolved: set[str] = set()

    # -- helpers ---------------------------------------------------------------------------
    def topic(self, topic_id: str) -> str:
        """A topic's name for people, its id when no record named it."""
        if self.state.group_type is GroupType.STREAMS:
            return topic_id  # a subtopology id: tasks have no topic ids
        return self.state.name_of(topic_id, self.config.topic_names) or topic_id

    def names(self, topic_ids: Iterable[str]) -> dict[str, str] | None:
        """id -> name of every id, or ``None`` (and the ids noted) if one has no name."""
        out: dict[str, str] = {}
        for tid in topic_ids:
            name = self.state.name_of(tid, self.config.topic_names)
            if name is None:
                self.unresolved.add(tid)
                return None
            out[tid] = name
        return out

    def add(
        self,
        kind: str,
        detail: str,
        generation: int | None,
        *,
        member: str | None = None,
        slot: Slot | None = None,
        members: Iterable[str] = (),
        slots: Iterable[Slot] = (),
        evidence: Mapping[str, Any] | None = None,
        began_ms: int | None = None,
        limit_ms: int | None = None,
    ) -> None:
        parts = tuple(sorted((self.topic(t), p) for t, p in slots))
        finding = Finding(
            kind=kind,
            group=self.group,
            generation=generation,
            detail=detail,
            source=self.state.source,
            topic=None if slot is None else self.topic(slot[0]),
            partition=None if slot is None else slot[1],
            member=member,
            members=tuple(members),
            partitions=parts or None,
            evidence={
                "group_type": self.state.group_type.value,
                "group_epoch": self.state.group_epoch,
                "assignment_epoch": self.state.assignment_epoch,
                **(
                    {"topic_id": slot[0]}
                    if slot is not None and self.state.group_type is not GroupType.STREAMS
                    else {}
                ),
                **(evidence or {}),
            },
        )
        self.out.append(Violation(finding, began_ms, limit_ms))

    def described(self, slots: Iterable[Slot]) -> str:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for t, p in sorted(slots):
            by_topic[self.topic(t)].append(p)
        return ", ".join(f"{t}{sorted(ps)}" for t, ps in sorted(by_topic.items()))

    def active(self) -> list[tuple[str, Member]]:
        return [(mid, m) for mid, m in sorted(self.state.members.items()) if m.current is not None]

    # -- checks ----------------------------------------------------------------------------
    def ownership(self) -> None:
        """One owner per partition: assigned ∪ pending revocation, across members."""
        streams = self.state.group_type is GroupType.STREAMS
        owners: dict[Slot, list[str]] = defaultdict(list)
        for mid, m in self.active():
            cur = m.current
            assert cur is not None
            for slot in held(cur):
                owners[slot].append(mid)
            if not streams:
                for slot in sorted(set(cur.assigned) & set(cur.pending)):
                    self.add(
                        "partition_assigned_and_pending",
                        f"member {mid} holds {self.described([slot])} both as assigned and "
                        "as pending revocation",
                        cur.member_epoch,
                        member=mid,
                        slot=slot,
                        members=(mid,),
                        slots=(slot,),
                        evidence={"member_epoch": cur.member_epoch, "state": cur.state},
                    )
        for slot, mids in sorted(owners.items()):
            if len(mids) < 2:
                continue
            epochs = {mid: self._current(mid).member_epoch for mid in mids}
            if streams:
                processes = {self._process(mid) for mid in mids}
                if len(processes) < 2:
                    continue
                kind = "task_active_twice"
                what = f"task {slot[0]}_{slot[1]} is active in {len(processes)} processes"
            else:
                kind = "partition_owned_twice"
                what = f"{self.described([slot])} is held by {len(mids)} members"
            self.add(
                kind,
                f"{what}: " + ", ".join(f"{m} (epoch {e})" for m, e in epochs.items()),
                max(epochs.values()),
                slot=slot,
                members=mids,
                slots=(slot,),
                evidence={
                    "member_epochs": epochs,
                    "pending": sorted(m for m in mids if slot in self._current(m).pending),
                },
            )
        if streams:
            self._active_and_standby()

    def _current(self, mid: str) -> Any:
        return self.state.members[mid].current

    def _process(self, mid: str) -> str:
        meta = self.state.members[mid].meta
        return meta.process_id if meta is not None and meta.process_id else f"member:{mid}"

    def _active_and_standby(self) -> None:
        active: dict[str, dict[Slot, str]] = defaultdict(dict)
        standby: dict[str, set[Slot]] = defaultdict(set)
        for mid, m in self.active():
            cur = m.current
            assert cur is not None
            process = self._process(mid)
            for slot in cur.assigned:
                active[process].setdefault(slot, mid)
            standby[process].update(cur.standby)
        for process, tasks in sorted(active.items()):
            for slot in sorted(set(tasks) & standby[process]):
                mid = tasks[slot]
                self.add(
                    "task_active_and_standby",
                    f"process {process} holds task {slot[0]}_{slot[1]} as active (member "
                    f"{mid}) and as standby or warm-up",
                    self._current(mid).member_epoch,
                    member=mid,
                    slot=slot,
                    members=(mid,),
                    evidence={"process_id": process},
                )

    def member_states(self) -> None:
        """State byte against the partitions, epochs in order, and time-limited states."""
        streams = self.state.group_type is GroupType.STREAMS
        states: MemberStates = STREAMS_STATES if streams else CONSUMER_STATES
        ge, ae, cfg = self.state.group_epoch, self.state.assignment_epoch, self.config
        for mid, m in self.active():
            cur = m.current
            assert cur is not None
            epoch, state = cur.member_epoch, cur.state
            pending = bool(cur.pending) or bool(cur.standby_pending)
            facts = {"member_epoch": epoch, "state": states.name(state)}
            if state not in (states.stable, states.unrevoked, states.unreleased):
                self.add(
                    "member_state_unknown",
                    f"member {mid} is in state {states.name(state)}",
                    epoch,
                    member=mid,
                    members=(mid,),
                    evidence=facts,
                )
            elif state == states.unrevoked and not pending and epoch != STATIC_AWAY_EPOCH:
                self.add(
                    "member_state_inconsistent",
                    f"member {mid} is UNREVOKED at epoch {epoch} with nothing pending revocation",
                    epoch,
                    member=mid,
                    members=(mid,),
                    evidence=facts,
                )
            elif state != states.unrevoked and pending:
                self.add(
                    "member_state_inconsistent",
                    f"member {mid} is {states.name(state)} at epoch {epoch} with partitions "
                    "pending revocation",
                    epoch,
                    member=mid,
                    members=(mid,),
                    slots=cur.pending,
                    evidence=facts,
                )
            if epoch >= 0:
                above = [
                    (what, value)
                    for what, value in (("assignment", ae), ("group", ge))
                    if value is not None and epoch > value
                ]
                if above:
                    what, value = above[0]
                    self.add(
                        "epoch_order_violation",
                        f"member {mid} is at epoch {epoch}, above the {what} epoch {value}",
                        epoch,
                        member=mid,
                        members=(mid,),
                        evidence=facts,
                    )
            since = m.state_since_ms
            if is_away(cur):
                self.add(
                    "static_member_away_too_long",
                    f"static member {mid} ({m.meta.instance_id if m.meta else '?'}) has been "
                    f"away (epoch -2) for more than {cfg.static_session_timeout_ms / 1000:g} s",
                    epoch,
                    member=mid,
                    members=(mid,),
                    evidence={**facts, "away_since_ms": since},
                    began_ms=since,
                    limit_ms=cfg.static_session_timeout_ms,
                )
            elif state == states.unrevoked:
                timeout = (m.meta.rebalance_timeout_ms if m.meta else None) or (
                    cfg.default_rebalance_timeout_ms
                )
                self.add(
                    "revocation_overdue",
                    f"member {mid} has been UNREVOKED at epoch {epoch} for more than its "
                    f"rebalance timeout ({timeout / 1000:g} s) plus "
                    f"{cfg.revocation_grace_ms / 1000:g} s",
                    epoch,
                    member=mid,
                    members=(mid,),
                    slots=cur.pending,
                    evidence={**facts, "since_ms": since, "rebalance_timeout_ms": timeout},
                    began_ms=since,
                    limit_ms=timeout + cfg.revocation_grace_ms,
                )
            elif state == states.unreleased:
                # It waits for members that are revoking: as long as the slowest may take.
                limit = max(cfg.unreleased_max_ms, self._longest_revocation())
                self.add(
                    "unreleased_too_long",
                    f"member {mid} has waited UNRELEASED at epoch {epoch} for more than "
                    f"{limit / 1000:g} s",
                    epoch,
                    member=mid,
                    members=(mid,),
                    evidence={**facts, "since_ms": since, "limit_ms": limit},
                    began_ms=since,
                    limit_ms=limit,
                )

    def _longest_revocation(self) -> int:
        """The longest time a member may legitimately take to revoke: its rebalance timeout
        plus the grace (members without a stated timeout count the default)."""
        cfg = self.config
        timeouts = [
            (m.meta.rebalance_timeout_ms if m.meta else None) or cfg.default_rebalance_timeout_ms
            for m in self.state.members.values()
        ]
        return max(timeouts, default=cfg.default_rebalance_timeout_ms) + cfg.revocation_grace_ms

    def group_epochs(self) -> None:
        ge, ae = self.state.group_epoch, self.state.assignment_epoch
        if ge is None or ae is None:
            return
        if ae > ge:
            self.add(
                "epoch_order_violation",
                f"the assignment epoch {ae} is above the group epoch {ge}",
                ge,
            )
        elif ge > ae and self.active():
            self.add(
                "assignment_epoch_behind",
                f"the group epoch {ge} has stayed above the assignment epoch {ae} for more "
                f"than {self.config.assignment_lag_max_ms / 1000:g} s",
                ge,
                evidence={"since_ms": self.state.epoch_behind_since_ms},
                began_ms=self.state.epoch_behind_since_ms,
                limit_ms=self.config.assignment_lag_max_ms,
            )

    def targets(self) -> None:
        owners: dict[Slot, list[str]] = defaultdict(list)
        for mid, m in sorted(self.state.members.items()):
            if m.target is not None:
                for slot in set(m.target.slots):
                    owners[slot].append(mid)
        for slot, mids in sorted(owners.items()):
            if len(mids) > 1:
                self.add(
                    "target_overlap",
                    f"the target assignment gives {self.described([slot])} to "
                    f"{len(mids)} members: {', '.join(mids)}",
                    self.state.assignment_epoch,
                    slot=slot,
                    members=mids,
                    slots=(slot,),
                )

    def subscriptions(self) -> None:
        """Assigned ⊆ subscribed, and a STABLE member at the assignment epoch has its target."""
        ae = self.state.assignment_epoch
        for mid, m in self.active():
            cur, meta = m.current, m.meta
            assert cur is not None
            if meta is None or is_away(cur):
                continue
            if meta.regex and meta.regex not in self.state.regexes:
                continue  # not resolved yet: the subscription is not known
            subscribed = self.state.subscribed(meta)
            target = m.target.slots if m.target is not None else ()
            names = self.names({t for t, _ in (*cur.assigned, *target)})
            if names is None:
                continue
            outside = sorted(s for s in cur.assigned if names[s[0]] not in subscribed)
            if outside:
                self.add(
                    "assignment_outside_subscription",
                    f"member {mid} is assigned {self.described(outside)} outside its subscription",
                    cur.member_epoch,
                    member=mid,
                    members=(mid,),
                    slots=outside,
                    evidence={
                        "subscribed": sorted(subscribed),
                        "regex": meta.regex,
                        "member_epoch": cur.member_epoch,
                    },
                )
            if (
                cur.state == CONSUMER_STATES.stable
                and m.target is not None
                and ae is not None
                and cur.member_epoch == ae
            ):
                expected = {s for s in target if names[s[0]] in subscribed}
                actual = set(cur.assigned)
                if actual != expected:
                    self.add(
                        "stable_member_off_target",
                        f"member {mid} is STABLE at the assignment epoch {ae} but holds "
                        f"[{self.described(actual)}] instead of its target "
                        f"[{self.described(expected)}]",
                        cur.member_epoch,
                        member=mid,
                        members=(mid,),
                        slots=actual ^ expected,
                        evidence={
                            "missing": self.described(expected - actual),
                            "extra": self.described(actual - expected),
                        },
                    )

    def topic_ids(self) -> None:
        for tid in sorted(self.unresolved):
            self.out.append(
                Violation(
                    Finding(
                        kind="topic_id_unresolved",
                        group=self.group,
                        generation=None,
                        detail=f"topic id {tid} has no known name: the subscription checks "
                        "skipped the members holding it",
                        source=self.state.source,
                        topic=tid,
                        evidence={"topic_id": tid},
                    )
                )
            )


def evaluate(group: str, state: ModernState, config: DetectorConfig) -> list[Violation]:
    """Every violation ``state`` shows (share groups: none; they have no exclusive owners)."""
    if state.group_type is GroupType.SHARE:
        return []
    checker = _Checker(group, state, config)
    checker.ownership()
    checker.member_states()
    checker.group_epochs()
    checker.targets()
    if state.group_type is GroupType.CONSUMER:
        checker.subscriptions()
    checker.topic_ids()
    return checker.out
