"""The pure parts the job runs in its Python workers: the decoder and the findings engine.

Built by :func:`build_processors` inside each worker (a ``functools.partial`` of it travels to
the workers, not the objects), so nothing heavy is pickled per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groupwatch.config import Config
from groupwatch.processing import DecodedLine, SourceRecord


class EngineAnalysis:
    """:class:`groupwatch.processing.Analysis` backed by :mod:`groupwatch.detect`."""

    def __init__(self, config: Config) -> None:
        self.config = config.detect.detector()

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

    def tick(self, state: Any, clocks: Mapping[int, int]) -> tuple[Any, list[dict[str, Any]]]:
        from groupwatch.detect import Tick, step

        until = None if state is None else state.pending_until
        if until is None:
            return state, []
        deadline, partition = until
        clock = clocks.get(partition) if partition is not None else max(clocks.values())
        if clock is None or clock < deadline:
            return state, []
        state, findings = step(state, Tick(state.group, clock, partition), self.config)
        return state, [f.to_dict() for f in findings]

    def pending_until(self, state: Any) -> tuple[int, int | None] | None:
        return None if state is None else state.pending_until

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
