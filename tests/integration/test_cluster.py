"""The job on a real Spark standalone cluster whose workers do not have groupwatch.

A master and two workers are started with ``spark-class``; the workers' executors run the
Python of ``.groupwatch/worker-python`` (pyarrow and pandas only). The README's cluster recipe
is taken from the README itself and run as it stands, over the scenario library in a mirror
topic, with the tables at ``file://`` URIs. Every table must equal the tables of a ``local[*]``
run of ``groupwatch run --once`` over the same records.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from groupwatch import paths
from groupwatch.tables import POLLED_TABLES, TABLES
from groupwatch_dev.demo.traffic import create_topic, replay
from groupwatch_dev.scenarios.builder import OFFSETS_PARTITIONS, load, raw_records, scenario_files
from groupwatch_dev.standalone import Cluster
from tests.integration.test_job_scenarios import namespaced

pytestmark = [pytest.mark.broker, pytest.mark.spark]

ROOT = Path(__file__).resolve().parents[2]
MIRROR = "cluster-mirror"
#: Columns holding the wall-clock time of the write: the only ones two runs may differ in.
WALL_CLOCK = {"detected_at", "quarantined_at", "validated_at"}
TIMEOUT = 600.0
WORKERS = 2


def readme_recipe() -> str:
    """The shell block of the README's cluster section, verbatim."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## On a cluster", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the README's cluster section should hold exactly one command block"
    return blocks[0]


def _toml(settings: dict[str, dict[str, Any]]) -> str:
    lines = []
    for section, table in settings.items():
        lines.append(f"[{section}]")
        for key, value in table.items():
            if isinstance(value, dict):
                inner = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items())
                lines.append(f"{key} = {{ {inner} }}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def _config(
    broker: str, counts: dict[str, int], delta: str, checkpoints: str, master: str = "local[*]"
) -> str:
    return _toml(
        {
            "source": {"bootstrap_servers": broker, "topic": MIRROR},
            "delta": {"root": delta},
            "checkpoint": {"root": checkpoints},
            "validation": {"every_n_batches": 1},
            # One batch each: maintenance would only rewrite the state both runs wrote.
            "job": {"state_maintenance_every_n_batches": 0},
            "metrics": {"port": 0},
            "alerts": {"rules": ""},
            "spark": {"shuffle_partitions": 2, "master": master},
            "detect": {"partitions": {t: str(n) for t, n in counts.items()}},
        }
    )


@pytest.fixture(scope="module")
def mirror(broker: str) -> dict[str, int]:
    docs = [namespaced(load(p), f"{p.stem}.") for p in scenario_files()]
    create_topic(broker, MIRROR, OFFSETS_PARTITIONS)
    for doc in docs:
        replay(broker, MIRROR, raw_records(doc))
    return {t: n for doc in docs for t, n in (doc.get("partitions") or {}).items()}


@pytest.fixture
def worker_python(tmp_path: Path) -> Path:
    python = paths.home() / "worker-python" / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run scripts/setup")
    # The point of the test: the workers' Python cannot import groupwatch by itself.
    probe = subprocess.run(
        [str(python), "-c", "import groupwatch"],
        capture_output=True,
        env={"PATH": os.environ["PATH"]},
        cwd=tmp_path,
        check=False,
    )
    assert probe.returncode != 0, "the worker Python must not have groupwatch installed"
    return python


def _start(cmd: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=cwd,
        start_new_session=True,
    )  # fmt: skip


def _finish(proc: subprocess.Popen[bytes], log: Path) -> None:
    try:
        code = proc.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert code == 0, f"{proc.args!r} exited {code}:\n" + log.read_text(errors="replace")[-6000:]


def _table(root: Path, name: str) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(root / name)).to_pyarrow_table().to_pylist()
    for row in rows:
        for column in WALL_CLOCK & row.keys():
            row.pop(column)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=repr))


def test_readme_recipe_on_a_standalone_cluster_equals_a_local_run(
    broker: str, mirror: dict[str, int], worker_python: Path, tmp_path: Path
) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    local_conf, remote_conf = tmp_path / "local.toml", tmp_path / "remote.toml"
    local_conf.write_text(_config(broker, mirror, str(local / "delta"), str(local / "checkpoints")))
    remote_conf.write_text(
        _config(broker, mirror, (remote / "delta").as_uri(), (remote / "checkpoints").as_uri())
    )

    exe = Path(sys.executable).parent / "groupwatch"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_PYTHON", None)
    submit_env = {
        **env,
        "SPARK_MASTER": "",  # set once the master runs
        "WORKER_PYTHON": "python",  # found on the workers' PATH: their own Python
        "GROUPWATCH_CONF": str(remote_conf),
    }
    cluster = Cluster(tmp_path / "cluster", worker_python, workers=WORKERS)
    started = time.monotonic()
    # The local run, the cluster's start-up and the cluster run overlap: each spends much of
    # its time waiting (JVM start-up, scheduling, Delta commits), not computing.
    local_log, submit_log = tmp_path / "local.log", tmp_path / "submit.log"
    local_run = _start([str(exe), "run", "--once", "--conf", str(local_conf)], local_log, env, ROOT)
    submit: subprocess.Popen[bytes] | None = None
    try:
        try:
            cluster.start()
        except RuntimeError as exc:
            pytest.fail(str(exc))
        print(f"cluster up: {time.monotonic() - started:.0f} s")
        submit_env["SPARK_MASTER"] = cluster.url
        recipe = ["bash", "-euo", "pipefail", "-c", readme_recipe()]
        submit = _start(recipe, submit_log, submit_env, ROOT)
        _finish(local_run, local_log)
        print(f"local[*] run done: {time.monotonic() - started:.0f} s")
        _finish(submit, submit_log)
        print(f"cluster run done: {time.monotonic() - started:.0f} s")
        state = cluster.state()
    finally:
        for proc in (local_run, submit):
            if proc is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        cluster.stop()

    assert cluster.leftovers() == [], "no master, worker or executor may outlive the test"
    # The work really ran on both workers: each launched an executor for the application.
    apps = state["completedapps"] + state["activeapps"]
    assert len(apps) == 1, apps
    for n in range(WORKERS):
        stderr = list((cluster.work / f"worker-{n}").glob("app-*/*/stderr"))
        assert stderr, f"worker {n} ran no executor\n" + cluster.logs()
        assert "ModuleNotFoundError" not in stderr[0].read_text(errors="replace")

    for name in set(TABLES) - set(POLLED_TABLES):
        expected, actual = _table(local / "delta", name), _table(remote / "delta", name)
        assert actual == expected, name
    assert _table(local / "delta", "findings"), "the input should have produced findings"
    assert _table(local / "delta", "quarantine"), "the input should have produced quarantine"
