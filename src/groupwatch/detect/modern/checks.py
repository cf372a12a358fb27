"""What is wrong with a modern group's state as it stands (the snapshot checks).

Every check reads only keys the records stated: a compacted log read from its start shows each
key's history from some point on, so a key not seen yet is *unknown*, never *empty*, and a check
that needs it is skipped rather than guessed.
"""

from __future__ import annotations

from collections import defaultdict

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
from groupwatch.detect.modern.report import Report, Violation
from groupwatch.detect.modern.state import ModernState, held, is_away


def ownership(r: Report) -> None:
    """One owner per partition: assigned ∪ pending revocation, across members."""
    streams = r.state.group_type is GroupType.STREAMS
    owners: dict[Slot, list[str]] = defaultdict(list)
    for mid, m in r.active():
        cur = m.current
        assert cur is not None
        for slot in held(cur):
            owners[slot].append(mid)
        if not streams:
            for slot in sorted(set(cur.assigned) & set(cur.pending)):
                r.add(
                    "partition_assigned_and_pending",
                    f"member {mid} holds {r.described([slot])} both as assigned and "
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
        epochs = {mid: r.current(mid).member_epoch for mid in mids}
        if streams:
            processes = {r.process(mid) for mid in mids}
            if len(processes) < 2:
                continue
            kind = "task_active_twice"
            what = f"task {slot[0]}_{slot[1]} is active in {len(processes)} processes"
        else:
            kind = "partition_owned_twice"
            what = f"{r.described([slot])} is held by {len(mids)} members"
        r.add(
            kind,
            f"{what}: " + ", ".join(f"{m} (epoch {e})" for m, e in epochs.items()),
            max(epochs.values()),
            slot=slot,
            members=mids,
            slots=(slot,),
            evidence={
                "member_epochs": epochs,
                "pending": sorted(m for m in mids if slot in r.current(m).pending),
            },
        )
    if streams:
        _active_and_standby(r)


def _active_and_standby(r: Report) -> None:
    active: dict[str, dict[Slot, str]] = defaultdict(dict)
    standby: dict[str, set[Slot]] = defaultdict(set)
    for mid, m in r.active():
        cur = m.current
        assert cur is not None
        process = r.process(mid)
        for slot in cur.assigned:
            active[process].setdefault(slot, mid)
        standby[process].update(cur.standby)
    for process, tasks in sorted(active.items()):
        for slot in sorted(set(tasks) & standby[process]):
            mid = tasks[slot]
            r.add(
                "task_active_and_standby",
                f"process {process} holds task {slot[0]}_{slot[1]} as active (member "
                f"{mid}) and as standby or warm-up",
                r.current(mid).member_epoch,
                member=mid,
                slot=slot,
                members=(mid,),
                evidence={"process_id": process},
            )


def member_states(r: Report) -> None:
    """State byte against the partitions, epochs in order, and time-limited states."""
    streams = r.state.group_type is GroupType.STREAMS
    states: MemberStates = STREAMS_STATES if streams else CONSUMER_STATES
    ge, ae, cfg = r.state.group_epoch, r.state.assignment_epoch, r.config
    for mid, m in r.active():
        cur = m.current
        assert cur is not None
        epoch, state = cur.member_epoch, cur.state
        pending = bool(cur.pending) or bool(cur.standby_pending)
        facts = {"member_epoch": epoch, "state": states.name(state)}
        if state not in (states.stable, states.unrevoked, states.unreleased):
            r.add(
                "member_state_unknown",
                f"member {mid} is in state {states.name(state)}",
                epoch,
                member=mid,
                members=(mid,),
                evidence=facts,
            )
        elif state == states.unrevoked and not pending and epoch != STATIC_AWAY_EPOCH:
            r.add(
                "member_state_inconsistent",
                f"member {mid} is UNREVOKED at epoch {epoch} with nothing pending revocation",
                epoch,
                member=mid,
                members=(mid,),
                evidence=facts,
            )
        elif state != states.unrevoked and pending:
            r.add(
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
                r.add(
                    "epoch_order_violation",
                    f"member {mid} is at epoch {epoch}, above the {what} epoch {value}",
                    epoch,
                    member=mid,
                    members=(mid,),
                    evidence=facts,
                )
        since = m.state_since_ms
        if is_away(cur):
            r.add(
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
            r.add(
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
            limit = max(cfg.unreleased_max_ms, r.longest_revocation())
            r.add(
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


def group_epochs(r: Report) -> None:
    ge, ae = r.state.group_epoch, r.state.assignment_epoch
    if ge is None or ae is None:
        return
    if ae > ge:
        r.add(
            "epoch_order_violation",
            f"the assignment epoch {ae} is above the group epoch {ge}",
            ge,
        )
    elif ge > ae and r.active():
        r.add(
            "assignment_epoch_behind",
            f"the group epoch {ge} has stayed above the assignment epoch {ae} for more "
            f"than {r.config.assignment_lag_max_ms / 1000:g} s",
            ge,
            evidence={"since_ms": r.state.epoch_behind_since_ms},
            began_ms=r.state.epoch_behind_since_ms,
            limit_ms=r.config.assignment_lag_max_ms,
        )


def targets(r: Report) -> None:
    owners: dict[Slot, list[str]] = defaultdict(list)
    for mid, m in sorted(r.state.members.items()):
        if m.target is not None:
            for slot in set(m.target.slots):
                owners[slot].append(mid)
    for slot, mids in sorted(owners.items()):
        if len(mids) > 1:
            r.add(
                "target_overlap",
                f"the target assignment gives {r.described([slot])} to "
                f"{len(mids)} members: {', '.join(mids)}",
                r.state.assignment_epoch,
                slot=slot,
                members=mids,
                slots=(slot,),
            )


def subscriptions(r: Report) -> None:
    """Assigned ⊆ subscribed, and a STABLE member at the assignment epoch has its target."""
    ae = r.state.assignment_epoch
    for mid, m in r.active():
        cur, meta = m.current, m.meta
        assert cur is not None
        if meta is None or is_away(cur):
            continue
        if meta.regex and meta.regex not in r.state.regexes:
            continue  # not resolved yet: the subscription is not known
        subscribed = r.state.subscribed(meta)
        target = m.target.slots if m.target is not None else ()
        names = r.names({t for t, _ in (*cur.assigned, *target)})
        if names is None:
            continue
        outside = sorted(s for s in cur.assigned if names[s[0]] not in subscribed)
        if outside:
            r.add(
                "assignment_outside_subscription",
                f"member {mid} is assigned {r.described(outside)} outside its subscription",
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
                r.add(
                    "stable_member_off_target",
                    f"member {mid} is STABLE at the assignment epoch {ae} but holds "
                    f"[{r.described(actual)}] instead of its target "
                    f"[{r.described(expected)}]",
                    cur.member_epoch,
                    member=mid,
                    members=(mid,),
                    slots=actual ^ expected,
                    evidence={
                        "missing": r.described(expected - actual),
                        "extra": r.described(actual - expected),
                    },
                )


def topic_ids(r: Report) -> None:
    for tid in sorted(r.unresolved):
        r.out.append(
            Violation(
                Finding(
                    kind="topic_id_unresolved",
                    group=r.group,
                    generation=None,
                    detail=f"topic id {tid} has no known name: the subscription checks "
                    "skipped the members holding it",
                    source=r.state.source,
                    topic=tid,
                    evidence={"topic_id": tid},
                )
            )
        )


def evaluate(group: str, state: ModernState, config: DetectorConfig) -> list[Violation]:
    """Every violation ``state`` shows (share groups: none; they have no exclusive owners)."""
    if state.group_type is GroupType.SHARE:
        return []
    report = Report(group, state, config)
    ownership(report)
    member_states(report)
    group_epochs(report)
    targets(report)
    if state.group_type is GroupType.CONSUMER:
        subscriptions(report)
    topic_ids(report)
    return report.out
