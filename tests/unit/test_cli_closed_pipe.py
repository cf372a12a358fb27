"""Every command's output into a reader that has gone (``| head``) ends quietly.

Each command runs as a real process whose standard output is a pipe with its read end already
closed, so its first write fails exactly as it does under ``groupwatch config | head`` once head
has exited.  Quiet means exit 0 or 141 (what a shell reports for SIGPIPE) and no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "tests" / "vectors" / "captured" / "consumer.jsonl"


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    group = tmp_path / "group.json"
    group.write_text(
        json.dumps(
            {
                "protocol": "sticky",
                "partitions_per_topic": {"t0": 40},
                "members": [{"member_id": f"C{i}", "topics": ["t0"]} for i in range(4)],
            }
        ),
        encoding="utf-8",
    )
    return {
        "help": ["--help"],
        "config": ["config"],
        "decode": ["decode", str(CAPTURED)],
        "analyze": ["analyze", str(CAPTURED)],
        "assign": ["assign", "--input", str(group)],
    }


def _into_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        return subprocess.run(
            [sys.executable, "-m", "groupwatch.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


# ``groupwatch lag`` goes through the same entry point, but is left out here: delta-rs's
# ``to_pyarrow_table`` makes about every other process abort at exit ("terminate called without an
# active exception", delta-io/delta-rs#2184) whatever its output is written to.
@pytest.mark.parametrize("name", ["help", "config", "decode", "analyze", "assign"])
def test_a_command_into_a_closed_pipe_ends_quietly(name: str, tmp_path: Path) -> None:
    proc = _into_closed_pipe(_commands(tmp_path)[name])
    assert proc.returncode in (0, 141), (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "BrokenPipeError" not in proc.stderr, proc.stderr
