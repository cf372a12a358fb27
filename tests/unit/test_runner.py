"""``groupwatch run`` refuses a wrong alert-rules or expectation-suites path before Spark starts:
one line naming the key, exit 2 (as every configuration error of every subcommand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupwatch import cli, config


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Spark fails the test: the checks must come first."""
    import groupwatch.spark.session as session

    def refuse(cfg: config.Config) -> None:
        raise AssertionError("Spark was started before the configured files were checked")

    monkeypatch.setattr(session, "build_session", refuse)


def _run(capsys: pytest.CaptureFixture[str], *settings: str) -> tuple[int, list[str]]:
    args = ["run", "--once", *[a for s in ("metrics.port=0", *settings) for a in ("--set", s)]]
    code = cli.main(args)
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.usefixtures("no_spark")
def test_missing_alert_rules_fail_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "alerts.toml"
    code, err = _run(capsys, f"alerts.rules={missing}")
    assert code == 2
    assert err == [
        f'groupwatch run: alerts.rules: {missing} does not exist; alerts.rules="" runs without '
        "notifications"
    ]


@pytest.mark.usefixtures("no_spark")
def test_invalid_alert_rules_fail_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "alerts.toml"
    rules.write_text("[[rule]\n")
    code, err = _run(capsys, f"alerts.rules={rules}")
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"groupwatch run: alerts.rules: {rules}: not valid TOML")


@pytest.mark.usefixtures("no_spark")
def test_missing_expectation_suites_fail_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(capsys, f"validation.suites={tmp_path}", "alerts.rules=")
    assert code == 2
    assert err == [
        f"groupwatch run: validation.suites: no expectation suite (*.json) in {tmp_path}; "
        "validation.every_n_batches=0 turns validation off"
    ]
    code, err = _run(capsys, f"validation.suites={tmp_path / 'nope'}", "alerts.rules=")
    assert code == 2 and err[0].startswith(
        f"groupwatch run: validation.suites: {tmp_path / 'nope'} does not exist"
    )
