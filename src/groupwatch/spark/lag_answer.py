"""The brokers' answer to a lag poll, as values: which partitions to ask for (those some group
commits to, by topic), the offsets the JVM's consumer answered with (its ``Map`` texts, taken
apart here), and the first records found at committed offsets.

Apart from the asking (:mod:`groupwatch.spark.lag_ask`, through the driver's JVM) because the
judging side needs these and no JVM: the poll judged in a process of its own
(:mod:`groupwatch.spark.lag_process`) receives the answer as these values.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from groupwatch.detect.lag.model import EndOffset
from groupwatch.detect.lag.poll import TP

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

#: A ``Map<TopicPartition, Long>``'s text: ``{topic-partition=offset, ...}`` (a topic name is
#: letters, digits, ``.``, ``_`` and ``-``: the partition is the digits after its last ``-``).
_RESULT = re.compile(r"([A-Za-z0-9._-]+)-(\d+)=(-?\d+)")


def parse_offsets(text: str) -> dict[TP, int]:
    """(topic, partition) -> offset from the text of a consumer's ``endOffsets`` or
    ``beginningOffsets`` answer."""
    return {(t, int(p)): int(o) for t, p, o in _RESULT.findall(text)}


def by_topic(kept: Iterable[TP]) -> dict[str, list[int]]:
    """Partitions grouped by topic, in the order given."""
    by: dict[str, list[int]] = {}
    for topic, partition in kept:
        by.setdefault(topic, []).append(partition)
    return by


def committed_partitions(commits: pa.Table) -> dict[str, list[int]]:
    """The partitions some group commits to, by topic, sorted (as ``by_topic(sorted(...))``
    of their keys, found as columns: a fleet commits to a quarter of a million)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    if commits.num_rows == 0:
        return {}
    topic = commits.column("topic")
    encoded = pc.dictionary_encode(
        topic.combine_chunks() if isinstance(topic, pa.ChunkedArray) else topic
    )
    names = encoded.dictionary.to_pylist()
    # Each (topic, partition) as one int64, the topic by its name's rank: sorted as integers
    # they are sorted as the pairs (an Arrow group-by and sort of the strings took 0.5 s).
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names), dtype=np.int64)
    codes = rank[np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)]
    partition = np.asarray(
        pc.cast(commits.column("partition"), pa.int64()).to_numpy(zero_copy_only=False)
    )
    pairs = np.unique((codes << 32) | partition)
    topics, starts = np.unique(pairs >> 32, return_index=True)
    bounds = [*starts.tolist(), len(pairs)]
    partitions = (pairs & 0xFFFFFFFF).tolist()
    return {
        names[order[t]]: partitions[bounds[i] : bounds[i + 1]]
        for i, t in enumerate(topics.tolist())
    }


def partitions_json(kept: Iterable[TP]) -> str:
    """``{"topic": [partition, ...], ...}``: the partitions as the Kafka connector's
    ``JsonUtils.partitions`` reads them."""
    return json.dumps(by_topic(kept), separators=(",", ":"))


@dataclasses.dataclass(frozen=True, slots=True)
class RecordTimes:
    """The records the brokers were asked for at committed offsets: ``asked`` by partition,
    ``found``: (partition, committed offset) -> (offset, timestamp ms) of the first record at or
    after it (none where the brokers had none within the time allowed)."""

    asked: dict[TP, list[int]]
    found: dict[tuple[TP, int], tuple[int, int]]


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """The brokers' answer to one poll, as the JVM's texts (taken apart where it is judged:
    in the driver, or in the process of its own, ``lag.judge_process``)."""

    ends: str
    starts: str
    observed_ms: int

    def offsets(self) -> list[EndOffset]:
        """An ``EndOffset`` per partition with a log end (sorted)."""
        ends, starts = parse_offsets(self.ends), parse_offsets(self.starts)
        return [
            EndOffset(t, p, starts.get((t, p), 0), end, self.observed_ms)
            for (t, p), end in sorted(ends.items())
        ]
