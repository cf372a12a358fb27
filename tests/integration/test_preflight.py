"""Before its query starts, the job checks that the bootstrap servers answer and the topic
exists, and otherwise stops with one line naming the key to fix, without a flood of Kafka
client warnings or third-party INFO lines."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from groupwatch import config
from groupwatch.spark.preflight import SourceUnreachable, check_source

pytestmark = [pytest.mark.broker, pytest.mark.spark]


def test_unreachable_bootstrap_exits_1_with_one_line(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "groupwatch"
    settings = [
        "source.bootstrap_servers=127.0.0.1:1",
        "source.check_timeout_seconds=5",
        f"delta.root={tmp_path / 'delta'}",
        f"checkpoint.root={tmp_path / 'checkpoints'}",
        "metrics.port=0",
        "alerts.rules=",
        "spark.master=local[1]",
    ]
    started = time.monotonic()
    proc = subprocess.run(
        [str(exe), "run", "--once", *[a for s in settings for a in ("--set", s)]],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output[-4000:]
    errors = [line for line in output.splitlines() if " ERROR " in line]
    assert len(errors) == 1, output[-4000:]
    assert "source.bootstrap_servers: no answer from 127.0.0.1:1 within 5 s" in errors[0]
    assert "source.check_timeout_seconds" in errors[0]
    # The Kafka client's reconnect warnings and Great Expectations' start-up INFO are quiet.
    assert "NetworkClient" not in output, output[-4000:]
    assert "great_expectations" not in output, output[-4000:]
    assert time.monotonic() - started < 120  # Spark's start-up plus the 5 s, not forever


def test_missing_topic_names_the_key(spark, broker: str) -> None:  # type: ignore[no-untyped-def]
    base = [f"source.bootstrap_servers={broker}", "source.check_timeout_seconds=20"]
    cfg = config.load(None, env={}, overrides=[*base, "source.topic=no-such-topic"])
    with pytest.raises(SourceUnreachable) as exc:
        check_source(spark, cfg)
    assert str(exc.value) == f"source.topic: {broker} has no topic 'no-such-topic'"
    # An existing topic passes.
    from groupwatch_dev.demo.traffic import create_topic

    create_topic(broker, "preflight-present", 1)
    present = config.load(None, env={}, overrides=[*base, "source.topic=preflight-present"])
    check_source(spark, present)
    # A list, as Spark's subscribe option takes it: every topic must exist.
    both = config.load(
        None, env={}, overrides=[*base, "source.topic=preflight-present, no-such-topic"]
    )
    with pytest.raises(SourceUnreachable) as exc:
        check_source(spark, both)
    assert str(exc.value) == f"source.topic: {broker} has no topic 'no-such-topic'"


def test_check_can_be_turned_off(spark) -> None:  # type: ignore[no-untyped-def]
    cfg = config.load(
        None,
        env={},
        overrides=["source.bootstrap_servers=127.0.0.1:1", "source.check_timeout_seconds=0"],
    )
    check_source(spark, cfg)  # no Admin client at all: returns at once
