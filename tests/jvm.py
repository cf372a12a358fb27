"""Running Kafka's own Java classes from the jars scripts/setup fetched (oracle harnesses)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from groupwatch_dev import SHORT_LIVED_JVM
from groupwatch_dev.broker import DEFAULT_KAFKA_VERSION

ROOT = Path(__file__).resolve().parents[1]
HOME = Path(os.environ.get("GROUPWATCH_HOME", ROOT / ".groupwatch"))
KAFKA_JARS = HOME / "jars" / "kafka"
HARNESS_JAR = KAFKA_JARS / "groupwatch-oracle.jar"


def kafka_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """One release's jars: the default's (jvm/kafka/pom.xml) or another's (kafka-<version>)."""
    return KAFKA_JARS if version == DEFAULT_KAFKA_VERSION else HOME / "jars" / f"kafka-{version}"


def kafka_classpath(version: str = DEFAULT_KAFKA_VERSION) -> str:
    """The classpath of one release's Kafka jars plus the project's harness jar built against
    it; skips if setup has not run."""
    harness = kafka_jars(version) / "groupwatch-oracle.jar"
    if not harness.exists():
        # Never silently green: CI runs setup first, so a missing jar there is a failure.
        if os.environ.get("CI"):
            pytest.fail(f"{harness} is missing: scripts/setup --tests did not build the harness")
        pytest.skip(f"Kafka {version} jars not fetched; run scripts/setup --tests")
    return f"{kafka_jars(version)}/*"


def java() -> str:
    # The quick lane (tests/conftest.py) starts no JVM: an unmarked oracle test fails there.
    if os.environ.get("GROUPWATCH_QUICK_LANE"):
        pytest.fail("the quick lane must not start Kafka's Java classes: mark the test oracle")
    exe = shutil.which("java")
    if exe is None:
        pytest.fail("java is not on PATH")
    return exe


def run_java(
    main_class: str,
    *args: str,
    stdin: str = "",
    timeout: float = 600,
    kafka_version: str = DEFAULT_KAFKA_VERSION,
) -> str:
    """Run one harness main class on one release's classpath and return its stdout; a non-zero
    exit fails the test."""
    proc = subprocess.run(
        [
            java(),
            *SHORT_LIVED_JVM,
            "-Xss8m",
            "-cp",
            kafka_classpath(kafka_version),
            main_class,
            *args,
        ],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"{main_class} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc.stdout
