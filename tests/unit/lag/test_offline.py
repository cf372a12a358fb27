"""analyze's side: the committed offsets and owners of its input (groupwatch.detect.lag.offline)."""

from __future__ import annotations

from typing import Any

from groupwatch.detect import Analyzer
from groupwatch.detect.lag.judge import LagRules
from groupwatch.detect.lag.model import EndOffset
from groupwatch.detect.lag.offline import InputLag
from groupwatch_dev.scenarios.builder import decoded_lines


def snapshot(generation: int, members: dict[str, list[int]], time: float) -> dict[str, Any]:
    return {
        "group": "g",
        "generation": generation,
        "protocol": "range",
        "version": 3,
        "time": time,
        "members": [
            {"id": m, "version": 3, "topics": ["t"], "generation_id": "prev", "assigned": {"t": ps}}
            for m, ps in members.items()
        ],
    }


def commit(partition: int, time: float) -> dict[str, Any]:
    return {"commit": {"group": "g", "topic": "t", "partition": partition}, "time": time}


def feed(records: list[dict[str, Any]], offsets: list[int]) -> tuple[InputLag, Analyzer]:
    """The builder's lines, the commits' offsets set in order to ``offsets``."""
    lines = decoded_lines({"records": records})
    it = iter(offsets)
    analyzer, lag = Analyzer(), InputLag()
    for line in lines:
        if line.get("record_type") == "offset_commit":
            line["value"]["offset"] = next(it)
        lag.line(line)
        analyzer.feed(line)
        lag.after("g", analyzer)
    return lag, analyzer


def test_a_move_back_within_a_generation_is_a_rewind_and_across_one_is_not() -> None:
    records = [
        snapshot(1, {"M0-1": [0, 1]}, 0),
        commit(0, 1),
        commit(1, 1),
        commit(0, 2),  # back, same generation: rewound
        snapshot(2, {"M0-1": [0], "M1-1": [1]}, 3),
        commit(1, 4),  # back, after a rebalance: the group's own doing
    ]
    lag, analyzer = feed(records, [100, 100, 40, 10])
    c0 = lag.book.commits[("g", "t", 0)]
    c1 = lag.book.commits[("g", "t", 1)]
    assert (c0.offset, c0.rewound_from) == (40, 100)
    assert (c1.offset, c1.rewound_from) == (10, None)
    owners = lag.owners(analyzer, {})["g"]
    # M0 keeps partition 0 from generation 1; partition 1 is M1's since generation 2.
    assert (owners[("t", 0)].member, owners[("t", 0)].generation) == ("M0-1", 1)
    assert (owners[("t", 1)].member, owners[("t", 1)].generation) == ("M1-1", 2)
    ends = {("t", 0): [EndOffset("t", 0, 0, 120, c0.commit_ms + 1000)]}
    verdicts = lag.judge(ends, lag.owners(analyzer, {}), LagRules())
    by_partition = {v.row.partition: v for v in verdicts}
    assert by_partition[0].row.status == "rewound"
    assert by_partition[0].opened is not None and by_partition[0].opened.member == "M0-1"
    assert by_partition[1].row.end_offset is None


def test_an_offset_tombstone_removes_the_commit() -> None:
    lines = decoded_lines({"records": [snapshot(1, {"M0-1": [0]}, 0), commit(0, 1)]})
    lag = InputLag()
    for line in lines:
        lag.line(line)
    assert ("g", "t", 0) in lag.book.commits
    gone = dict(lines[-1], tombstone=True, value=None)
    lag.line(gone)
    assert lag.book.commits == {}
