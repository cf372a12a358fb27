"""When a modern group's violations are raised: at quiescent points, once confirmed.

A heartbeat that changes something makes the coordinator write several records in one append
(one timestamp); a reader can stop between them, and a compacted log read from its start shows
keys out of their original order.  So the state is judged only *between* writes (when stream
time moves past the newest record), every violation is remembered with the time it was first
seen, and it is raised only at a quiescent point — the end of ``analyze``'s input, or the end
of a job batch that read everything available — once it has held ``modern_confirm_ms`` (or its
own time limit: a member UNREVOKED past its rebalance timeout, ...).  What a record itself did
(a handover out of order) is kept until the next quiescent point past its confirmation time.
"""

from __future__ import annotations

from dataclasses import replace

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.findings import Finding
from groupwatch.detect.modern import checks, replay
from groupwatch.detect.modern.model import ModernRecord
from groupwatch.detect.modern.state import ModernState, Watch


def settle(group: str, state: ModernState, config: DetectorConfig) -> ModernState:
    """Judge the state as it stands after its newest write; remember what it shows."""
    if not state.dirty:
        return state
    now = state.last_write_ms
    found = {v.finding.finding_id: v for v in checks.evaluate(group, state, config)}
    kept: list[Watch] = []
    for w in state.watch:
        fid = w.finding.finding_id
        if not w.lasting:
            kept.append(w)
        elif fid in found:
            kept.append(w)
            del found[fid]
        # else: the state no longer shows it
    for v in found.values():
        if v.limit_ms is not None:
            began = v.began_ms if v.began_ms is not None else now
            deadline = None if began is None else began + v.limit_ms
        else:
            began = now
            deadline = None if now is None else now + config.modern_confirm_ms
        kept.append(Watch(v.finding, began, deadline, lasting=True))
    return replace(state, watch=tuple(kept), dirty=False)


def on_record(state: ModernState | None, rec: ModernRecord, config: DetectorConfig) -> ModernState:
    """Apply one record; the state before it is judged first if it starts a new write."""
    if (
        state is not None
        and state.dirty
        and rec.time_ms is not None
        and state.last_write_ms is not None
        and rec.time_ms > state.last_write_ms
    ):
        state = settle(rec.group, state, config)
    new, happened = replay.apply(state, rec, config)
    watch = new.watch
    if happened:
        ids = {w.finding.finding_id for w in watch}
        watch += tuple(
            Watch(
                f,
                rec.time_ms,
                None if rec.time_ms is None else rec.time_ms + config.modern_confirm_ms,
                lasting=False,
            )
            for f in happened
            if f.finding_id not in ids
        )
    last = new.last_write_ms
    if rec.time_ms is not None and (last is None or rec.time_ms > last):
        last = rec.time_ms
    return replace(
        new,
        watch=watch,
        dirty=True,
        last_write_ms=last,
        partition=rec.source.partition,
        source=rec.source,
    )


def quiesce(
    group: str, state: ModernState, clock_ms: int | None, config: DetectorConfig
) -> tuple[ModernState, list[Finding]]:
    """A quiescent point at stream time ``clock_ms``: raise what is confirmed by now."""
    state = settle(group, state, config)
    raised: list[Finding] = []
    kept: list[Watch] = []
    for w in state.watch:
        due = w.deadline_ms is None or (clock_ms is not None and clock_ms >= w.deadline_ms)
        if w.raised or not due:
            kept.append(w)
            continue
        raised.append(w.finding.with_evidence(since_ms=w.since_ms, confirmed_at_ms=clock_ms))
        if w.lasting:
            kept.append(replace(w, raised=True))
    return replace(state, watch=tuple(kept)), raised
