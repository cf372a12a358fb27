"""A kill after many batches: the job killed hard once Spark has purged the oldest batches of
its checkpoint, upkeep has compacted and checkpointed the tables and state maintenance has
trimmed the saved state, then restarted, ends with the tables of a run never killed.

What a job that has run for months restarts from is not what a job of a dozen batches does:
Spark keeps the offsets and commits of its last ``spark.sql.streaming.minBatchesToRetain``
batches only (100 by default), and the tables hold upkeep's compactions and checkpoints and
state maintenance's trims rather than one commit per batch. Reaching 100 batches takes more
input than the scenario library holds, so the runs keep their last few batches instead
(``crash.RETAIN``), on a mirror of few partitions read a few records a batch: the kill lands in
a batch whose first predecessors are gone from the checkpoint, which the test checks.

The runs are those of ``tests/integration/crash.py`` (the fixture ``crash_runs``), shared with
test_crash_safety: that test checks the killed run's early kills, this one its late kill. The
random seed is printed; set GROUPWATCH_CRASH_SEED to replay a run.
"""

from __future__ import annotations

import pytest

from tests.integration.crash import (
    KILL_BEFORE_END,
    PARTITIONS,
    PER_TRIGGER,
    RETAIN,
    CrashRuns,
    assert_same_tables,
    batch_ids,
    writers,
)

pytestmark = [pytest.mark.broker, pytest.mark.spark]


# Two job runs shared with test_crash_safety (its comment).
@pytest.mark.timeout(3600)
def test_a_kill_after_the_checkpoint_dropped_its_first_batches_equals_a_clean_run(
    crash_runs: CrashRuns,
) -> None:
    runs = crash_runs
    print(f"GROUPWATCH_CRASH_SEED={runs.seed}")
    # Spark's rate limit gives every partition with records at least one a batch.
    assert runs.total >= runs.records // (PER_TRIGGER + PARTITIONS), (
        f"{runs.total} batches for {runs.records} records"
    )
    assert runs.total - KILL_BEFORE_END > 4 * RETAIN, (
        f"too few batches to outlive the checkpoint: {runs.total}"
    )
    assert runs.clean_batches[0] > 0, f"Spark kept every batch: {runs.clean_batches}"

    late = [k for k in runs.kills if k.late]
    assert len(late) == 1, runs.kills
    kill = late[0]
    assert kill.drawn >= runs.total - KILL_BEFORE_END - RETAIN, kill
    # What the test is about: the restart cannot go back to the first batches, and the tables
    # it resumes on are those upkeep has worked on.
    assert kill.kept[0] > 0, kill.kept
    assert any("OPTIMIZE" in ops for ops in kill.upkept.values()), kill.upkept

    assert batch_ids(runs.crashed)[-1] + 1 == runs.total
    assert writers(runs.crashed) == {"Apache-Spark", "delta-rs"}
    assert_same_tables(runs.clean, runs.crashed)
