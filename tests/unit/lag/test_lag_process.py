"""A poll judged in a process of its own (``lag.judge_process``): the same verdicts and tables
as judged in the driver, a failure in the child one error in the driver, a child that died
started again."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from groupwatch import config as config_mod
from groupwatch.detect.lag.fleet import rows_of
from groupwatch.spark.lag_answer import Answer
from groupwatch.spark.lag_judge import LagJudge
from groupwatch.spark.lag_process import LagProcess, LagProcessError
from tests.unit.lag.test_job_reads import T0, _write

STOP = "lag.stop_seconds=60"
#: The tables' times are fixed (``T0``) and the judge keeps ``lag.history_hours`` back from the
#: wall clock: a window of ten years keeps T0's history in it on any day the suite runs (the
#: default week dropped it seven days after T0, and the stop with it).
HISTORY = "lag.history_hours=87600"


def _tables(root: Path) -> None:
    """Three committed partitions: one caught up, one whose consumer stopped ten minutes ago
    with records waiting (owned by m1), one of a topic the brokers do not know."""
    old = T0 - dt.timedelta(minutes=10)
    _write(root, "committed_offsets", [
        {"group": "g", "topic": "t", "partition": 0, "committed_offset": 100,
         "commit_time": T0, "moved_time": T0},
        {"group": "g", "topic": "t", "partition": 1, "committed_offset": 10,
         "commit_time": old, "moved_time": old},
        {"group": "g", "topic": "gone", "partition": 0, "committed_offset": 5,
         "commit_time": T0, "moved_time": T0},
    ])  # fmt: skip
    _write(root, "partition_ownership", [
        {"group": "g", "topic": "t", "partition": p, "member_id": "m1", "client_id": "c1",
         "from_generation": 3, "to_generation": None} for p in (0, 1)
    ])  # fmt: skip
    _write(root, "member_assignments", [
        {"group": "g", "member_id": "m1", "generation": 3, "client_host": "/10.0.0.1"},
    ])  # fmt: skip
    _write(root, "findings", [])  # the job makes every table at start
    _write(root, "end_offsets", [
        # the history: partition 1's end passed 10 twenty minutes ago
        {"topic": "t", "partition": p, "start_offset": 0, "end_offset": 60,
         "observed_at": T0 - dt.timedelta(minutes=20)} for p in (0, 1)
    ])  # fmt: skip


def _config(root: Path) -> config_mod.Config:
    return config_mod.load(None, env={}, overrides=[f"delta.root={root}", STOP, HISTORY])


def _answer() -> Answer:
    at = int((T0 + dt.timedelta(seconds=30)).timestamp() * 1000)
    return Answer("{t-0=100, t-1=60}", "{t-0=0, t-1=0}", at)


def _lag(root: Path) -> list[dict[str, object]]:
    rows = DeltaTable(str(root / "partition_lag")).to_pyarrow_table().to_pylist()
    return sorted(rows, key=lambda r: (r["topic"], r["partition"]))


def test_the_child_judges_and_writes_as_the_driver_does(tmp_path: Path) -> None:
    here, there = tmp_path / "driver", tmp_path / "child"
    _tables(here)
    shutil.copytree(here, there)
    inline, child = LagJudge(_config(here)), LagProcess(_config(there))
    try:
        assert child.wanted() == inline.wanted() == {"gone": [0], "t": [0, 1]}
        a = inline.judge(_answer(), False, None)
        b = child.judge(_answer(), False, None)
        # The driver gets the alerting rows only, and no answers: the rest stays there.
        # (One answer is a row: t-0's end moved; t-1's is the one read back.)
        every = rows_of(a.result.table)
        assert [r.status for r in every] == ["idle", "stopped", "idle"]
        assert b.result.rows == a.result.rows == [r for r in every if r.status == "stopped"]
        assert b.ends == [] and [(e.topic, e.partition) for e in a.ends] == [("t", 0)]
        assert b.result.topics == a.result.topics
        assert b.result.opened == a.result.opened and len(a.result.opened) == 1
        assert a.result.opened[0].member == "m1"
        assert b.last_ok_ms == a.last_ok_ms == _answer().observed_ms
        inline.write()
        child.write()
        assert _lag(there) == _lag(here) and len(_lag(here)) == 3
        found = DeltaTable(str(there / "findings")).to_pyarrow_table().to_pylist()
        assert [f["kind"] for f in found] == ["consumer_stopped"]
    finally:
        child.close()


def test_a_failure_in_the_child_is_an_error_and_a_dead_child_is_started_again(
    tmp_path: Path,
) -> None:
    _tables(tmp_path)
    child = LagProcess(_config(tmp_path))
    try:
        child.wanted()
        with pytest.raises(LagProcessError, match="AttributeError"):
            child._call("no_such_request")
        first = child._child
        assert first is not None and first.poll() is None  # it lives on after a failure
        first.kill()
        first.wait()
        with pytest.raises(LagProcessError, match="ended"):
            child.judge(_answer(), False, None)
        # The next poll starts a new one, its keeper read back from end_offsets.
        assert child.wanted() == {"gone": [0], "t": [0, 1]}
        assert child._child is not None and child._child.pid != first.pid
        judged = child.judge(_answer(), False, None)
        assert [r.status for r in judged.result.rows] == ["stopped"]
    finally:
        child.close()
    assert child._child is None


def test_a_restart_reads_back_the_history_its_estimates_need_and_no_more(
    tmp_path: Path,
) -> None:
    """Forty polls of a busy partition (one group far behind on it, one keeping up) and an
    idle one, written as the job writes them: the busy one a row a minute (every fourth
    poll), the idle one a row, not forty.  Then a judge started afresh on the tables judges
    the next answer as the one that kept running does (the producer is steady: a straight
    line between the rows is exact), from the rows since the one before the slow group's
    offset and each partition's newest answer in ``partition_lag``."""
    t0 = dt.datetime.now(tz=dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1)
    _write(tmp_path, "committed_offsets", [
        {"group": "slow", "topic": "t", "partition": 0, "committed_offset": 1_000,
         "commit_time": t0, "moved_time": t0},
        {"group": "fast", "topic": "t", "partition": 0, "committed_offset": 3_950,
         "commit_time": t0, "moved_time": t0},
        {"group": "fast", "topic": "t", "partition": 1, "committed_offset": 60,
         "commit_time": t0, "moved_time": t0},
    ])  # fmt: skip
    _write(tmp_path, "findings", [])

    def answer(i: int) -> Answer:
        at = int((t0 + dt.timedelta(seconds=15 * i)).timestamp() * 1000)
        return Answer(f"{{t-0={100 * i}, t-1=60}}", "{t-0=0, t-1=0}", at)

    running = LagJudge(_config(tmp_path))
    for i in range(40):
        running.wanted()
        running.judge(answer(i), False, None)
        running.write()
    rows = DeltaTable(str(tmp_path / "end_offsets")).to_pyarrow_table().to_pylist()
    assert sum(r["partition"] == 1 for r in rows) == 1
    assert sorted(r["end_offset"] for r in rows if r["partition"] == 0) == [
        100 * i for i in range(0, 40, 4)
    ]

    restarted = LagJudge(_config(tmp_path))
    assert restarted.wanted() == running.wanted()
    # Read back: from the last row at or below 1,000 on, and the newest answers.
    assert [p.end_offset for p in restarted.keeper.history[("t", 0)]] == [
        *(100 * i for i in range(8, 40, 4)),
        3_900,
    ]
    assert len(restarted.keeper.history[("t", 1)]) == 2
    a = running.judge(answer(40), False, None).result
    b = restarted.judge(answer(40), False, None).result
    assert b.rows == a.rows
    slow = next(r for r in a.rows if r.group == "slow")
    assert slow.lag_seconds is not None and not slow.lag_seconds_at_least
    assert abs(slow.lag_seconds - (600 - 150.15)) < 1e-6  # offset 1,000 written at 150.15 s


def test_what_the_child_writes_to_its_standard_output_does_not_reach_the_replies(
    tmp_path: Path,
) -> None:
    """Native code writes to descriptor 1 itself, past ``sys.stdout``: the bytes go to the
    error stream and the reply after them reads whole."""
    import os
    import pickle
    import subprocess
    import sys

    child_code = (
        "import os\n"
        "from groupwatch.spark import lag_judge, lag_process\n"
        "def stray(self):\n"
        "    os.write(1, b'5 bytes written to descriptor 1\\n')\n"
        "    print('and a print')\n"
        "    return {'t': [0]}\n"
        "lag_judge.LagJudge.wanted = stray\n"
        "lag_process.main()\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.Popen(
        [sys.executable, "-c", child_code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    pickle.dump(_config(tmp_path), child.stdin)
    for _ in range(2):
        pickle.dump(("wanted", ()), child.stdin)
        child.stdin.flush()
        assert pickle.load(child.stdout) == (True, {"t": [0]})
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0
    assert err.count(b"5 bytes written to descriptor 1") == 2
    assert err.count(b"and a print") == 2
