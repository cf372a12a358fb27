"""Crash safety: the job killed hard (SIGKILL of its whole process group: driver, JVM, Python
workers) at random points mid-stream, restarted from its checkpoint each time, ends with
exactly the tables of a clean uninterrupted run over the same input.

The input is the whole scenario library (findings, quarantined garbage, ownership history,
offset commits, tombstones) in a mirror topic, read a few records per micro-batch so that the
kills land between and inside batches. The runs are those of ``tests/integration/crash.py``
(the fixture ``crash_runs``), shared with test_crash_after_many_batches: this test checks the
early kill, drawn at random among the first batches, at a random moment after its batch
began; that one the late kill. The random seed is printed; set GROUPWATCH_CRASH_SEED to replay
a run.

The clean run writes every table from the driver with delta-rs and holds every state text in
the driver's cache; the killed run writes a batch of few rows from the driver and a larger one
by Spark, and holds no state text (each batch reads its groups' texts by key, the keys
reloaded from the table after each restart): the comparison also holds the two writers to the
same rows, and their shared transaction ids to exactly once when a replay takes the other
writer than the first attempt.
"""

from __future__ import annotations

import pytest

from tests.integration.crash import (
    EARLY_KILLS,
    KILL_BEFORE_END,
    RETAIN,
    CrashRuns,
    assert_same_tables,
    batch_ids,
    writers,
)

pytestmark = [pytest.mark.broker, pytest.mark.spark]


# Two job runs shared with test_crash_after_many_batches (one clean, in this process; one
# killed twice and restarted to the end: three starts of the job, 15 batches and the replays of
# the two interrupted): whichever of the two tests comes first waits for them. A start costs
# most (13-15 s on a quiet machine of two cores, about a minute under a loaded CI run's other
# worker), a batch written by Spark 8-10 s, one written by delta-rs about 1 s.
@pytest.mark.timeout(3600)
def test_sigkill_mid_stream_then_restart_equals_a_clean_run(crash_runs: CrashRuns) -> None:
    runs = crash_runs
    print(f"GROUPWATCH_CRASH_SEED={runs.seed}")
    assert writers(runs.clean) == {"delta-rs"}
    assert runs.total >= 6, f"expected many small batches, got {runs.total}"
    early = [k for k in runs.kills if not k.late]
    assert len(early) == EARLY_KILLS >= 1, runs.kills
    # The first kill interrupted one of the first batches, well before the late kill's.
    assert early[0].kept[-1] < runs.total - KILL_BEFORE_END - RETAIN, runs.kills

    assert batch_ids(runs.crashed)[-1] + 1 == runs.total
    assert writers(runs.crashed) == {"Apache-Spark", "delta-rs"}
    assert_same_tables(runs.clean, runs.crashed)
