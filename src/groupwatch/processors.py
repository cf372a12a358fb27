"""The pure parts the job runs in its Python workers: the decoder and the findings engine.

Built by :func:`build_processors` inside each worker (a ``functools.partial`` of it travels to
the workers, not the objects), so nothing heavy is pickled per batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupwatch.config import Config
from groupwatch.processing import DecodedLine, SourceRecord

if TYPE_CHECKING:
    from groupwatch.detect.config import DetectorConfig
    from groupwatch.detect.modern import ModernState


class EngineAnalysis:
    """:class:`groupwatch.processing.Analysis` backed by :mod:`groupwatch.detect`."""

    def __init__(self, config: Config, detector: DetectorConfig | None = None) -> None:
        self.source_config = config
        self.config = detector if detector is not None else config.detect.detector()

    def with_topic_names(self, names: Mapping[str, str]) -> EngineAnalysis:
        """The same engine knowing ``names`` (topic id -> name, from the brokers)."""
        return EngineAnalysis(
            self.source_config, dataclasses.replace(self.config, topic_names=dict(names))
        )

    @property
    def topic_names(self) -> Mapping[str, str]:
        return self.config.topic_names

    def modern(self, state: Any) -> ModernState | None:
        return None if state is None else state.modern

    def load(self, doc: Any) -> Any:
        from groupwatch.detect import GroupState

        return None if doc is None else GroupState.from_json(doc)

    def feed(
        self, state: Any, line: DecodedLine, members: Sequence[Any] | None = None
    ) -> tuple[Any, list[dict[str, Any]]]:
        from groupwatch.detect import event_from_decoded, step

        event = event_from_decoded(line, members)
        if event is None:
            return state, []
        state, findings = step(state, event, self.config)
        return state, [f.to_dict() for f in findings]

    def hint(self, state: Any, group: str, topic: str, max_partition: int) -> Any:
        from groupwatch.detect import OffsetCommit, Source, step

        event = OffsetCommit(
            group=group, topic=topic, partition=max_partition, source=Source(), time_ms=None
        )
        state, _ = step(state, event, self.config)
        return state

    def tick(
        self, state: Any, clocks: Mapping[int, int], quiescent: bool = False
    ) -> tuple[Any, list[dict[str, Any]]]:
        from groupwatch.detect import Tick, step

        if state is None or not clocks:
            return state, []
        modern = state.modern
        if quiescent and modern is not None:
            # The batch read everything available: a modern group is judged at its own
            # partition's stream time (what awaits confirmation by time is raised with it).
            p = modern.partition
            clock = clocks.get(p) if p is not None else max(clocks.values())
            if clock is not None:
                tick = Tick(state.group, clock, p, quiescent=True)
                state, findings = step(state, tick, self.config)
                return state, [f.to_dict() for f in findings]
        until = state.confirm_until
        if until is None:
            return state, []
        deadline, partition = until
        clock = clocks.get(partition) if partition is not None else max(clocks.values())
        if clock is None or clock < deadline:
            return state, []
        state, findings = step(state, Tick(state.group, clock, partition), self.config)
        return state, [f.to_dict() for f in findings]

    def pending_until(self, state: Any) -> tuple[int, int | None] | None:
        if state is None:
            return None
        until: tuple[int, int | None] | None = state.pending_until
        modern = state.modern
        if modern is not None and modern.dirty and modern.last_write_ms is not None:
            # Not judged yet (the batch was not a quiescent point, or its partition's clock
            # was not in it): due at the next batch that moves its partition's clock.
            if until is None or modern.last_write_ms < until[0]:
                until = (modern.last_write_ms, modern.partition)
        return until

    def dump(self, state: Any) -> Any:
        return None if state is None else state.to_json()


def build_processors(
    config: Config,
) -> tuple[Callable[[SourceRecord], DecodedLine], EngineAnalysis]:
    """The record decoder and the findings engine, configured from ``config``."""
    from groupwatch.protocol import decode_record, to_json_dict

    def decode(record: SourceRecord) -> DecodedLine:
        decoded = decode_record(
            record.key,
            record.value,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            timestamp=record.timestamp_ms,
        )
        line: DecodedLine = to_json_dict(decoded)
        return line

    return decode, EngineAnalysis(config)
