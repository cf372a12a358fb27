"""docs/job.md's SASL_SSL (SCRAM-SHA-512) recipe against a broker that speaks it.

The broker gets a SASL_SSL listener (TLS keys made by keytool at test time, a SCRAM user in
its KRaft metadata). The job runs with the recipe as the documentation prints it: the TOML
block as its configuration file, with only the site's values put in (the servers, the
truststore's path), and the JAAS line exported by the documented ``export`` command with the
user's password put in; the job reads ``__consumer_offsets`` through that listener and writes
its tables. With a wrong password it stops with one line and exit code 1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from groupwatch_dev import SHORT_LIVED_JVM
from groupwatch_dev.broker import LocalBroker, SaslSsl

pytestmark = [pytest.mark.broker, pytest.mark.spark]

DOC = Path(__file__).resolve().parents[2] / "docs" / "job.md"
SECTION = "## Kafka client settings and secrets"
USER = "gw"  # the user the recipe names
GROUP = "sasl-recipe-group"
TOPIC = "sasl-recipe-orders"
CHECK_TIMEOUT = 60


def recipe() -> tuple[str, str]:
    """The recipe's TOML block and its ``export`` line, as docs/job.md prints them."""
    text = DOC.read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    toml = re.search(r"```toml\n(.*?)```", section, re.S)
    bash = re.search(r"```bash\n(.*?)```", section, re.S)
    assert toml and bash, f"{DOC}: the SASL_SSL recipe has a toml and a bash block"
    return toml.group(1), bash.group(1).strip()


def _site(text: str, old: str, new: str) -> str:
    """Put a site's value in for the recipe's example value, which must appear exactly once."""
    assert text.count(old) == 1, f"the recipe should hold {old!r} once:\n{text}"
    return text.replace(old, new)


@pytest.fixture(scope="module")
def sasl_broker() -> Iterator[tuple[LocalBroker, SaslSsl, str]]:
    """A broker of this module's own with a SASL_SSL listener and the user ``gw``."""
    password = uuid.uuid4().hex
    local = LocalBroker(
        f"pytest-sasl-{os.getpid()}", scram_users={USER: password}, jvm_options=SHORT_LIVED_JVM
    )
    try:
        local.start(fresh=True)
        sasl = local.sasl_ssl()
        assert sasl is not None
        yield local, sasl, password
    finally:
        local.stop()
        shutil.rmtree(local.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def committed_group(sasl_broker: tuple[LocalBroker, SaslSsl, str]) -> str:
    """A consumer group that joined and committed (over the PLAINTEXT listener), so that
    ``__consumer_offsets`` exists and holds its records."""
    from kafka import KafkaConsumer

    from groupwatch_dev.demo.traffic import create_topic, produce

    local, _, _ = sasl_broker
    state = local.running()
    assert state is not None
    create_topic(state.bootstrap, TOPIC, 2)
    produce(state.bootstrap, TOPIC, [(None, b"x%d" % i) for i in range(10)])
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=state.bootstrap,
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 10:
            assert time.monotonic() < deadline, "the consumer did not read the topic"
            seen += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        consumer.commit()
    finally:
        consumer.close()
    return GROUP


def _run(
    sasl: SaslSsl, password: str, root: Path, *, timeout: float = 1200
) -> subprocess.CompletedProcess[str]:
    toml, export = recipe()
    conf = root / "sasl.toml"
    root.mkdir(parents=True, exist_ok=True)
    toml = _site(toml, '"broker-1:9093,broker-2:9093"', f'"{sasl.bootstrap}"')
    conf.write_text(_site(toml, '"/etc/kafka/truststore.jks"', f'"{sasl.truststore}"'))
    export = _site(export, r"password=\"...\"", rf"password=\"{password}\"")
    exe = Path(sys.executable).parent / "groupwatch"
    settings = [
        f"delta.root={root / 'delta'}",
        f"checkpoint.root={root / 'checkpoints'}",
        f"source.check_timeout_seconds={CHECK_TIMEOUT}",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[2]",
        "spark.shuffle_partitions=2",
    ]
    args = " ".join(f"--set '{s}'" for s in settings)
    script = f"{export}\nexec {exe} run --once --conf {conf} {args}\n"
    # The secret comes from the environment the documented `export` makes, nothing else.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPWATCH_SOURCE_")}
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_recipe_reads_consumer_offsets_over_sasl_ssl(
    sasl_broker: tuple[LocalBroker, SaslSsl, str], committed_group: str, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    _, sasl, password = sasl_broker
    proc = _run(sasl, password, tmp_path)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert f"from {sasl.bootstrap}" in output, output[-4000:]
    snapshots = DeltaTable(str(tmp_path / "delta" / "group_snapshots")).to_pyarrow_table()
    assert committed_group in set(snapshots.column("group").to_pylist()), output[-4000:]
    # The password never reaches the log.
    assert password not in output


def test_wrong_password_is_one_line_and_exit_1(
    sasl_broker: tuple[LocalBroker, SaslSsl, str], committed_group: str, tmp_path: Path
) -> None:
    _, sasl, password = sasl_broker
    proc = _run(sasl, password + "-wrong", tmp_path, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-4000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1, output[-4000:]
    assert f"source.options: {sasl.bootstrap} answered but refused the connection" in errors[0]
    assert "SaslAuthenticationException" in errors[0]
    assert "sasl.jaas.config" in errors[0]
    assert "Traceback" not in output, output[-4000:]
    assert not (tmp_path / "delta" / "group_snapshots").exists()
    # A refusal ends the check at once, not after its whole wait (source.check_timeout_seconds).
    checking = next(line for line in output.splitlines() if "INFO groupwatch.job: checking" in line)
    assert _logged_at(errors[0]) - _logged_at(checking) < CHECK_TIMEOUT / 2, output[-4000:]


def _logged_at(line: str) -> float:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
