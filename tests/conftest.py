"""Shared fixtures: a real KRaft broker and a local SparkSession, each once per test session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests must give the same verdict on every run: CI derandomizes them.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def local_broker(name: str) -> Iterator[str]:
    """A fresh single-node broker on loopback named ``name``, removed after; yields its
    bootstrap (the body of a broker fixture)."""
    from groupwatch_dev.broker import LocalBroker

    local = LocalBroker(name)
    try:
        state = local.start(fresh=True)
    except Exception as exc:  # noqa: BLE001 - report the broker's own words
        pytest.fail(f"the test broker did not start: {exc}")
    yield state.bootstrap
    local.stop()
    shutil.rmtree(local.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def broker() -> Iterator[str]:
    """A fresh single-node broker on loopback for this test session; yields its bootstrap."""
    yield from local_broker(f"pytest-{os.getpid()}")


@pytest.fixture(scope="session")
def spark_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="session")
def spark(spark_workdir: Path):  # type: ignore[no-untyped-def]
    """One local SparkSession with the project's jars; Ivy is pointed at a folder we watch."""
    from groupwatch import config
    from groupwatch.spark.session import build_session

    cfg = config.load(
        None,
        env={},
        overrides=[
            "spark.master=local[2]",
            "spark.shuffle_partitions=2",
            f'spark.conf={{"spark.jars.ivy": "{spark_workdir / "ivy"}",'
            f' "spark.sql.warehouse.dir": "{spark_workdir / "warehouse"}"}}',
        ],
    )
    session = build_session(cfg)
    yield session
    session.stop()
