"""Drive :func:`~groupwatch.detect.state.step` over JSON lines of any groups, in order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.confirm import Pending
from groupwatch.detect.decoded import decode_raw, event_from_decoded, is_raw
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import Event, Tick
from groupwatch.detect.state import GroupState, step


def event_from_line(line: Mapping[str, Any]) -> Event | None:
    """A raw record or a ``groupwatch decode`` output line -> the engine's event."""
    decoded = decode_raw(line) if is_raw(line) else line
    return event_from_decoded(decoded)


class Analyzer:
    """Per-group states in a dict, fed one line at a time: what ``groupwatch analyze`` runs,
    and what the streaming job's per-group step reproduces (``groupwatch.processing``).

    Stream time is kept per ``__consumer_offsets`` partition (a group's records all live in
    one): every record moves its partition's clock, and a group whose pending finding's time is
    up on that clock gets a :class:`Tick` before the record is applied, so a group that stays
    silent is still judged.  ``states`` can be saved (``{g: s.to_json()}``) and handed back to a
    new analyzer: the findings are the same whatever the batching.
    """

    def __init__(
        self,
        config: DetectorConfig | None = None,
        states: Mapping[str, GroupState] | None = None,
    ) -> None:
        self.config = config or DetectorConfig()
        self.states: dict[str, GroupState] = {}
        #: group -> (deadline ms, partition) of groups with something pending by time.
        self._due: dict[str, tuple[int, int | None]] = {}
        #: Stream time per ``__consumer_offsets`` partition (``None``: records without one).
        self.clocks: dict[int | None, int] = {}
        for group, state in (states or {}).items():
            self._store(group, state)

    def _store(self, group: str, state: GroupState) -> None:
        self.states[group] = state
        # Only what stream time alone raises: modern groups wait for a quiescent point.
        until = state.confirm_until
        if until is None:
            self._due.pop(group, None)
        else:
            self._due[group] = until

    def _step(self, event: Event) -> list[Finding]:
        new, findings = step(self.states.get(event.group), event, self.config)
        self._store(event.group, new)
        return findings

    def advance(self, time_ms: int, partition: int | None) -> list[Finding]:
        """Stream time reached ``time_ms`` on ``partition``: raise what is due there."""
        out: list[Finding] = []
        ready = sorted(
            g
            for g, (deadline, p) in self._due.items()
            if deadline <= time_ms and (p is None or partition is None or p == partition)
        )
        for group in ready:
            out.extend(self._step(Tick(group, time_ms, partition)))
        return out

    def _tell_time(self, time_ms: int, partition: int | None) -> None:
        if time_ms > self.clocks.get(partition, time_ms - 1):
            self.clocks[partition] = time_ms

    def feed_event(self, event: Event) -> list[Finding]:
        out: list[Finding] = []
        if event.time_ms is not None:
            partition = event.partition if isinstance(event, Tick) else event.source.partition
            self._tell_time(event.time_ms, partition)
            if self._due:
                out.extend(self.advance(event.time_ms, partition))
        out.extend(self._step(event))
        return out

    def feed(self, line: Mapping[str, Any]) -> list[Finding]:
        event = event_from_line(line)
        if event is not None:
            return self.feed_event(event)
        # Records the engine has no use for (offset-commit tombstones, say) still tell the time.
        when, partition = line.get("timestamp"), line.get("partition")
        if isinstance(when, int):
            p = partition if isinstance(partition, int) else None
            self._tell_time(when, p)
            if self._due:
                return self.advance(when, p)
        return []

    def finish(self) -> list[Finding]:
        """The end of the input: a quiescent point, where modern groups are judged.

        Each group is judged at its own ``__consumer_offsets`` partition's stream time.
        """
        out: list[Finding] = []
        latest = max(self.clocks.values(), default=None)
        for group, state in sorted(self.states.items()):
            if state.modern is None:
                continue
            clock = self.clocks.get(state.modern.partition, latest)
            if clock is None:
                continue
            out.extend(self._step(Tick(group, clock, state.modern.partition, quiescent=True)))
        return out

    def pending(self) -> list[tuple[str, Pending]]:
        """(group, pending finding) of everything still awaiting confirmation (and not yet
        raised: a confirmed finding stays pending to be confirmed again next generation)."""
        return [
            (g, p)
            for g, s in sorted(self.states.items())
            for p in s.pending
            if p.finding.finding_id not in s.emitted  # already raised: kept only to see on
        ]

    def unconfirmed(self) -> list[tuple[str, Finding, int | None]]:
        """(group, finding, from when) of modern groups' violations seen but not yet held
        long enough to be raised at the last quiescent point."""
        return [
            (g, w.finding, w.deadline_ms)
            for g, s in sorted(self.states.items())
            if s.modern is not None
            for w in s.modern.watch
            if not w.raised
        ]


def analyze_lines(
    lines: Iterable[Mapping[str, Any]], config: DetectorConfig | None = None
) -> list[Finding]:
    """All findings of a sequence of lines, in order."""
    analyzer = Analyzer(config)
    out: list[Finding] = []
    for line in lines:
        out.extend(analyzer.feed(line))
    out.extend(analyzer.finish())
    return out
