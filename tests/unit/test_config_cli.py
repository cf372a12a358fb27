"""Every subcommand that reads the configuration takes it the same way: the same ``--conf``,
``--set`` and ``--verbose``, and a bad key or a missing file is one line on stderr and exit 2,
before any work starts."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from groupwatch import cli, config_cli

#: The subcommands that read the configuration.
READERS = ("run", "config", "dashboard", "notify")


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither Spark nor a web server may start: every case here must stop before."""
    import waitress

    import groupwatch.spark.session as session

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started although the configuration was wrong")

    monkeypatch.setattr(session, "build_session", refuse)
    monkeypatch.setattr(waitress, "serve", refuse)


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = cli.main(list(args))
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("command", READERS)
def test_one_definition_of_the_configuration_arguments(command: str) -> None:
    reference = argparse.ArgumentParser()
    config_cli.add_arguments(reference)
    parser, _ = cli._build_parser([command])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = {a.dest: a for a in sub.choices[command]._actions}
    for expected in reference._actions:
        if expected.dest == "help":
            continue
        got = actions[expected.dest]
        assert (got.option_strings, got.default, got.help) == (
            expected.option_strings,
            expected.default,
            expected.help,
        ), (command, expected.dest)


@pytest.mark.parametrize("command", READERS)
def test_unknown_key_is_one_line_and_exit_2(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _main(capsys, command, "--set", "bad.key=1")
    assert code == 2
    assert len(err) == 1 and err[0].startswith(f"groupwatch {command}: --set bad.key: unknown")


@pytest.mark.parametrize("command", READERS)
def test_missing_conf_file_is_one_line_and_exit_2(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nope.toml"
    code, err = _main(capsys, command, "--conf", str(missing))
    assert code == 2
    assert err == [f"groupwatch {command}: configuration file {missing} does not exist"]


def test_notify_takes_its_rules_from_the_configuration(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.toml"
    code, err = _main(capsys, "notify", "--once", "--set", f"alerts.rules={missing}")
    assert (code, err) == (2, [f"groupwatch notify: alerts.rules: {missing} does not exist"])
    code, err = _main(capsys, "notify", "--once", "--set", "alerts.rules=")
    assert code == 2
    assert err == ["groupwatch notify: alerts.rules is empty: there are no alert rules to evaluate"]


def test_relative_missing_file_says_where_it_was_looked_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _main(capsys, "notify", "--once", "--rules", "missing.toml")
    assert code == 2
    assert err == [
        f"groupwatch notify: --rules: missing.toml does not exist (relative to {tmp_path})"
    ]


def test_dashboard_refuses_a_remote_table_root(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _main(capsys, "dashboard", "--set", "delta.root=s3a://bucket/tables")
    assert code == 2 and len(err) == 1
    assert err[0].startswith("groupwatch dashboard: delta.root: s3a://bucket/tables: ")


def test_a_real_process_prints_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "groupwatch.cli", "dashboard", "--set", "bad.key=1"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def logger_levels() -> Iterator[None]:
    import logging

    names = ("groupwatch", *config_cli.THIRD_PARTY)
    saved = {n: logging.getLogger(n).level for n in names}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.usefixtures("logger_levels")
@pytest.mark.parametrize("verbose", [False, True])
def test_third_party_loggers_are_quiet_unless_verbose(verbose: bool) -> None:
    import logging

    config_cli.configure_logging(verbose)
    for name in ("great_expectations._docs_decorators", "py4j.clientserver", "kafka.conn"):
        assert logging.getLogger(name).isEnabledFor(logging.INFO) is verbose, name
        assert logging.getLogger(name).isEnabledFor(logging.WARNING)
    assert logging.getLogger("groupwatch.job").isEnabledFor(logging.INFO)


@pytest.mark.parametrize("verbose", [False, True])
def test_a_library_that_sets_its_own_level_stays_quiet(verbose: bool) -> None:
    # Great Expectations sets one of its loggers to INFO when that module is imported.
    script = (
        "import logging\n"
        "from groupwatch import config_cli\n"
        f"config_cli.configure_logging({verbose})\n"
        "noisy = logging.getLogger('great_expectations.data_context.types.base')\n"
        "noisy.setLevel(logging.INFO)\n"
        "noisy.info('library detail')\n"
        "noisy.warning('library warning')\n"
        "logging.getLogger('groupwatch.job').info('our line')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert "our line" in proc.stderr and "library warning" in proc.stderr
    assert ("library detail" in proc.stderr) is verbose
