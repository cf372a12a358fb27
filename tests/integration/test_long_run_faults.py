"""Faults a job running for months meets, each compared with an uninterrupted run, table by
table: no finding, snapshot, member row, ownership interval, quarantine row or offsets row lost
or duplicated.

- The disk holding the tables and the checkpoint fills up mid-stream: the job ends with one
  clear line and exit code 1; once space is freed, a restart continues from the checkpoint.

The comparison is of the tables that hold what the job found: the job's state and validation
rows are per batch, and a failed run may cut the input into other batches than the
uninterrupted one (test_crash_safety compares every table over the same batches).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from tests import jobprocess
from tests.integration.crash import _batches_started, _table
from tests.integration.test_job_scenarios import namespaced

# Slow: two job runs on a filled and a freed tmpfs take minutes even on a quiet machine, and the
# default run's time budget is spent elsewhere; `scripts/test -m slow` runs it.
pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

MIRROR = "faults-mirror"
RUN_TIMEOUT = 1200.0
#: The tables of what the job found; the same whatever the batches the input was cut into.
FOUND = (
    "group_snapshots",
    "member_assignments",
    "partition_ownership",
    "findings",
    "quarantine",
    "group_offsets",
)


@pytest.fixture(scope="module")
def mirror(broker: str) -> dict[str, int]:
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    for doc in docs:
        replay(broker, MIRROR, raw_records(doc))
    return {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}


def _command(
    broker: str, root: Path, counts: dict[str, int], per_batch: int, *extra: str
) -> list[str]:
    exe = Path(sys.executable).parent / "groupwatch"
    settings = [
        f"source.bootstrap_servers={broker}",
        f"source.topic={MIRROR}",
        f"source.max_offsets_per_trigger={per_batch}",
        f"delta.root={root / 'delta'}",
        f"checkpoint.root={root / 'checkpoints'}",
        "validation.every_n_batches=3",
        "job.state_maintenance_every_n_batches=4",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
        f"detect.partitions={json.dumps(counts)}",
        *extra,
    ]
    return [str(exe), "run", "--once", *[a for s in settings for a in ("--set", s)]]


def _wait_for_batch(root: Path, batch: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the job has begun ``batch`` (Spark logs a batch's offsets before it runs it)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while _batches_started(root) <= batch:
        assert proc.poll() is None, f"the job ended early:\n{log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, log.read_text()[-4000:]
        time.sleep(0.1)


def _found(root: Path, name: str) -> list[dict[str, Any]]:
    rows = _table(root, name)
    # A validation's quarantine rows belong to the batch it validated, like validation_results.
    return [r for r in rows if r.get("stage") != "validate"]


def same_tables(clean: Path, other: Path) -> None:
    for name in FOUND:
        expected, actual = _found(clean, name), _found(other, name)
        assert len(actual) == len(expected), name
        assert actual == expected, name


@pytest.fixture(scope="module")
def clean(broker: str, mirror: dict[str, int], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted run: the whole mirror in one batch."""
    root = tmp_path_factory.mktemp("clean")
    log = root / "job.log"
    code = jobprocess.wait(
        jobprocess.start(_command(broker, root, mirror, 0), log), log, RUN_TIMEOUT
    )
    assert code == 0, log.read_text()[-4000:]
    assert _table(root, "findings"), "the input should have produced findings"
    assert _table(root, "quarantine"), "the input should have produced quarantine rows"
    return root


@contextlib.contextmanager
def _small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only); skips the test where mounting is
    not permitted, saying so."""
    where.mkdir(parents=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(path: Path) -> None:
    """Take every free block of the file system that holds ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 1 << 12, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)


def test_disk_full_ends_the_job_and_a_restart_continues(
    broker: str, mirror: dict[str, int], clean: Path, tmp_path: Path
) -> None:
    with _small_disk(tmp_path / "disk", "64m") as disk:
        cmd = _command(broker, disk, mirror, 5)
        log = tmp_path / "job.log"
        proc = jobprocess.start(cmd, log)
        # The mirror is read in a few batches (Spark's rate limit gives every partition with
        # records at least one a batch): fill the disk once the first has begun.
        _wait_for_batch(disk, 0, proc, log)
        filler = disk / "filler"
        _fill(filler)
        code = jobprocess.wait(proc, log, RUN_TIMEOUT)
        text = log.read_text()
        assert code == 1, text[-4000:]
        # Spark's and py4j's own log lines say what failed where, with their stack traces;
        # the job's line says what to do, once, and last.
        ours = [line for line in text.splitlines() if "ERROR groupwatch.job:" in line]
        assert len(ours) == 1, text[-4000:]
        assert "the job stopped: no space left on a disk it writes" in ours[0], ours
        assert f"delta.root ({disk / 'delta'})" in ours[0], ours
        assert "resumes from its checkpoint" in ours[0], ours
        errors = [line for line in text.splitlines() if " ERROR " in line]
        assert errors[-1] == ours[0], errors

        filler.unlink()
        assert jobprocess.wait(jobprocess.start(cmd, log), log, RUN_TIMEOUT) == 0, log.read_text()[
            -4000:
        ]
        same_tables(clean, disk)
