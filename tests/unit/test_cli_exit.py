"""The command's own status is the process's: a command that read a Delta table through a pyarrow
dataset (``groupwatch lag``) once aborted while Python finalized (exit 134) after printing
everything, so a script could never trust its status."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from tests.dashboard.lag_scenario import partition, write_lag


def test_lag_exits_with_its_own_status_every_time(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    write_lag(
        tmp_path,
        [partition("g", "t", p, 5, 10, 3.0, "ok", now) for p in range(2)],
    )
    command = [sys.executable, "-m", "groupwatch.cli", "lag", "--json"]
    for _ in range(3):  # the abort came at most runs, not all: one run proves little
        done = subprocess.run(
            [*command, "--set", f"delta.root={tmp_path}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert [(r["group"], r["partition"]) for r in rows] == [("g", 0), ("g", 1)]
    missing = subprocess.run(
        [*command, "--set", f"delta.root={tmp_path / 'none'}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "no partition_lag rows" in missing.stderr
