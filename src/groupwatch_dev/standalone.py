"""A Spark standalone cluster on this machine: a master and its workers, started with
PySpark's own ``spark-class``, for the cluster test and the cluster benchmark.

Each daemon runs in its own process group (an executor is a child of its worker, so killing
the group ends it too).  The workers get only the environment given here: nothing of the
caller's points them at groupwatch, so a job must ship it (``spark-submit --py-files``) or
name a worker Python that has it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from groupwatch_dev import SHORT_LIVED_JVM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spark_class() -> Path:
    """PySpark's ``bin/spark-class``, found without importing PySpark (tooling stays Spark-free)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyspark is not installed: run scripts/setup")
    return Path(next(iter(spec.submodule_search_locations))) / "bin" / "spark-class"


class Cluster:
    """A standalone master and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    def __init__(
        self,
        work: Path,
        worker_python: Path,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
    ) -> None:
        self.work = work
        self.workers, self.cores, self.memory = workers, cores, memory
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            # The master and the workers live as long as a test or a demo run.
            "SPARK_DAEMON_JAVA_OPTS": " ".join(SHORT_LIVED_JVM),
            # Nothing of the caller's own environment points a worker at groupwatch.
            "PYTHONPATH": "",
            "PATH": f"{worker_python.parent}:{os.environ['PATH']}",
        }
        self.env.pop("PYSPARK_PYTHON", None)
        self.env.pop("VIRTUAL_ENV", None)

    def _start(self, name: str, *args: str) -> None:
        log = (self.work / f"{name}.log").open("wb")
        self.procs.append(
            subprocess.Popen(
                [str(spark_class()), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.work,
                start_new_session=True,
            )
        )

    def start(self, timeout: float = 120.0) -> None:
        """Start the master and the workers; return once every worker has registered."""
        self.work.mkdir(parents=True, exist_ok=True)
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui)),
        )
        for n in range(self.workers):
            folder = self.work / f"worker-{n}"
            folder.mkdir()
            self._start(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory),
                *("--webui-port", str(free_port()), "--work-dir", str(folder), self.url),
            )
        deadline = time.monotonic() + timeout
        while self.alive_workers() < self.workers:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a cluster daemon exited\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the workers did not register\n{self.logs()}")
            time.sleep(0.5)

    def state(self) -> dict[str, Any]:
        """The master's view (its web UI's JSON): workers, active and completed apps."""
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=5) as resp:
            state: dict[str, Any] = json.load(resp)
            return state

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state()["workers"] if w["state"] == "ALIVE")
        except OSError:
            return 0

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
            for p in sorted(self.work.glob("*.log"))
        )

    def stop(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def leftovers(self) -> list[int]:
        """Process groups of the cluster with a process still alive (executors included)."""
        alive = []
        for proc in self.procs:
            deadline = time.monotonic() + 10
            while True:
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                if time.monotonic() > deadline:
                    alive.append(proc.pid)
                    break
                time.sleep(0.2)
        return alive
