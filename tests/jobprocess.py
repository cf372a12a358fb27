"""A job (``groupwatch run``) as a process of the test's: started in a process group of its own,
so that one ``killpg`` reaches the driver's JVM and its Python workers too (the crash tests'
SIGKILL, a run that outlived its bound), its output appended to one log across restarts."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest


def start(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``cmd`` started, its output appended to ``log`` (``env``: its whole environment)."""
    return subprocess.Popen(
        cmd, stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True, env=env
    )


def wait(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> int:
    """Its exit code; past ``timeout`` s its whole group is killed and the test fails with the
    log's end."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the job did not finish in {timeout:g}s:\n{log.read_text()[-4000:]}")


def finish(proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Waits for it (as :func:`wait`) and requires a clean exit."""
    code = wait(proc, log, timeout)
    assert code == 0, log.read_text()[-4000:]
