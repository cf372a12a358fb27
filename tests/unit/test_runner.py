"""The job's runner refuses a wrong alert-rules or expectation-suites path before Spark starts."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from groupwatch import config
from groupwatch.job.runner import run_job


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Spark fails the test: the checks must come first."""
    import groupwatch.spark.session as session

    def refuse(cfg: config.Config) -> None:
        raise AssertionError("Spark was started before the configured files were checked")

    monkeypatch.setattr(session, "build_session", refuse)


@pytest.mark.usefixtures("no_spark")
def test_missing_alert_rules_fail_before_spark_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "alerts.toml"
    cfg = config.load(None, env={}, overrides=[f"alerts.rules={missing}", "metrics.port=0"])
    with caplog.at_level(logging.ERROR, logger="groupwatch.job"):
        assert run_job(cfg, once=True) == 1
    assert f"alerts.rules: {missing} does not exist" in caplog.text


@pytest.mark.usefixtures("no_spark")
def test_missing_expectation_suites_fail_before_spark_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config.load(
        None, env={}, overrides=[f"validation.suites={tmp_path}", "alerts.rules=", "metrics.port=0"]
    )
    with caplog.at_level(logging.ERROR, logger="groupwatch.job"):
        assert run_job(cfg, once=True) == 1
    assert f"validation.suites: no expectation suite (*.json) in {tmp_path}" in caplog.text
