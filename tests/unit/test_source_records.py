"""A group's rows of the cogroup as the step reads them: in log order, each record once."""

from __future__ import annotations

import pyarrow as pa

from groupwatch.spark.python_stage import source_records


def _rows(positions: list[tuple[int, int]]) -> pa.Table:
    return pa.table(
        {
            "group": ["g"] * len(positions),
            "key": [b"k%d" % o for _, o in positions],
            "value": [b"v%d" % o for _, o in positions],
            "topic": ["__consumer_offsets"] * len(positions),
            "partition": pa.array([p for p, _ in positions], pa.int32()),
            "offset": pa.array([o for _, o in positions], pa.int64()),
            "ts": pa.array([1000 + o for _, o in positions], pa.int64()),
        }
    )


def test_records_come_in_log_order_and_a_commit_sent_twice_comes_once() -> None:
    # The first commit of a partition that is also the last before a generation record is in
    # the cogroup twice (first_commits and commits_before).
    rec = _rows([(3, 9), (1, 5), (3, 7), (3, 7), (1, 5), (3, 8)])
    got = [(r.partition, r.offset, r.key) for r in source_records(rec)]
    assert got == [(1, 5, b"k5"), (3, 7, b"k7"), (3, 8, b"k8"), (3, 9, b"k9")]
