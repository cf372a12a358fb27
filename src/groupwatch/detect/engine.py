"""Drive :func:`~groupwatch.detect.state.step` over JSON lines of any groups, in order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from groupwatch.detect.config import DetectorConfig
from groupwatch.detect.decoded import decode_raw, event_from_decoded, is_raw
from groupwatch.detect.findings import Finding
from groupwatch.detect.model import Event
from groupwatch.detect.state import GroupState, step


def event_from_line(line: Mapping[str, Any]) -> Event | None:
    """A raw record or a ``groupwatch decode`` output line -> the engine's event."""
    decoded = decode_raw(line) if is_raw(line) else line
    return event_from_decoded(decoded)


class Analyzer:
    """Per-group states in a dict, fed one line at a time (what ``groupwatch analyze`` runs).

    ``states`` can be saved (``{g: s.to_json()}``) and handed back to a new analyzer: the
    findings are the same whatever the batching.
    """

    def __init__(
        self,
        config: DetectorConfig | None = None,
        states: Mapping[str, GroupState] | None = None,
    ) -> None:
        self.config = config or DetectorConfig()
        self.states: dict[str, GroupState] = dict(states or {})

    def feed_event(self, event: Event) -> list[Finding]:
        new, findings = step(self.states.get(event.group), event, self.config)
        self.states[event.group] = new
        return findings

    def feed(self, line: Mapping[str, Any]) -> list[Finding]:
        event = event_from_line(line)
        return [] if event is None else self.feed_event(event)


def analyze_lines(
    lines: Iterable[Mapping[str, Any]], config: DetectorConfig | None = None
) -> list[Finding]:
    """All findings of a sequence of lines, in order."""
    analyzer = Analyzer(config)
    out: list[Finding] = []
    for line in lines:
        out.extend(analyzer.feed(line))
    return out
