"""The offset commits a batch's Python stage gets in Spark are enough: over the scenario
library cut into batches, every group's state after each batch is the same from those commits
as from every commit of the batch, which is what a batch run on the driver gets
(``spark/driver_stage.py``) and what ``analyze`` reads.

The job runs a batch's Python stage in Spark or on the driver depending on the batch's size, the
state cache and the tables' place, so the same batches must save the same states either way.
In Spark a group gets (``spark/source.py``, held to the same plain reading as :func:`reduced` by
``tests/integration/test_source_commits.py``) the first commit of each partition, its newest
commit before each of its group-metadata records and its newest commit of the batch; earlier
batches' commits come as the offset hints of ``group_offsets`` (:func:`hints`), the same for
both.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from groupwatch import processing
from groupwatch.detect import DetectorConfig
from groupwatch.group_state import SavedGroupState
from groupwatch.protocol.specs import GROUP_METADATA_TYPE, OFFSET_COMMIT_TYPES
from groupwatch_dev.scenarios.builder import load, raw_records, scenario_files

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
CLASSIC = scenario_files()
#: Records per batch: the crash tests' 5 and 9, and a few more.
SIZES = (3, 5, 9, 25)

Hint = tuple[str, int, int | None]

#: The batch that showed two states: a generation, the first commits of three partitions, then a
#: second commit of the first partition.
LATE_COMMIT: dict[str, Any] = {
    "records": [
        {
            "group": "g",
            "generation": 6,
            "protocol": "range",
            "members": [{"id": "m1", "topics": ["t"], "assigned": {"t": [0, 1, 2]}}],
            "time": 240,
        },
        *[
            {"commit": {"group": "g", "topic": "t", "partition": p}, "time": at}
            for p, at in ((0, 242), (1, 244), (2, 246), (0, 248))
        ],
    ]
}


def _source(raw: Sequence[Mapping[str, Any]]) -> list[processing.SourceRecord]:
    def b(text: str | None) -> bytes | None:
        return None if text is None else base64.b64decode(text)

    return [
        processing.SourceRecord(
            b(r["key"]), b(r["value"]), r["topic"], r["partition"], r["offset"], r["timestamp"]
        )
        for r in sorted(raw, key=lambda r: (r["partition"], r["offset"]))
    ]


def _type(rec: processing.SourceRecord) -> int | None:
    return None if rec.key is None or len(rec.key) < 2 else int.from_bytes(rec.key[:2], "big")


def _is_commit(rec: processing.SourceRecord) -> bool:
    return _type(rec) in OFFSET_COMMIT_TYPES and rec.value is not None


def reduced(records: Sequence[processing.SourceRecord]) -> list[processing.SourceRecord]:
    """One group's records of a batch as the Spark plan hands them over: every record that is
    not an offset commit, the first commit of each (topic, partition), the newest commit before
    each group-metadata record and the newest commit of the batch."""
    at = {id(r): (r.partition, r.offset) for r in records}
    marks = sorted(at[id(r)] for r in records if _type(r) == GROUP_METADATA_TYPE)
    kept: dict[tuple[Any, ...], processing.SourceRecord] = {}
    for rec in sorted(records, key=lambda r: at[id(r)]):
        if not _is_commit(rec):
            kept[("record", at[id(rec)])] = rec
            continue
        assert rec.key is not None
        kept.setdefault(("first", rec.key[2:]), rec)  # the key holds topic and partition
        stretch = sum(1 for m in marks if m < at[id(rec)])
        kept[("newest", stretch)] = rec
    return sorted({at[id(r)]: r for r in kept.values()}.values(), key=lambda r: at[id(r)])


def hints(before: Sequence[processing.SourceRecord]) -> list[Hint]:
    """``group_offsets`` of one group after the commits of earlier batches: per topic the
    highest partition and the last commit time."""
    per_topic: dict[str, tuple[int, int | None]] = {}
    for rec in before:
        if not _is_commit(rec):
            continue
        commit = processing.decode(rec)
        topic, partition = commit.key.topic, commit.key.partition  # type: ignore[union-attr]
        high, last = per_topic.get(topic, (-1, None))
        at = rec.timestamp_ms
        per_topic[topic] = (
            max(high, partition),
            at if last is None or at is None else max(last, at),
        )
    return sorted((t, p, when) for t, (p, when) in per_topic.items())


def _run(
    group: str,
    prior: str | None,
    records: list[processing.SourceRecord],
    detector: DetectorConfig,
    earlier: list[Hint],
    clocks: dict[int, int],
) -> processing.GroupResult:
    return processing.process_group(
        group,
        None if prior is None else SavedGroupState.decode(prior),
        records,
        detector=detector,
        detected_at=NOW,
        commits=earlier,
        clocks=clocks,
    )


def states_both_ways(
    raw: Sequence[Mapping[str, Any]], detector: DetectorConfig, size: int
) -> list[tuple[int, str, str, str]]:
    """(batch, group, state from every commit, state from the reduced commits) of every group
    that runs in a batch (one with a record that is not an offset commit), the records cut
    into batches of ``size`` in offset order (one partition after the other, as a mirror of
    one partition holds them)."""
    records = _source(raw)
    state: dict[str, str | None] = {}
    seen: dict[str, list[processing.SourceRecord]] = defaultdict(list)
    out = []
    for start in range(0, len(records), size):
        batch = records[start : start + size]
        clocks: dict[int, int] = {}
        mine: dict[str, list[processing.SourceRecord]] = defaultdict(list)
        for rec in batch:
            clocks[rec.partition] = max(rec.timestamp_ms, clocks.get(rec.partition, 0))
            mine[processing.decode(rec).group or ""].append(rec)
        for group, recs in sorted(mine.items()):
            if all(_is_commit(r) for r in recs):
                continue  # commits only: the job runs no Python stage for the group
            prior, earlier = state.get(group), hints(seen[group])
            every = _run(group, prior, recs, detector, earlier, clocks)
            few = _run(group, prior, reduced(recs), detector, earlier, clocks)
            out.append((start // size, group, every.state.encode(), few.state.encode()))
            state[group] = None if every.deleted else every.state.encode()
        for group, recs in mine.items():
            seen[group].extend(recs)
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("path", CLASSIC, ids=[p.stem for p in CLASSIC])
def test_the_reduced_commits_save_the_states_every_commit_saves(path: Any, size: int) -> None:
    doc = load(path)
    detector = DetectorConfig(partitions_per_topic=doc.get("partitions") or {})
    compared = states_both_ways(raw_records(doc), detector, size)
    assert compared, "no group ran"
    differ = [(b, g, every, few) for b, g, every, few in compared if every != few]
    if differ:
        batch, group, every, few = differ[0]
        pytest.fail(f"batch {batch}, group {group}:\n{every}\n{few}")


def test_a_later_commit_of_a_partition_after_the_generation_is_the_time_kept() -> None:
    """:data:`LATE_COMMIT` in one batch: the state keeps the fourth commit's time."""
    raw = raw_records(LATE_COMMIT)
    [(_, _, every, few)] = states_both_ways(raw, DetectorConfig(), len(raw))
    engine = SavedGroupState.decode(few).detect
    assert engine is not None
    assert engine.stuck.last_commit_ms == raw[-1]["timestamp"]
    assert few == every
